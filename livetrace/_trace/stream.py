"""A stream of complete traces, one after another, sans-IO: bytes in, each
trace's bytes out.

``livetrace record -o -`` of a net/http/pprof session writes its windows so,
each a complete trace that begins with its own header, and so does ``cat
a.trace b.trace``. :class:`TraceSplitter` finds where each trace begins,
without decoding it:

- in a Go 1.22+ trace, at a frame boundary (it walks the frames' headers,
  as cheap as a skip): a batch never starts with ``g``, and a header always
  does;
- in a legacy trace, whose every event would have to be read to find its
  boundaries, at the next bytes that are a whole trace header. Such bytes
  inside a trace (in a string) would cut it in two; the first part then
  ends in the middle of an event, which its decoder reports: the result is
  an error, never a silently wrong trace.

Bytes it cannot make sense of go through as they are, for the decoder to
say what is wrong with them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from livetrace._errors import TraceFormatError
from livetrace._trace.modern.wire import read_uvarint
from livetrace._trace.spec.modern import EV_END_OF_GENERATION, EV_EVENT_BATCH, EV_EXPERIMENTAL_BATCH
from livetrace._trace.version import HEADER_SIZE, TraceVersion, header_size, sniff

# A header's bytes, of a version read or not (the next trace's decoder says
# which); in a legacy trace, where the next one may begin.
_HEADER = re.compile(rb"go 1\.\d{1,3} trace\x00+|gotrace\x00")
_HEADER_START = re.compile(rb"go 1\.\d{1,3} trace\x00|gotrace\x00")
_G = ord("g")  # the first byte of every header


class NextTrace:
    """Marks the end of one trace in :meth:`TraceSplitter.feed`'s output:
    the bytes after it belong to the next trace, from its header."""

    __slots__ = ()


NEXT_TRACE = NextTrace()


class TraceSplitter:
    """Cuts a stream of traces, fed in any pieces, into each trace's bytes.

    :meth:`feed` and :meth:`close` return the bytes in order, with
    :data:`NEXT_TRACE` between two traces. The first piece of each trace
    holds its whole header (unless the stream ends first), so that
    ``open_decoder`` can be given that piece."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._version: TraceVersion | None = None  # of the trace under way, once its header is in
        self._skip = 0  # bytes of the current batch's payload still to pass
        self._opaque = False  # something that is no trace's framing came: pass the rest as it is

    def feed(self, data: bytes) -> list[bytes | NextTrace]:
        self._buf += data
        out: list[bytes | NextTrace] = []
        while True:
            pos, boundary = self._scan()
            if pos:
                out.append(bytes(self._buf[:pos]))
                del self._buf[:pos]
            if not boundary:
                return out
            out.append(NEXT_TRACE)
            self._version, self._skip = None, 0

    def close(self) -> list[bytes | NextTrace]:
        """The stream ended: what is left of the last trace."""
        rest, self._buf = bytes(self._buf), bytearray()
        return [rest] if rest else []

    def _scan(self) -> tuple[int, bool]:
        """How many bytes of buf belong to the trace under way, and whether
        the next trace begins right after them."""
        buf = self._buf
        if self._opaque:
            return len(buf), False
        pos = 0
        if self._version is None:
            size = header_size(bytes(buf[:HEADER_SIZE]))
            if len(buf) < size:
                return 0, False
            try:
                self._version = sniff(bytes(buf[:size]))
            except TraceFormatError:  # its decoder says so
                self._opaque = True
                return len(buf), False
            pos = size
        if self._version.is_legacy:
            return self._search(pos)
        return self._walk(pos)

    def _header_at(self, pos: int) -> bool | None:
        """Whether a header begins at pos; None if too little is in to tell."""
        buf = self._buf
        size = header_size(bytes(buf[pos : pos + HEADER_SIZE]))
        if len(buf) - pos < size:
            return None
        return _HEADER.fullmatch(buf, pos, pos + size) is not None

    def _walk(self, pos: int) -> tuple[int, bool]:
        """A Go 1.22+ trace: from frame to frame, to a header."""
        buf, end = self._buf, len(self._buf)
        version = self._version
        assert version is not None
        while pos < end:
            if self._skip:
                step = min(self._skip, end - pos)
                self._skip -= step
                pos += step
                continue
            kind = buf[pos]
            if kind == _G:
                header = self._header_at(pos)
                if header is None:
                    return pos, False
                if header:
                    return pos, True
            elif kind == EV_END_OF_GENERATION and version.has_end_of_generation:
                pos += 1
                continue
            if kind == EV_EVENT_BATCH or (kind == EV_EXPERIMENTAL_BATCH and version.has_experimental_batches):
                i = pos + (1 if kind == EV_EVENT_BATCH else 2)
                size = -1
                try:
                    for _ in range(4):  # generation, M, time, then the payload's size
                        size, i = read_uvarint(buf, i, end)
                        if size < 0:
                            return pos, False  # the frame's header is not all here yet
                except ValueError:
                    self._opaque = True
                    return end, False
                self._skip, pos = size, i
                continue
            self._opaque = True  # no frame starts so: the decoder says why
            return end, False
        return pos, False

    def _search(self, pos: int) -> tuple[int, bool]:
        """A legacy trace: to the next whole header."""
        buf = self._buf
        for m in _HEADER_START.finditer(buf, pos):
            header = self._header_at(m.start())
            if header is None:
                return m.start(), False
            if header:
                return m.start(), True
        # A header may begin in the last bytes, the rest to come.
        return max(pos, len(buf) - (HEADER_SIZE - 1)), False


def split_traces(data: Iterable[bytes]) -> Iterator[bytes | NextTrace]:
    """A stream's pieces, with :data:`NEXT_TRACE` between two traces (see
    :class:`TraceSplitter`)."""
    splitter = TraceSplitter()
    for piece in data:
        yield from splitter.feed(piece)
    yield from splitter.close()
