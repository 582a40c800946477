"""Where a command reads a trace from (a file, or standard input), when its
SOURCE may also be a live service's address. What it made goes out through
livetrace._outfile.write_output."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import BinaryIO, TextIO

from livetrace._cli.exits import say
from livetrace._errors import InputPathError, TraceFormatError
from livetrace._trace.model.batch import EventBatch


def open_input(path: str) -> AbstractContextManager[BinaryIO]:
    """The file at ``path``, or standard input for "-" (left open on the way
    out). Raises :class:`InputPathError` with what is wrong with the path."""
    if path == "-":
        return nullcontext(sys.stdin.buffer)
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputPathError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise InputPathError(f"{path} is a directory: give a trace file, or - for standard input") from None
    except OSError as e:
        raise InputPathError(f"cannot read {path}: {e.strerror or e}") from None


def is_file_source(source: str) -> bool:
    """Whether SOURCE names a trace file rather than a service's address:
    standard input, an existing file, or a path (a slash, or a .trace name,
    and no address scheme) that does not exist, to say so. An existing
    socket is an address (``/path`` is a unix socket's short form)."""
    if source == "-" or os.path.isfile(source):
        return True
    if os.path.exists(source):  # a unix socket, given as its bare path, is an address
        return False
    return ("/" in source or source.endswith(".trace")) and ":" not in source


def read_whole_generations(
    source: str, feed: Callable[[EventBatch], None], end_trace: Callable[[], None], err: TextIO, made: str
) -> bool:
    """Feed a trace file's batches (``end_trace`` at the gap between two
    traces of a stream) a generation at a time, and whether it was read
    whole. Of one read only in part, its whole generations are fed, as Go's
    tools read it, and err says so (``made``: what that makes of them, "the
    profile is of the generations before it"); of one with nothing whole,
    the error."""
    from livetrace._files import WholeGenerations, decode_batches, is_trace_gap

    with open_input(source) as stream:
        read = WholeGenerations(decode_batches(stream))
        try:
            for item in read:
                if isinstance(item, EventBatch):
                    feed(item)
                elif is_trace_gap(item):
                    end_trace()
        except TraceFormatError as e:
            if not read.decoded:
                raise
            say(err, f"warning: the trace is incomplete: {e}; {made}")
            return False
    return True


Unread = tuple[str, TraceFormatError, bool]  # a file, its problem, whether its whole generations were kept


def files_read_in_part(unread: list[Unread], files: int, err: TextIO, kept_in: str, alone: bool = True) -> bool:
    """Say which files were read only in part (``kept_in``: where their
    whole generations went, "its tables"), and whether none was. Where
    every file failed with nothing kept and nothing else was read
    (``alone``), the first one's problem is the error, as for one file."""
    if alone and unread and len(unread) == files and not any(kept for _, _, kept in unread):
        raise unread[0][1]
    for name, e, kept in unread:
        left = f"{kept_in} hold the generations before it" if kept else "nothing of it could be read; left out"
        say(err, f"warning: {e if str(e).startswith(name) else f'{name}: {e}'}; {left}")
    return not unread
