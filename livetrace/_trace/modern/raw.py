"""A Go 1.22+ trace's bytes as ``go tool trace -d=wire`` reads them: one
event after another, an event batch's header being an event like any
other, whose size is printed and never used (Go's internal/trace/raw).

On a well-formed trace this is the frames' records (``wire.py``), which the
dump reads faster. Where the framing breaks (a size that does not match
its events, a cut), the two part, and the wire dump goes on from there as
Go's reader does: ``read_raw`` from that byte."""

from __future__ import annotations

from dataclasses import dataclass

from livetrace._errors import TraceFormatError
from livetrace._trace.modern.wire import specs_by_code
from livetrace._trace.spec.modern import EventSpec

_MAX_VARINT_BYTES = 10  # a uvarint of 64 bits, as encoding/binary reads it


class _End(Exception):
    """The bytes ended where an event or a value could start: Go's io.EOF,
    which its dump takes as the end of the trace."""


@dataclass(frozen=True, slots=True)
class RawEvent:
    """An event as the raw reader gives it: its code, its spec (None for a
    code Go's table has no event for: printed as an empty name), its
    arguments (a Stack's frames after its own) and its data (None when it
    has none, or none of it)."""

    code: int
    spec: EventSpec | None
    args: tuple[int, ...]
    data: bytes | None


def read_raw(buf: bytes, pos: int, minor: int, offset: int = 0) -> tuple[list[RawEvent], TraceFormatError | None]:
    """The events of ``buf[pos:]`` (``offset``: the stream offset of
    ``buf[0]``), and the error that stopped them (None: the bytes ended
    where Go's reader ends cleanly, which includes an event whose first
    missing byte starts a value, as Go's io.EOF does)."""
    specs = specs_by_code(minor)
    last = max(i for i, s in enumerate(specs) if s is not None)
    events: list[RawEvent] = []
    end = len(buf)
    while pos < end:
        start = pos
        code = buf[pos]
        pos += 1
        if code == 0 or code > last:
            return events, TraceFormatError(f"invalid event type: {code}", offset=offset + start)
        spec = specs[code]
        try:
            args: list[int] = []
            for _ in spec.args if spec is not None else ():
                v, pos = _uvarint(buf, pos, offset)
                args.append(v)
            if spec is not None and spec.is_stack:
                for _ in range(args[1] * 4):
                    v, pos = _uvarint(buf, pos, offset)
                    args.append(v)
            data = None
            if spec is not None and spec.has_data:
                n, pos = _uvarint(buf, pos, offset)
                if end - pos < n:
                    raise _End
                data = bytes(buf[pos : pos + n]) if n else None
                pos += n
        except _End:
            return events, None
        except TraceFormatError as e:
            return events, e
        events.append(RawEvent(code, spec, tuple(args), data))
    return events, None


def _uvarint(buf: bytes, pos: int, offset: int) -> tuple[int, int]:
    """encoding/binary.ReadUvarint: the bytes ending before any of the value
    is a clean end; part way, an error."""
    v = shift = 0
    for i in range(_MAX_VARINT_BYTES):
        if pos + i >= len(buf):
            if i == 0:
                raise _End
            raise TraceFormatError("unexpected EOF in a value", offset=offset + pos)
        b = buf[pos + i]
        if b < 0x80:
            if i == _MAX_VARINT_BYTES - 1 and b > 1:
                break
            return v | b << shift, pos + i + 1
        v |= (b & 0x7F) << shift
        shift += 7
    raise TraceFormatError("varint overflows a 64-bit integer", offset=offset + pos)
