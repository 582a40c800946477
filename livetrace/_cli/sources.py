"""Where a command reads a trace from (a file, or standard input), when its
SOURCE may also be a live service's address. What it made goes out through
livetrace._outfile.write_output."""

from __future__ import annotations

import os
import sys
from contextlib import AbstractContextManager, nullcontext
from typing import BinaryIO


def open_input(path: str) -> AbstractContextManager[BinaryIO]:
    """The file at ``path``, or standard input for "-" (left open on the way out)."""
    if path == "-":
        return nullcontext(sys.stdin.buffer)
    return open(path, "rb")


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
