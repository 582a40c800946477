"""The wire layer of modern (Go 1.22+) traces, sans-IO: bytes in, frames out.

A stream is a 16-byte header and then self-delimiting frames: event
batches, experimental batches and (Go 1.26+) the end-of-generation byte.
:class:`FrameReader` cuts any chunking of the stream into whole frames;
:func:`decode_records` reads the records inside one batch payload.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from livetrace._errors import TraceFormatError, TruncatedTraceError, UnsupportedTraceVersionError
from livetrace._plural import plural
from livetrace._streambuf import StreamBuffer
from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.spec.modern import (
    EV_END_OF_GENERATION,
    EV_EVENT_BATCH,
    EV_EXPERIMENTAL_BATCH,
    LAST_CODE,
    SPECS,
    EventSpec,
    specs_for,
)
from livetrace._trace.version import HEADER_SIZE, TraceVersion, sniff

_OVERFLOW = "varint overflows a 64-bit integer"
MAX_BATCH_SIZE = 1 << 16  # the parser's limit on a batch payload
_LEGACY = (
    "this is a {} file, the legacy format of Go 1.5 to 1.21, which the modern decoder does not read: "
    "decode it with livetrace.open_decoder, which reads every format (what `livetrace decode` does)"
)


@dataclass(frozen=True, slots=True)
class Batch:
    gen: int
    m: int
    time: int
    payload: bytes
    offset: int  # of the frame's first byte in the stream
    payload_offset: int
    exp: int = -1  # experiment id of an experimental batch, -1 for an event batch


@dataclass(frozen=True, slots=True)
class EndOfGeneration:
    offset: int


Frame = Batch | EndOfGeneration


def modern_version(header: bytes) -> TraceVersion:
    """The format version a 16-byte header names, if it is a modern one."""
    version = sniff(header)
    if version.is_legacy:
        raise UnsupportedTraceVersionError(_LEGACY.format(version.header_name), offset=0)
    return version


def read_uvarint(buf: bytes | bytearray, pos: int, end: int) -> tuple[int, int]:
    """One unsigned LEB128 value at pos; (-1, pos) if it runs past end."""
    b = buf[pos] if pos < end else 0x80
    if b < 0x80:
        return b, pos + 1
    value, shift, i = 0, 0, pos
    while i < end:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if shift > 63 or value >> 64:
                raise ValueError(_OVERFLOW)
            return value, i
        shift += 7
        if shift > 63:
            raise ValueError(_OVERFLOW)
    return -1, pos


class FrameReader:
    """Cuts a trace byte stream, fed in any pieces, into frames. ``version``:
    the format the stream's header names, where the caller sniffed it
    already (``open_decoder``); else the header is read here."""

    def __init__(self, version: TraceVersion | None = None) -> None:
        self._in = StreamBuffer()
        self._known = version
        self.version: TraceVersion | None = None

    @property
    def minor(self) -> int | None:
        """The format version's minor, once the header is in."""
        return None if self.version is None else self.version.minor

    @property
    def offset(self) -> int:
        """Stream offset of the first byte not yet part of a returned frame."""
        return self._in.offset

    def feed(self, data: bytes) -> list[Frame]:
        frames, error = self.feed_until_error(data)
        if error is not None:
            raise error
        return frames

    def feed_until_error(self, data: bytes) -> tuple[list[Frame], TraceFormatError | None]:
        """The frames the new bytes complete; where a frame is malformed,
        those before it and the error (the rest of the stream is not read:
        the reader is done)."""
        frames: list[Frame] = []
        try:
            self._cut(data, frames)
        except TraceFormatError as e:
            return frames, e
        return frames, None

    def _cut(self, data: bytes, frames: list[Frame]) -> None:
        buf = self._in.buf
        buf += data
        pos, end = self._in.pos, len(buf)
        if self.version is None:
            if end - pos < HEADER_SIZE:
                return
            self.version = self._known or modern_version(bytes(buf[pos : pos + HEADER_SIZE]))
            pos += HEADER_SIZE
        base = self._in.base
        end_of_generation = self.version.has_end_of_generation
        experimental = self.version.has_experimental_batches
        while pos < end:
            kind = buf[pos]
            if kind == EV_END_OF_GENERATION and end_of_generation:
                frames.append(EndOfGeneration(base + pos))
                pos += 1
                continue
            if kind == EV_EVENT_BATCH:
                i, exp = pos + 1, -1
            elif kind == EV_EXPERIMENTAL_BATCH and experimental:
                if end - pos < 2:
                    break
                i, exp = pos + 2, buf[pos + 1]
            else:
                raise TraceFormatError(f"unexpected byte {kind} where a batch should start", offset=base + pos)
            try:
                gen, i = read_uvarint(buf, i, end)
                if gen >= 0:
                    m, i = read_uvarint(buf, i, end)
                if gen >= 0 and m >= 0:
                    t, i = read_uvarint(buf, i, end)
                if gen >= 0 and m >= 0 and t >= 0:
                    size, i = read_uvarint(buf, i, end)
            except ValueError as e:
                raise TraceFormatError(f"bad batch header: {e}", offset=base + pos) from None
            if gen < 0 or m < 0 or t < 0 or size < 0:
                break  # header not complete yet
            if size > MAX_BATCH_SIZE:
                raise TraceFormatError(
                    f"batch of {size} bytes is larger than the {MAX_BATCH_SIZE}-byte maximum",
                    offset=base + pos,
                    generation=gen,
                )
            if end - i < size:
                break
            frames.append(Batch(gen, m, t, bytes(buf[i : i + size]), base + pos, base + i, exp))
            pos = i + size
        self._in.consumed(pos)

    def unread_bytes(self) -> tuple[int, bytes]:
        """(stream offset, bytes) of what is not yet part of a returned frame."""
        return self._in.offset, bytes(self._in.buf[self._in.pos :])

    def close(self) -> None:
        """The stream ended; it must end on a frame boundary."""
        left = self._in.unread
        if self.version is None:
            if not left:
                raise TruncatedTraceError("empty trace: no header", offset=0)
            raise TruncatedTraceError("trace ends inside its 16-byte header", offset=self.offset)
        if left:
            raise TruncatedTraceError(
                f"trace ends in the middle of a batch ({plural(left, 'byte')} left over)", offset=self.offset
            )


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a batch payload, as the raw reader sees it."""

    spec: EventSpec
    args: tuple[int, ...]  # for a Stack: id, nframes, then 4 values per frame
    data: bytes | None = None


class RecordColumns(NamedTuple):
    """The records of a batch payload as columns: record i has code
    ``codes[i]`` and arguments ``args[starts[i]:starts[i + 1]]`` (for a Stack,
    its frames follow, 4 values each; a record with data ends with the data's
    start and length in the payload)."""

    codes: bytes
    starts: memoryview  # n + 1 unsigned ints
    args: memoryview  # unsigned 64-bit ints


def record_columns(
    payload: bytes, minor: int, offset: int = 0, gen: int | None = None, *, compiled: bool | None = None
) -> RecordColumns:
    """Every record of a batch payload, as columns."""
    if not use_compiled(compiled):
        codes, starts, args = bytearray(), array("I", [0]), array("Q")
        for code, vals, data_at in _records(payload, minor, offset, gen):
            codes.append(code)
            args.extend(vals)
            if data_at is not None:
                args.extend(data_at)
            starts.append(len(args))
        return RecordColumns(bytes(codes), memoryview(starts), memoryview(args))
    try:
        recs = ccore.wire_records(payload, _WIRE_TABLE[minor])
    except ccore.WireError as e:
        spec = SPECS[e.code]
        at = offset + e.offset
        if e.kind == ccore.WIRE_INVALID_TYPE or spec is None:
            raise TraceFormatError(f"invalid event type: {e.code}", offset=at, generation=gen) from None
        if e.kind == ccore.WIRE_SHORT:
            raise _short(spec, at, gen) from None
        raise TraceFormatError(f"{spec.name}: {_OVERFLOW}", offset=at, generation=gen) from None
    return RecordColumns(recs.codes, memoryview(recs.starts).cast("I"), memoryview(recs.args).cast("Q"))


def decode_records(payload: bytes, minor: int, offset: int = 0, gen: int | None = None) -> Iterator[Record]:
    """Every record of a batch payload, in order."""
    specs = _SPECS[minor]
    if not use_compiled():
        for code, vals, data_at in _records(payload, minor, offset, gen):
            at, n = data_at or (0, 0)
            yield Record(specs[code], tuple(vals), payload[at : at + n] if n else None)  # type: ignore[arg-type]  # _records raised on a code without a spec
        return
    cols = record_columns(payload, minor, offset, gen)
    starts, args = cols.starts.tolist(), cols.args.tolist()
    for i, code in enumerate(cols.codes):
        spec = specs[code]
        assert spec is not None
        vals = args[starts[i] : starts[i + 1]]
        data = None
        if spec.has_data:
            at, n = vals[-2:]
            del vals[-2:]
            data = payload[at : at + n] if n else None
        yield Record(spec, tuple(vals), data)


def _records(
    payload: bytes, minor: int, offset: int, gen: int | None
) -> Iterator[tuple[int, list[int], tuple[int, int] | None]]:
    """The pure-Python twin of the compiled core's wire_records: (code,
    arguments, (data start, data length) or None) per record."""
    specs = _SPECS[minor]
    i, end = 0, len(payload)
    while i < end:
        start = i
        code = payload[i]
        spec = specs[code]
        if spec is None or code in (EV_EVENT_BATCH, EV_EXPERIMENTAL_BATCH):
            raise TraceFormatError(f"invalid event type: {code}", offset=offset + i, generation=gen)
        i += 1
        try:
            args = []
            for _ in spec.args:
                v, i = read_uvarint(payload, i, end)
                if v < 0:
                    raise _Short
                args.append(v)
            if spec.is_stack:
                for _ in range(args[1] * 4):
                    v, i = read_uvarint(payload, i, end)
                    if v < 0:
                        raise _Short
                    args.append(v)
            data_at = None
            if spec.has_data:
                n, i = read_uvarint(payload, i, end)
                if n < 0 or end - i < n:
                    raise _Short
                data_at = (i, n)
                i += n
        except _Short:
            raise _short(spec, offset + start, gen) from None
        except ValueError as e:
            raise TraceFormatError(f"{spec.name}: {e}", offset=offset + start, generation=gen) from None
        yield code, args, data_at


def _short(spec: EventSpec, offset: int, gen: int | None) -> TraceFormatError:
    return TraceFormatError(f"{spec.name} record runs past the end of its batch", offset=offset, generation=gen)


class _Short(Exception):
    pass


# Per format version's minor: what the per-batch loops index.
_SPECS = {version.minor: specs_for(version) for version in LAST_CODE}


def specs_by_code(minor: int) -> list[EventSpec | None]:
    """The format version's event specs, indexed by code (None: no event)."""
    return _SPECS[minor]


def _wire_table(specs: list[EventSpec | None]) -> bytes:
    """Per code, for the compiled core: 0 if invalid in a batch, else
    0x80 | argument count | 0x20 if a Stack | 0x40 if it has data."""
    row = [0] * 256
    for s in specs:
        if s is not None and s.code not in (EV_EVENT_BATCH, EV_EXPERIMENTAL_BATCH):
            row[s.code] = 0x80 | len(s.args) | (0x20 if s.is_stack else 0) | (0x40 if s.has_data else 0)
    return bytes(row)


_WIRE_TABLE = {minor: _wire_table(specs) for minor, specs in _SPECS.items()}
