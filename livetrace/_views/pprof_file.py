"""A profile's records as a pprof file: profile.proto's messages (the
``protobuf`` package, with profile_pb2 generated from profile.proto here),
gzip'ed, laid out as `go tool trace -pprof=KIND` lays out its own.

Go's: the sample types ``contentions/count`` and ``delay/nanoseconds``, the
period type ``trace/count`` and a period of 1; a location per PC (its first
frame's function and line), a function per (file, name) with its name as
system name too; no mappings (pprof's readers add a fake one), no time,
no duration.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable, MutableSequence

from livetrace._views.pprof import Record
from livetrace._views.profile_pb2 import Profile

SAMPLE_TYPES = (("contentions", "count"), ("delay", "nanoseconds"))
PERIOD_TYPE = ("trace", "count")


class _Strings:
    """A profile's string table: index 0 is the empty string."""

    def __init__(self, table: MutableSequence[str]) -> None:
        self._table = table
        self._index: dict[str, int] = {}
        self("")

    def __call__(self, s: str) -> int:
        i = self._index.get(s)
        if i is None:
            i = self._index[s] = len(self._table)
            self._table.append(s)
        return i


def build_profile(records: Iterable[Record]) -> Profile:
    p = Profile()
    string = _Strings(p.string_table)
    for kind, unit in SAMPLE_TYPES:
        p.sample_type.add(type=string(kind), unit=string(unit))
    locations: dict[int, int] = {}  # pc -> location id
    functions: dict[tuple[str, str], int] = {}  # (file, name) -> function id
    for rec in records:
        ids = []
        for frame in rec.stack:
            loc = locations.get(frame.pc)
            if loc is None:
                fn = functions.get((frame.file, frame.function))
                if fn is None:
                    fn = functions[frame.file, frame.function] = len(functions) + 1
                    name = string(frame.function)
                    p.function.add(id=fn, name=name, system_name=name, filename=string(frame.file))
                loc = locations[frame.pc] = len(locations) + 1
                p.location.add(id=loc, address=frame.pc).line.add(function_id=fn, line=frame.line)
            ids.append(loc)
        p.sample.add(location_id=ids, value=[rec.count, rec.ns])
    p.period_type.type, p.period_type.unit = string(PERIOD_TYPE[0]), string(PERIOD_TYPE[1])
    p.period = 1
    return p


def encode_profile(records: Iterable[Record]) -> bytes:
    """The records as a gzip'ed pprof profile, as Go writes one."""
    return gzip.compress(build_profile(records).SerializeToString(), mtime=0)


def read_profile(data: bytes) -> Profile:
    """A (gzip'ed or plain) pprof profile's messages."""
    p = Profile()
    p.ParseFromString(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    return p
