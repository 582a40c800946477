"""Writing to standard output whole: a slow or non-blocking pipe never gets part of a piece."""

from __future__ import annotations

import codecs
import io
import os
import select
import stat
from typing import TextIO

from livetrace._protocol.text import terminal_text

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]  # no fcntl on Windows: None marks its absence


PIPE_SIZE = 1 << 20  # Linux's default maximum for an unprivileged process


def widen_pipe(out: TextIO) -> None:
    """A full load of events is hundreds of MB/s of JSON: with the usual
    64 KiB pipe the writer waits on the reader's every read. Ask Linux for
    a bigger one, where stdout is a pipe (best effort)."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", 1031) if fcntl else None
    try:
        fd = out.fileno()
        if set_size is not None and stat.S_ISFIFO(os.fstat(fd).st_mode):
            fcntl.fcntl(fd, set_size, PIPE_SIZE)
    except (OSError, ValueError, AttributeError):
        pass


def write_bytes(out: TextIO, pieces: list[bytes]) -> None:
    """Write every byte of the pieces, in order.

    Straight to the descriptor, and looping until each piece is all out:
    ``out.buffer`` is a raw FileIO when Python runs unbuffered
    (PYTHONUNBUFFERED, ``-u``: common in containers), whose ``write`` may
    take only part of the data (a pipe write interrupted by a signal, or a
    full pipe whose descriptor a parent made non-blocking) and says so only
    in its return value; ignoring it dropped the rest of the piece, leaving
    a line cut mid-field with the next one glued on."""
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):  # not a file: a StringIO in a test, say
        out.write(b"".join(pieces).decode())
        out.flush()
        return
    out.flush()
    if not hasattr(os, "writev"):  # Windows
        for data in pieces:
            view = memoryview(data)
            while view:
                try:
                    written = os.write(fd, view)
                except BlockingIOError:
                    wait_writable(fd)
                    continue
                view = view[written:]
        return
    # All the pieces in one system call (IOV_MAX at a time): a third less of the kernel's time
    # than a write each, on a pipe that takes hundreds of MB/s of JSON lines.
    # The pieces as they are (a view only of one a write cut): a tail writes
    # tens of thousands a second.
    views: list[bytes | memoryview] = list(filter(None, pieces))
    first = 0
    while first < len(views):
        try:
            written = os.writev(fd, views[first : first + IOV_MAX])
        except BlockingIOError:
            wait_writable(fd)
            continue
        while written:
            n = len(views[first])
            if written < n:
                views[first] = memoryview(views[first])[written:]
                break
            written -= n
            first += 1


def _iov_max() -> int:
    """The most buffers one writev takes: POSIX's least where the system does not say."""
    try:
        n = os.sysconf("SC_IOV_MAX")
    except (AttributeError, ValueError, OSError):
        return 16
    return n if n > 0 else 16


IOV_MAX = _iov_max()


def wait_writable(fd: int) -> None:
    """Block until a non-blocking descriptor takes data again."""
    if not hasattr(select, "poll"):
        select.select([], [fd], [])
        return
    poll = select.poll()
    poll.register(fd, select.POLLOUT)
    poll.poll()


class WholeWriter(io.TextIOBase):
    """Standard output as a text stream whose every write goes out whole
    (``write_bytes``), for the commands that print through a text stream
    (``decode``, ``demo``): unbuffered Python's raw stdout would drop what
    a short write left over. The commands write a generation's or a batch's
    lines at a time, so each write is one system call, or a few."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._encoding = getattr(out, "encoding", None) or "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        write_bytes(self._out, [text.encode(self._encoding, "surrogateescape")])
        return len(text)

    def fileno(self) -> int:
        return self._out.fileno()

    def write_utf8(self, data: bytes) -> None:
        """Text already encoded (UTF-8, a trace's bytes that are not UTF-8
        as they were): as it is when the stream's encoding is UTF-8."""
        if codecs.lookup(self._encoding).name == "utf-8":
            write_bytes(self._out, [data])
        else:
            self.write(data.decode("utf-8", "surrogateescape"))


class TerminalWriter(WholeWriter):
    """A ``WholeWriter`` on a terminal: a trace's strings are the traced
    service's choice, and an escape sequence among them would act on the
    operator's terminal. ``decode``'s dumps are Go's bytes for bytes into a
    file or a pipe, and escaped only here."""

    def write(self, text: str) -> int:
        super().write(terminal_text(text))
        return len(text)

    def write_utf8(self, data: bytes) -> None:
        self.write(data.decode("utf-8", "surrogateescape"))
