"""``goroutine_units``: per unit, one row per goroutine it created or saw,
with what the ``goroutines`` and ``pprof_intervals`` views need of the
unit's events and goroutine states (docs/sql.md, "The prepared views").

Those views ask per goroutine of a capture: its creation (the earliest
GoCreate naming it, its creator and new stack), when it was first and last
seen, the first stack it recorded itself, and the lifetime Go's profiles
clip to (its first run, when it blocked forever, its latest interval's end).
Each is a minimum, a maximum or a first/last by time, so a capture's answer
is the same aggregate over its units' rows: the views read these few rows
instead of scanning every event and every state of a set of traces.
"""

from __future__ import annotations

from array import array
from collections.abc import Set

import pyarrow as pa
import pyarrow.compute as pc

from livetrace._tables.columns import full, sorted_by_keys, whole
from livetrace._tables.kernels import one_of
from livetrace._tables.schema import SCHEMAS
from livetrace._trace.accel import ccore
from livetrace._trace.spans.model import SpanKind
from livetrace._trace.spec.modern import EV_GO_CREATE, EV_GO_CREATE_BLOCKED, EV_GO_CREATE_SYSCALL

_CREATES = (EV_GO_CREATE, EV_GO_CREATE_BLOCKED, EV_GO_CREATE_SYSCALL)
_NULL = pa.scalar(None, pa.int64())


def state_is(states: pa.RecordBatch, kind: SpanKind) -> pa.Array:
    """Which of the goroutine_states rows are in the state of span kind ``kind``."""
    return pc.equal(states["state"].indices, pa.scalar(int(kind), pa.int32()))


def unit_batch(capture: int, generation: int, rows: pa.Table, table: str) -> pa.RecordBatch:
    """``table``'s rows of a unit: ``rows``' columns as its schema has them,
    with the unit's capture and generation."""
    n = rows.num_rows
    columns = {"capture": full(capture, n, pa.int64()), "generation": full(generation, n, pa.int64())}
    schema = SCHEMAS[table]
    return pa.record_batch(
        [columns[f.name] if f.name in columns else rows[f.name].combine_chunks().cast(f.type) for f in schema],
        schema=schema,
    )


def _creations(events: pa.RecordBatch) -> pa.Table:
    """Per goroutine created in the unit: its earliest creation (the first
    in event order of those at that time), and the first non-null new stack
    of its creations in time order, as SQL's arg_min gives it."""
    created = one_of(events["event"].indices, _CREATES)
    rows = pa.table(
        {
            "goroutine": pc.cast(events["arg0"].filter(created), pa.int64(), safe=False),
            "created": events["time"].filter(created),
            "creator": events["goroutine"].filter(created),
            "create_stack_id": events["new_stack_id"].filter(created),
        }
    )
    rows = rows.take(pc.sort_indices(rows, [("goroutine", "ascending"), ("created", "ascending")]))
    return _aggregate(rows, {c: (c, "first") for c in ("created", "creator", "create_stack_id")})


def _seen(states: pa.RecordBatch, rootless: Set[int], *, compiled: bool) -> pa.Table:
    """Per goroutine with states in the unit: when first and last seen, its
    latest interval, first run, forever block and first own stack; compiled,
    one pass over the rows (_ccore/tables/columns.c), else these kernels."""
    if compiled:
        return _seen_compiled(states, rootless)
    running, blocked = state_is(states, SpanKind.RUNNING), state_is(states, SpanKind.BLOCKED)
    # Its own stack: where it stopped running, where it blocked or entered
    # a system call (a runnable interval begins at its waker's stack).
    own = pc.if_else(
        running,
        states["end_stack_id"],
        pc.if_else(state_is(states, SpanKind.RUNNABLE), _NULL, states["start_stack_id"]),
    )
    if rootless:
        own = pc.if_else(pc.is_in(own, value_set=pa.array(sorted(rootless), pa.int64())), _NULL, own)
    forever = pc.and_(blocked, pc.take(_forever(states["reason"]), states["reason"].indices))
    start = states["start"]
    rows = pa.table(
        {
            "goroutine": states["goroutine"],
            "start": start,
            "end": states["end"],
            "run": pc.if_else(running, start, _NULL),
            "forever": pc.if_else(forever, start, _NULL),
            "own_stack_id": own,
            "owned": pc.if_else(pc.is_valid(own), start, _NULL),
        }
    )
    seen = _aggregate(
        rows,
        {
            "first_seen": ("start", "min"),
            "last_seen": ("end", "max"),
            "last_start": ("start", "max"),
            "first_run": ("run", "min"),
            "forever": ("forever", "max"),
            "own_stack_start": ("owned", "min"),
        },
    )
    # The rows at two of those times (a join, where a sort of the rows by
    # goroutine and start would cost more): the latest row's end, the
    # earliest own stack; of two rows at one time, the greater.
    last = _at(rows, seen.select(["goroutine", "last_start"]), "end", "last_end")
    first_own = _at(rows, seen.select(["goroutine", "own_stack_start"]), "own_stack_id", "own_stack_id")
    return seen.join(last, "goroutine", join_type="left outer").join(first_own, "goroutine", join_type="left outer")


