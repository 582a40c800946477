"""A profile's records as a pprof file: profile.proto's messages, written
here as the ``protobuf`` package would serialize them (profile_pb2,
generated from profile.proto here, reads them back), gzip'ed, laid out as
`go tool trace -pprof=KIND` lays out its own.

Go's: the sample types ``contentions/count`` and ``delay/nanoseconds``, the
period type ``trace/count`` and a period of 1; a location per PC (its first
frame's function and line), a function per (file, name) with its name as
system name too; no mappings (pprof's readers add a fake one), no time,
no duration.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from typing import TYPE_CHECKING

from livetrace._views.pprof import Record

if TYPE_CHECKING:
    from livetrace._views.profile_pb2 import Profile

SAMPLE_TYPES = (("contentions", "count"), ("delay", "nanoseconds"))
PERIOD_TYPE = ("trace", "count")

# profile.proto's field numbers, per message.
PROFILE_SAMPLE_TYPE, PROFILE_SAMPLE, PROFILE_LOCATION, PROFILE_FUNCTION, PROFILE_STRING_TABLE = 1, 2, 4, 5, 6
PROFILE_PERIOD_TYPE, PROFILE_PERIOD = 11, 12
VALUE_TYPE_TYPE, VALUE_TYPE_UNIT = 1, 2
SAMPLE_LOCATION_ID, SAMPLE_VALUE = 1, 2
LOCATION_ID, LOCATION_ADDRESS, LOCATION_LINE = 1, 3, 4
LINE_FUNCTION_ID, LINE_LINE = 1, 2
FUNCTION_ID, FUNCTION_NAME, FUNCTION_SYSTEM_NAME, FUNCTION_FILENAME = 1, 2, 3, 4

_WIRE_VARINT, _WIRE_LEN = 0, 2
_U64 = 1 << 64
_I64_MIN, _I64_END = -(1 << 63), 1 << 63


def _uvarint(v: int) -> bytes:
    out = bytearray()
    while v > 0x7F:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _uint64(v: int) -> bytes:
    if not 0 <= v < _U64:
        raise ValueError(f"Value out of range: {v}")  # as protobuf refuses it
    return _uvarint(v)


def _int64(v: int) -> bytes:
    if not _I64_MIN <= v < _I64_END:
        raise ValueError(f"Value out of range: {v}")
    return _uvarint(v % _U64)  # a negative one as its two's complement: ten bytes


def _tag(field: int, wire: int) -> bytes:
    return _uvarint(field << 3 | wire)


def _scalar(field: int, value: bytes) -> bytes:
    # proto3: a zero is not written.
    return b"" if value == b"\0" else _tag(field, _WIRE_VARINT) + value


def _message(field: int, body: bytes) -> bytes:
    return _tag(field, _WIRE_LEN) + _uvarint(len(body)) + body


def _packed(field: int, values: list[bytes]) -> bytes:
    return _message(field, b"".join(values)) if values else b""


class _Strings:
    """A profile's string table: index 0 is the empty string."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self("")

    def __call__(self, s: str) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.index)
        return i


def _value_type(field: int, kind: int, unit: int) -> bytes:
    return _message(field, _scalar(VALUE_TYPE_TYPE, _int64(kind)) + _scalar(VALUE_TYPE_UNIT, _int64(unit)))


def profile_bytes(records: Iterable[Record]) -> bytes:
    """The records as a (plain) serialized profile.proto Profile: what the
    protobuf package serializes, field by field, written here (the package
    takes longer to import than this takes to run)."""
    string = _Strings()
    sample_types = [_value_type(PROFILE_SAMPLE_TYPE, string(kind), string(unit)) for kind, unit in SAMPLE_TYPES]
    samples: list[bytes] = []
    locations: dict[int, int] = {}  # pc -> location id
    location_msgs: list[bytes] = []
    functions: dict[tuple[str, str], int] = {}  # (file, name) -> function id
    function_msgs: list[bytes] = []
    for rec in records:
        ids = []
        for frame in rec.stack:
            loc = locations.get(frame.pc)
            if loc is None:
                fn = functions.get((frame.file, frame.function))
                if fn is None:
                    fn = functions[frame.file, frame.function] = len(functions) + 1
                    name = _int64(string(frame.function))
                    function_msgs.append(
                        _message(
                            PROFILE_FUNCTION,
                            _scalar(FUNCTION_ID, _uint64(fn))
                            + _scalar(FUNCTION_NAME, name)
                            + _scalar(FUNCTION_SYSTEM_NAME, name)
                            + _scalar(FUNCTION_FILENAME, _int64(string(frame.file))),
                        )
                    )
                loc = locations[frame.pc] = len(locations) + 1
                line = _scalar(LINE_FUNCTION_ID, _uint64(fn)) + _scalar(LINE_LINE, _int64(frame.line))
                location_msgs.append(
                    _message(
                        PROFILE_LOCATION,
                        _scalar(LOCATION_ID, _uint64(loc))
                        + _scalar(LOCATION_ADDRESS, _uint64(frame.pc))
                        + _message(LOCATION_LINE, line),
                    )
                )
            ids.append(_uint64(loc))
        values = [_int64(rec.count), _int64(rec.ns)]
        samples.append(_message(PROFILE_SAMPLE, _packed(SAMPLE_LOCATION_ID, ids) + _packed(SAMPLE_VALUE, values)))
    period_type = _value_type(PROFILE_PERIOD_TYPE, string(PERIOD_TYPE[0]), string(PERIOD_TYPE[1]))
    strings = [_message(PROFILE_STRING_TABLE, s.encode()) for s in string.index]
    period = _scalar(PROFILE_PERIOD, _int64(1))
    return b"".join([*sample_types, *samples, *location_msgs, *function_msgs, *strings, period_type, period])


def encode_profile(records: Iterable[Record]) -> bytes:
    """The records as a gzip'ed pprof profile, as Go writes one."""
    return gzip.compress(profile_bytes(records), mtime=0)


def read_profile(data: bytes) -> Profile:
    """A (gzip'ed or plain) pprof profile's messages (with the protobuf
    package: reading is for tests and tools, not the commands)."""
    from livetrace._views.profile_pb2 import Profile

    p = Profile()
    p.ParseFromString(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    return p
