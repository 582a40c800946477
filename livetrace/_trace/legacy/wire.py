"""The wire layer of legacy traces (Go 1.5 to 1.21, and the pre-release
``gotrace`` streams), sans-IO: bytes in, raw events out, for any chunking of
the stream.

Every event starts with a type byte: its low 6 bits are the type, its top 2
an inline value count (3: a byte length follows). Strings (1.7+) and the
message of a user log carry bytes; nothing else does.
"""

from __future__ import annotations

from livetrace._errors import TraceFormatError, TruncatedTraceError, UnsupportedTraceVersionError
from livetrace._plural import plural
from livetrace._streambuf import StreamBuffer
from livetrace._trace.modern.wire import read_uvarint
from livetrace._trace.spec.legacy import EV_STRING, EV_USER_LOG, layout
from livetrace._trace.version import HEADER_SIZE, TraceVersion, header_size, sniff

MAX_STRING = 1_000_000

RawEvent = tuple[int, int, list[int], list[bytes]]  # offset, type, values, string arguments


class _Short(Exception):
    """The event is not all here yet."""


class LegacyReader:
    """Cuts a legacy trace, fed in any pieces, into raw events; collects the
    string table as it goes. ``version``: the format the header names,
    where the caller read it already; else the header is read here."""

    def __init__(self, version: TraceVersion | None = None) -> None:
        self._known = version
        self._in = StreamBuffer()
        self.version: TraceVersion | None = None
        self.strings: dict[int, bytes] = {}
        self._counts = b""  # the version's value counts: 0 for a type it does not have
        self._global_seq = False

    @property
    def offset(self) -> int:
        return self._in.offset

    def feed(self, data: bytes) -> list[RawEvent]:
        buf = self._in.buf
        buf += data
        out: list[RawEvent] = []
        pos, end = self._in.pos, len(buf)
        if self.version is None:
            size = header_size(bytes(buf[pos : pos + HEADER_SIZE]))
            if end - pos < size:
                return out
            ver = self._known or sniff(bytes(buf[pos : pos + size]))
            if ver.is_modern:
                raise UnsupportedTraceVersionError("a Go 1.22+ trace: decode it with the modern decoder", offset=0)
            self.version = ver
            self._counts = layout(ver)[0]
            self._global_seq = ver.has_global_seq
            pos += size
        while pos < end:
            try:
                ev, pos2 = self._event(buf, pos, end)
            except _Short:
                break
            if ev is not None:
                out.append(ev)
            pos = pos2
        self._in.consumed(pos)
        return out

    def close(self) -> None:
        left = self._in.unread
        if self.version is None:
            size = header_size(bytes(self._in.buf[self._in.pos :]))
            raise TruncatedTraceError(
                f"trace ends inside its {size}-byte header" if left else "empty trace: no header", offset=self.offset
            )
        if left:
            raise TruncatedTraceError(
                f"trace ends in the middle of an event ({plural(left, 'byte')} left over)", offset=self.offset
            )

    def _value(self, buf: bytearray, i: int, end: int, at: int) -> tuple[int, int]:
        try:
            v, j = read_uvarint(buf, i, end)
        except ValueError:
            raise TraceFormatError(f"bad value at offset 0x{self._in.base + i:x}", offset=self._in.base + at) from None
        if v < 0:
            raise _Short
        return v, j

    def _event(self, buf: bytearray, pos: int, end: int) -> tuple[RawEvent | None, int]:
        off = self._in.base + pos
        b = buf[pos]
        typ, narg, inline = b & 0x3F, (b >> 6) + 1, 4
        if self._global_seq:
            narg += 1
            inline += 1
        if not self._counts[typ]:
            raise TraceFormatError(f"unknown event type {typ} at offset 0x{off:x}", offset=off)
        i = pos + 1
        if typ == EV_STRING:
            sid, i = self._value(buf, i, end, pos)
            n, i = self._value(buf, i, end, pos)
            if sid == 0:
                raise TraceFormatError(f"string at offset {off} has invalid id 0", offset=off)
            if self.strings.get(sid):
                raise TraceFormatError(f"string at offset {off} has duplicate id {sid}", offset=off)
            if n == 0 or n > MAX_STRING:
                raise TraceFormatError(f"string at offset {off} has invalid length {n}", offset=off)
            if end - i < n:
                raise _Short
            self.strings[sid] = bytes(buf[i : i + n])
            return None, i + n
        args: list[int] = []
        if narg < inline:
            for _ in range(narg):
                v, i = self._value(buf, i, end, pos)
                args.append(v)
        else:
            length, i = self._value(buf, i, end, pos)
            start = i
            while length > i - start:
                v, i = self._value(buf, i, end, pos)
                args.append(v)
            if length != i - start:
                raise TraceFormatError(
                    f"event has wrong length at offset 0x{off:x}: want {length}, got {i - start}", offset=off
                )
        sargs: list[bytes] = []
        if typ == EV_USER_LOG:
            n, i = self._value(buf, i, end, pos)
            if n > MAX_STRING:
                raise TraceFormatError(f"string at offset {self._in.base + i} is too large (len={n})", offset=off)
            if end - i < n:
                raise _Short
            sargs.append(bytes(buf[i : i + n]))
            i += n
        return (off, typ, args, sargs), i
