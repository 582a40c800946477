"""Every table's Arrow schema and what each column means: one schema for
every trace format (Go 1.5 to 1.27, legacy traces through the same event
model), the single source docs/sql.md's column lists are checked against.

Times are int64 nanoseconds on the trace's clock (``time``, ``start``,
``end``); ``*_wall`` columns are UTC timestamps where the capture knows its
clock base. Ids of goroutines, Ps and threads are int64, -1 where an event
has none. Stack ids are stable: the same stack (the same PCs with the same
functions, files and lines) has the same id in every generation and every
capture, so a query joins ``stacks`` across many captures.
"""

from __future__ import annotations

import pyarrow as pa

# Bumped when a column changes meaning, type or name; the Parquet files
# carry it in their metadata (b"livetrace.schema_version"). 2: goroutine_units, blocked_units and gc_spans;
# 3: captures.session; 4: sched_units and pprof_units; 5: pprof_interval_units.
SCHEMA_VERSION = 5
SCHEMA_VERSION_KEY = b"livetrace.schema_version"

_NAME = pa.dictionary(pa.int32(), pa.string())  # a low-cardinality string: a kind, a state, a reason
# The profiles of Go's `go tool trace -pprof=KIND` that pprof_units and
# pprof_interval_units count (livetrace/_tables/profiles.py).
PPROF_PROFILES = ("sched", "syscall", "net", "sync")
_TIME = pa.int64()
_WALL = pa.timestamp("ns", tz="UTC")

# (name, type, nullable, meaning) per column, per table.
Columns = tuple[tuple[str, pa.DataType, bool, str], ...]

_CAPTURE = ("capture", pa.int64(), False, "the capture (captures.capture) the row belongs to")
_UNIT_GENERATION = ("generation", pa.int64(), False, "the unit's generation (a legacy trace: its segment, from 1)")

# The pprof unit tables' rows: their key, and when their intervals began and ended.
_PPROF_KEY: Columns = (
    _CAPTURE,
    _UNIT_GENERATION,
    ("goroutine", pa.int64(), False, "the goroutine"),
    ("profile", _NAME, False, "the profile that counts them: sched, syscall, net or sync"),
    ("stack_id", pa.int64(), True, "where they began (goroutine_states.start_stack_id)"),
)
_PPROF_SPAN: Columns = (
    ("first_start", _TIME, False, "the earliest start of them"),
    ("last_end", _TIME, False, "the latest end of them"),
)

_STACK_PAIR: Columns = (
    ("start_stack_id", pa.int64(), True, "stack of the event that began it (stacks.stack_id)"),
    ("end_stack_id", pa.int64(), True, "stack of the event that ended it (a waker's, for a blocked goroutine)"),
)
_CLIPPED: Columns = (
    ("clipped_start", pa.bool_(), False, "under way when the trace (or a gap) began: start is when first seen"),
    ("clipped_end", pa.bool_(), False, "its end was not seen: end is the trace's last event"),
)
_INTERVAL: Columns = (
    ("start", _TIME, False, "when it began (ns, trace clock)"),
    ("end", _TIME, False, "when it ended (ns, trace clock)"),
    ("duration", _TIME, False, "end - start (ns)"),
)

