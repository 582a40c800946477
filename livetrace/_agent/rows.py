"""What the agent stores: its tables' Arrow schemas, one for every sink.

Every row carries where it came from (host, service, pid, Go version,
policy, the target's labels as a JSON object), the wall-clock ``time`` that
partitions it by day, and a ``key`` unique to the row: the spool entry's
key and the row's place in it, so that a sink that is sent an entry twice
(after a restart, or a send whose answer was lost) can keep one copy
(docs/fleet.md, "Nothing lost, nothing twice").

- ``summaries``: one row per generation (legacy segment, pprof window), what
  ``top --format json`` shows for it (``top_json`` is that object, exactly),
  with its headline figures as columns;
- ``spans``: the spans over the target's thresholds;
- ``captures``: a trace file the agent kept (a sampled window, a flight
  capture), and where it is;
- ``agent_log``: the agent's own record: attaches, detaches, rows dropped,
  budget cuts, sinks down and back.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["KEY", "PROVENANCE", "SCHEMAS", "TABLES", "TIME"]

KEY, TIME = "key", "time"
SCHEMA_VERSION = "1"

_WALL = pa.timestamp("us", tz="UTC")
PROVENANCE: list[pa.Field] = [
    pa.field(KEY, pa.string(), nullable=False),
    pa.field(TIME, _WALL, nullable=False),
    pa.field("host", pa.string(), nullable=False),
    pa.field("service", pa.string(), nullable=False),
    pa.field("pid", pa.int64(), nullable=False),
    pa.field("go_version", pa.string(), nullable=False),
    pa.field("policy", pa.string(), nullable=False),
    pa.field("labels", pa.string(), nullable=False),  # a JSON object
]


def _durations(name: str) -> list[pa.Field]:
    return [pa.field(f"{name}_{s}", pa.int64(), nullable=False) for s in ("count", "p50_ns", "p99_ns", "max_ns")]


SCHEMAS: dict[str, pa.Schema] = {
    "summaries": pa.schema(
        [
            *PROVENANCE,
            pa.field("first_generation", pa.int64(), nullable=False),
            pa.field("last_generation", pa.int64(), nullable=False),
            pa.field("start_ns", pa.int64(), nullable=False),  # on the trace's clock
            pa.field("end_ns", pa.int64(), nullable=False),
            pa.field("events", pa.int64(), nullable=False),
            *_durations("gc"),
            *_durations("stw"),
            *_durations("sched"),
            *_durations("mark_assist"),
            pa.field("heap_bytes", pa.int64()),
            pa.field("heap_goal_bytes", pa.int64()),
            pa.field("gomaxprocs", pa.int64()),
            pa.field("shed_generations", pa.int64(), nullable=False),
            pa.field("lost_batches", pa.int64(), nullable=False),
            pa.field("gaps", pa.int64(), nullable=False),
            pa.field("top_json", pa.string(), nullable=False),
        ]
    ),
    "spans": pa.schema(
        [
            *PROVENANCE,
            pa.field("kind", pa.string(), nullable=False),
            pa.field("start_ns", pa.int64(), nullable=False),
            pa.field("duration_ns", pa.int64(), nullable=False),
            # start_ns on the wall clock: by the trace's clock snapshot (Go 1.25+) or a live legacy
            # session's estimate; else, to about a generation, the newest span of its batch taken as
            # ending when the batch was decoded (OTLP's spans are placed by it; policies.span_rows)
            pa.field("wall_start", _WALL, nullable=False),
            pa.field("goroutine", pa.int64(), nullable=False),  # 0: a span of no goroutine (GC, STW, a task)
            pa.field("reason", pa.string(), nullable=False),
            pa.field("name", pa.string(), nullable=False),
            pa.field("task_name", pa.string(), nullable=False),
        ]
    ),
    "captures": pa.schema(
        [
            *PROVENANCE,
            pa.field("source", pa.string(), nullable=False),  # "pprof window", "helper window", "flight dump"
            pa.field("path", pa.string(), nullable=False),
            pa.field("bytes", pa.int64(), nullable=False),
            pa.field("trigger", pa.string(), nullable=False),  # what fired it ("" for a sampled window)
            pa.field("cut", pa.bool_(), nullable=False),  # ended early: the byte cap, the session's end
        ]
    ),
    "agent_log": pa.schema(
        [
            *PROVENANCE,
            pa.field("event", pa.string(), nullable=False),
            pa.field("count", pa.int64(), nullable=False),
            pa.field("detail", pa.string(), nullable=False),
        ]
    ),
}
TABLES = tuple(SCHEMAS)
