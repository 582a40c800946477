"""The ``captures`` table: one row per trace or live session, made at its
end from what its units saw."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from livetrace._tables.schema import SCHEMAS


def capture_id(name: str, trace_index: int, head: bytes) -> int:
    """A stable id of a capture: the same file gives the same id in every
    build, so a capture's rows in two exports join."""
    digest = hashlib.blake2b(f"{name}\0{trace_index}\0".encode() + head, digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True) or 1


@dataclass
class Capture:
    """What the ``captures`` row says, filled in as the units pass."""

    capture: int
    source: str
    name: str
    trace_format: str
    trace_index: int = 0
    session: int | None = None
    service: str | None = None
    host: str | None = None
    pid: int | None = None
    go_version: str | None = None
    start_time: int | None = None
    end_time: int | None = None
    wall_base: int | None = None
    events: int = 0

    def saw(self, events: pa.RecordBatch) -> None:
        """Note a unit's ``events`` rows."""
        n = events.num_rows
        if not n:
            return
        self.events += n
        lo, hi = pc.min_max(events["time"]).values()
        first, last = lo.as_py(), hi.as_py()
        self.start_time = first if self.start_time is None else min(self.start_time, first)
        self.end_time = last if self.end_time is None else max(self.end_time, last)
        if self.wall_base is None:
            first_known = pc.index(pc.is_valid(events["wall_time"]), True).as_py()
            if first_known >= 0:
                wall = pc.cast(events["wall_time"][first_known], pa.int64()).as_py()
                self.wall_base = wall - events["time"][first_known].as_py()

    def row(self) -> pa.RecordBatch:
        def wall(t: int | None) -> int | None:
            return None if t is None or self.wall_base is None else self.wall_base + t

        values = [
            self.capture,
            self.source,
            self.name,
            self.session,
            self.trace_index,
            self.service,
            self.host,
            self.pid,
            self.go_version,
            self.trace_format,
            self.start_time,
            self.end_time,
            wall(self.start_time),
            wall(self.end_time),
            self.wall_base,
            self.events,
        ]
        s = SCHEMAS["captures"]
        return pa.record_batch([pa.array([v], f.type) for v, f in zip(values, s, strict=True)], schema=s)