def _forever(reasons: pa.DictionaryArray) -> pa.Array:
    """Per entry of the reasons' dictionary, whether it is "forever"."""
    return pc.equal(reasons.dictionary, "forever")


def _seen_compiled(states: pa.RecordBatch, rootless: Set[int]) -> pa.Table:
    n = states.num_rows
    if not n:
        return _seen(states, rootless, compiled=False)
    g, start, end, start_stacks, end_stacks = (
        whole(states[c]) for c in ("goroutine", "start", "end", "start_stack_id", "end_stack_id")
    )
    kinds, reasons = whole(states["state"].indices), whole(states["reason"].indices)
    forever = _forever(states["reason"]).fill_null(False).cast(pa.uint8())
    ids = array("Q", sorted(i & (2**64 - 1) for i in rootless))
    cols = ccore.table_goroutine_seen(
        g.buffers()[1],
        start.buffers()[1],
        end.buffers()[1],
        kinds.buffers()[1],
        reasons.buffers()[1],
        forever.buffers()[1][: len(forever)],
        start_stacks.buffers()[1],
        start_stacks.buffers()[0],
        end_stacks.buffers()[1],
        end_stacks.buffers()[0],
        n,
        ids,
    )
    m = len(cols[0]) // 8

    def int64(data: bytes, valid: bytes | None = None) -> pa.Array:
        bits = None if valid is None else pa.py_buffer(valid)
        return pa.Array.from_buffers(pa.int64(), m, [bits, pa.py_buffer(data)])

    return pa.table(
        {
            "goroutine": int64(cols[0]),
            "first_seen": int64(cols[1]),
            "last_seen": int64(cols[2]),
            "last_start": int64(cols[3]),
            "last_end": int64(cols[4]),
            "first_run": int64(cols[5], cols[6]),
            "forever": int64(cols[7], cols[8]),
            "own_stack_id": int64(cols[9], cols[10]),
            "own_stack_start": int64(cols[11], cols[10]),
        }
    )


def _at(rows: pa.Table, times: pa.Table, column: str, name: str) -> pa.Table:
    """Per goroutine of ``times`` (goroutine, a time), the greatest
    ``column`` of its rows that start at that time, as ``name``."""
    key = times.column_names[1]
    hits = rows.select(["goroutine", "start", column]).join(
        times, ["goroutine", "start"], right_keys=["goroutine", key], join_type="inner"
    )
    return _aggregate(hits, {name: (column, "max")})


def _aggregate(rows: pa.Table, columns: dict[str, tuple[str, str]]) -> pa.Table:
    """Per goroutine, each column named an aggregate (a function) of a
    column of the rows; first and last follow the rows' order."""
    out = rows.group_by("goroutine", use_threads=False).aggregate(list(columns.values()))
    return out.rename_columns(["goroutine", *columns])


def blocked_units_batch(capture: int, generation: int, states: pa.RecordBatch) -> pa.RecordBatch:
    """The unit's ``blocked_units`` rows: its goroutine_states rows of
    state blocked, summed per reason, stack and whether still blocked, by
    those (a reason by its dictionary index)."""
    keys = ["reason", "stack_id", "clipped_end"]
    rows = pa.table(
        {
            "reason": states["reason"].indices,
            "stack_id": states["start_stack_id"],
            "clipped_end": states["clipped_end"],
            "duration": states["duration"],
        }
    ).filter(state_is(states, SpanKind.BLOCKED))
    sums = rows.group_by(keys, use_threads=False).aggregate([("duration", f) for f in ("count", "sum", "min", "max")])
    sums = sorted_by_keys(sums, keys).rename_columns([*keys, "intervals", "total_ns", "min_ns", "max_ns"])
    reasons = pa.DictionaryArray.from_arrays(sums["reason"].combine_chunks(), states["reason"].dictionary)
    return unit_batch(capture, generation, sums.set_column(0, "reason", reasons), "blocked_units")


def goroutine_units_batch(
    capture: int,
    generation: int,
    events: pa.RecordBatch,
    states: pa.RecordBatch,
    rootless: Set[int],
    *,
    compiled: bool,
) -> pa.RecordBatch:
    """The unit's ``goroutine_units`` rows, by goroutine: from its events
    and goroutine_states rows; ``rootless``, the stack ids whose root frame
    has no function (StackIds.rootless); ``compiled``: which core's pass."""
    both = _creations(events).join(_seen(states, rootless, compiled=compiled), "goroutine", join_type="full outer")
    return unit_batch(capture, generation, both.sort_by("goroutine"), "goroutine_units")