COLUMNS: dict[str, Columns] = {
    "captures": (
        _CAPTURE,
        ("source", pa.string(), False, "file, helper, pprof window or flight dump"),
        ("name", pa.string(), False, "the file's path or the session's address"),
        (
            "session",
            pa.int64(),
            True,
            "the session it is part of: the capture id of the session's first capture, shared by a live "
            "session's legacy segments or pprof windows and a file's traces (null: unknown)",
        ),
        ("trace_index", pa.int32(), False, "its place in its session (a segment, a window, a file's trace), from 0"),
        ("service", pa.string(), True, "the service's name, where a live session says it"),
        ("host", pa.string(), True, "the host, where known"),
        ("pid", pa.int64(), True, "the process id, where known"),
        ("go_version", pa.string(), True, "the runtime's version (go1.26.6), where known"),
        ("trace_format", pa.string(), False, "the trace's format version (go1.22, go1.21, gotrace)"),
        ("start_time", _TIME, True, "its first event (ns, trace clock)"),
        ("end_time", _TIME, True, "its last event (ns, trace clock)"),
        ("start_wall", _WALL, True, "its first event, wall clock"),
        ("end_wall", _WALL, True, "its last event, wall clock"),
        ("wall_base", pa.int64(), True, "Unix ns of trace time 0: wall = wall_base + time (null: unknown)"),
        ("events", pa.int64(), False, "how many events it holds"),
    ),
    "events": (
        _CAPTURE,
        ("generation", pa.int64(), False, "the generation (a legacy trace: its segment, from 1)"),
        ("time", _TIME, False, "ns, trace clock"),
        ("wall_time", _WALL, True, "wall clock, where the generation's clock base is known"),
        ("kind", _NAME, False, "Go's event kind: StateTransition, RangeBegin, Log, ..."),
        ("event", _NAME, False, "the wire event type: GoStart, GoBlock, ProcStop, ... (legacy: the modern one)"),
        ("goroutine", pa.int64(), False, "the goroutine it happened on (-1: none)"),
        ("proc", pa.int64(), False, "the P (-1: none)"),
        ("thread", pa.int64(), False, "the M (-1: none)"),
        ("stack_id", pa.int64(), True, "the stack of its own execution context (stacks.stack_id)"),
        ("new_stack_id", pa.int64(), True, "a created goroutine's stack (GoCreate): where it starts"),
        ("arg0", pa.uint64(), False, "first argument (per event type: docs/sql.md)"),
        ("arg1", pa.uint64(), False, "second argument"),
        ("arg2", pa.uint64(), False, "third argument"),
        ("arg3", pa.uint64(), False, "fourth argument"),
        ("extra0", pa.uint64(), False, "what the ordering engine learned: a transition's old state, ..."),
        ("extra1", pa.uint64(), False, "second such fact: a task end's type"),
        ("string1", _NAME, True, "its first string argument: a block reason, region type, label, log category"),
        ("string2", _NAME, True, "its second string argument: a log's message"),
    ),
    "goroutine_states": (
        _CAPTURE,
        ("goroutine", pa.int64(), False, "the goroutine"),
        *_INTERVAL,
        ("state", _NAME, False, "running, runnable, blocked or syscall"),
        ("reason", _NAME, False, "why it blocked (chan receive, select, sync, network, ...) or stopped"),
        ("proc", pa.int64(), False, "the P it ran on (running; -1 otherwise or unknown)"),
        *_STACK_PAIR,
        ("waker_goroutine", pa.int64(), True, "the goroutine that made it runnable (blocked spans)"),
        ("region", _NAME, False, "the innermost user region it was in when the interval began"),
        ("task", pa.uint64(), False, "that region's task (0: none)"),
        ("task_name", _NAME, False, "the task's type"),
        *_CLIPPED,
    ),
    # One row per goroutine per unit it was created or seen in: what the
    # goroutines and pprof_intervals views need of events and
    # goroutine_states, made with the tables so that they read this instead.
    "goroutine_units": (
        _CAPTURE,
        _UNIT_GENERATION,
        ("goroutine", pa.int64(), False, "the goroutine"),
        ("created", _TIME, True, "its earliest creation (GoCreate) in the unit"),
        ("creator", pa.int64(), True, "the goroutine that created it then"),
        ("create_stack_id", pa.int64(), True, "the created goroutine's stack then (events.new_stack_id)"),
        ("first_seen", _TIME, True, "the start of its first goroutine_states row in the unit (null: none)"),
        ("last_seen", _TIME, True, "the latest end of its goroutine_states rows in the unit"),
        ("last_start", _TIME, True, "the start of its latest-starting goroutine_states row in the unit"),
        ("last_end", _TIME, True, "that row's end"),
        ("first_run", _TIME, True, "the start of its first running interval in the unit"),
        ("forever", _TIME, True, "when it last blocked forever (reason forever) in the unit"),
        (
            "own_stack_id",
            pa.int64(),
            True,
            "the stack of its earliest state with one of its own (running: where it stopped; blocked, syscall: "
            "where it began) whose root frame has a function",
        ),
        ("own_stack_start", _TIME, True, "the start of that row"),
    ),
    # Blocked intervals summed per unit, reason and stack: what the
    # blocking and goroutine_leaks views count, without a scan of every state.
    "blocked_units": (
        _CAPTURE,
        _UNIT_GENERATION,
        ("reason", _NAME, False, "why they blocked (goroutine_states.reason)"),
        ("stack_id", pa.int64(), True, "where they blocked (goroutine_states.start_stack_id)"),
        ("clipped_end", pa.bool_(), False, "still blocked when the trace ended (goroutine_states.clipped_end)"),
        ("intervals", pa.int64(), False, "how many blocked intervals of the unit"),
        ("total_ns", pa.int64(), False, "their total duration"),
        ("min_ns", pa.int64(), False, "the shortest"),
        ("max_ns", pa.int64(), False, "the longest"),
    ),
    # Runnable waits counted per unit, goroutine and duration: what the
    # sched_latency view counts and takes quantiles of, without a scan of every state.
    "sched_units": (
        _CAPTURE,
        _UNIT_GENERATION,
        ("goroutine", pa.int64(), False, "the goroutine that waited"),
        ("duration", pa.int64(), False, "how long it waited (goroutine_states.duration of a runnable row)"),
        ("waits", pa.int64(), False, "how many of its runnable intervals of the unit (their end seen) lasted so"),
    ),
    # The intervals Go's profiles count, summed per unit, goroutine, profile
    # and stack as far as their clipping to the goroutine's lifetime allows:
    # what the pprof view adds up, without a scan of every state.
    "pprof_units": (
        *_PPROF_KEY,
        (
            "intervals",
            pa.int64(),
            False,
            "how many: those that began at or after its first run in the unit; else 1, an interval alone",
        ),
        ("total_ns", pa.int64(), False, "their total duration (end - start)"),
        *_PPROF_SPAN,
    ),
    # The same intervals counted per duration too: what the pprof_intervals
    # view lists, without a scan of every state.
    "pprof_interval_units": (
        *_PPROF_KEY,
        ("ns", pa.int64(), False, "how long each lasted (end - start)"),
        (
            "intervals",
            pa.int64(),
            False,
            "how many lasted so: those that began at or after its first run in the unit; else 1, an interval alone",
        ),
        *_PPROF_SPAN,
    ),
    "proc_states": (
        _CAPTURE,
        ("proc", pa.int64(), False, "the P"),
        *_INTERVAL,
        ("state", _NAME, False, "running: the P held by an M; goroutine: a goroutine ran on it"),
        ("goroutine", pa.int64(), True, "the goroutine that ran (state goroutine)"),
        *_CLIPPED,
    ),
    "spans": (
        _CAPTURE,
        ("kind", _NAME, False, "running, runnable, blocked, syscall, gc, stw, mark-assist, region, task"),
        ("resource", _NAME, False, "Goroutine, Proc or None (the whole program)"),
        ("resource_id", pa.int64(), False, "the goroutine's or P's id"),
        *_INTERVAL,
        ("reason", _NAME, False, "why blocked, why stopped, why the world stopped"),
        ("name", _NAME, False, "a region's or task's type; a goroutine span's innermost region"),
        ("task", pa.uint64(), False, "the task (0: none)"),
        ("task_name", _NAME, False, "the task's type, where its begin was seen"),
        ("parent_task", pa.uint64(), True, "a task span's parent task (null: none or unseen)"),
        ("proc", pa.int64(), False, "a P span's P, the P a running goroutine ran on; -1 otherwise"),
        *_STACK_PAIR,
        *_CLIPPED,
    ),
    # GC cycles and stop-the-world pauses: the few rows of spans that the
    # gc_pauses view reads, made with the tables so that it scans no other.
    "gc_spans": (
        _CAPTURE,
        ("kind", _NAME, False, "gc or stw"),
        ("reason", _NAME, False, "why the world stopped (stw)"),
        *_INTERVAL,
        *_CLIPPED,
    ),
    "tasks": (
        _CAPTURE,
        ("task", pa.uint64(), False, "the task's id"),
        ("parent_task", pa.uint64(), True, "its parent (null: none or unseen)"),
        ("name", _NAME, False, "its type"),
        *_INTERVAL,
        *_STACK_PAIR,
        *_CLIPPED,
    ),
    "regions": (
        _CAPTURE,
        ("goroutine", pa.int64(), False, "the goroutine it ran on"),
        ("name", _NAME, False, "its type"),
        ("task", pa.uint64(), False, "its task (0: none)"),
        ("task_name", _NAME, False, "the task's type"),
        *_INTERVAL,
        *_STACK_PAIR,
        *_CLIPPED,
    ),
    "logs": (
        _CAPTURE,
        ("time", _TIME, False, "ns, trace clock"),
        ("goroutine", pa.int64(), False, "the goroutine that logged"),
        ("task", pa.uint64(), False, "its task (0: none)"),
        ("category", _NAME, True, "the category"),
        ("message", pa.string(), True, "the message"),
        ("stack_id", pa.int64(), True, "where it was logged"),
    ),
    "counters": (
        _CAPTURE,
        ("time", _TIME, False, "ns, trace clock"),
        ("name", _NAME, False, "a runtime/metrics name, or goroutines:<state> (how many at that time)"),
        ("value", pa.int64(), False, "its value"),
    ),
    "cpu_samples": (
        _CAPTURE,
        ("time", _TIME, False, "ns, trace clock"),
        ("thread", pa.int64(), False, "the M"),
        ("proc", pa.int64(), False, "the P (-1: none)"),
        ("goroutine", pa.int64(), False, "the goroutine (-1: none)"),
        ("stack_id", pa.int64(), True, "the sampled stack"),
    ),
    "stacks": (
        ("stack_id", pa.int64(), False, "a stable id: the same frames give the same id in every capture"),
        ("depth", pa.int32(), False, "how many frames"),
        ("frame_ids", pa.list_(pa.int64()), False, "its frames (frames.frame_id), innermost first"),
        ("pcs", pa.list_(pa.uint64()), False, "its PCs, innermost first"),
        ("leaf", pa.string(), False, "the innermost frame's function"),
        ("root", pa.string(), False, "the outermost frame's function: where the goroutine started"),
    ),
    "frames": (
        ("frame_id", pa.int64(), False, "a stable id of (pc, function, file, line)"),
        ("pc", pa.uint64(), False, "the PC"),
        ("function", pa.string(), False, "the function"),
        ("file", pa.string(), False, "its file"),
        ("line", pa.int64(), False, "the line"),
    ),
}

TABLE_NAMES = tuple(COLUMNS)


def schema(table: str) -> pa.Schema:
    """The Arrow schema of a table, each field's meaning in its metadata
    (b"doc"), the schema's version in the schema's."""
    return pa.schema(
        [pa.field(n, t, nullable, metadata={b"doc": doc.encode()}) for n, t, nullable, doc in COLUMNS[table]],
        metadata={SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode()},
    )


SCHEMAS: dict[str, pa.Schema] = {name: schema(name) for name in TABLE_NAMES}
