"""The ``spans`` table of one SpanBatch, and the tables that are a choice of
its rows and columns: ``tasks``, ``regions``, ``goroutine_states`` and
``proc_states``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from livetrace._tables.columns import column, flag, full, name_table, names, null_where_not
from livetrace._tables.kernels import lookup, one_of
from livetrace._tables.schema import SCHEMAS
from livetrace._tables.stacks import StackIds
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import (
    RESOURCE_KINDS,
    SPAN_CLIPPED_END,
    SPAN_CLIPPED_START,
    SPAN_KIND_NAMES,
    SpanKind,
)

_KINDS = pa.array(SPAN_KIND_NAMES, pa.string())
_RESOURCES = pa.array(RESOURCE_KINDS, pa.string())


class Names:
    """A span builder's names table as an Arrow array; names are only ever
    appended to it, so only what it grew by is converted (a long live
    export's table grows all the time)."""

    def __init__(self) -> None:
        self._of: Sequence[bytes] | None = None
        self._n = -1
        self._array = pa.array([], pa.string())

    def array(self, table: Sequence[bytes], n: int | None = None) -> pa.Array:
        """The first ``n`` names of the table (None: all it has)."""
        n = len(table) if n is None else n
        if table is self._of and n > self._n:
            # The same table, grown (names are only appended): only its new tail is converted.
            tail = name_table(list(table[self._n : n]))
            self._array = pa.concat_arrays([self._array, tail])
            self._n = n
        elif table is not self._of or n != self._n:
            self._of, self._n = table, n
            self._array = name_table(list(table[:n]))
        return self._array


def _stacks(spans: SpanBatch, ids: memoryview, tables: memoryview, stacks: StackIds) -> pa.Array:
    """Stable ids of a stack column whose ids belong to per-row tables."""
    n = len(spans)
    local, keys = column(ids), column(tables)
    lo, hi = pc.min_max(keys).values()
    if lo == hi:  # the usual case: one table for every row (a min and max: cheaper than unique)
        t = spans.tables.get(lo.as_py())
        return full(None, n, pa.int64()) if t is None else stacks.stable(t, local)
    # Else nearly every row has the unit's table, and a few an earlier one
    # (spans begun in an earlier generation): the many rows are looked up
    # as they are, the few apart and written into that column, not every
    # row per table. The tables are asked in the order they first appear
    # (the order new stacks get their rows).
    counts = pc.value_counts(keys)
    main = counts.field("values")[pc.index(counts.field("counts"), pc.max(counts.field("counts"))).as_py()]
    here = pc.equal(keys, main)
    at = pc.indices_nonzero(pc.invert(here))
    few_keys, few_local = keys.take(at), local.take(at)
    many = null_where_not(local, here)  # its values shared, a bitmap made
    few = full(None, len(at), pa.int64())
    for key in counts.field("values").to_pylist():
        t = spans.tables.get(key)
        if t is None:
            continue
        if key == main.as_py():
            stacks.note(t, many)
        else:
            mine = pc.equal(few_keys, pa.scalar(key, pa.uint32()))
            few = pc.coalesce(few, stacks.stable(t, pc.if_else(mine, few_local, pa.scalar(0, pa.uint64()))))
    t = spans.tables.get(main.as_py())
    if t is None:
        return pc.replace_with_mask(full(None, n, pa.int64()), pc.invert(here), few)
    return stacks.noted(t, many, put=(pc.cast(at, pa.int64()), few))  # (noted in the loop, in its turn)


def spans_batch(
    capture: int,
    spans: SpanBatch,
    stacks: StackIds,
    span_names: Names,
    parents: Mapping[int, int],
    *,
    compiled: bool,
    names_upto: int | None = None,
) -> pa.RecordBatch:
    """The ``spans`` rows of a batch; ``names_upto``: how many names of its
    names table are its (None: all)."""
    n = len(spans)
    kinds = column(spans.kinds)
    starts, ends = column(spans.starts), column(spans.ends)
    flags = column(spans.flags)
    tasks = column(spans.tasks)
    table = span_names.array(spans.names_table, names_upto)
    is_task = pc.equal(kinds, pa.scalar(int(SpanKind.TASK), pa.uint8()))
    if parents and pc.any(is_task).as_py():
        keys = pa.array(list(parents), pa.uint64())
        values = pa.array(list(parents.values()), pa.uint64())
        parent = pc.if_else(is_task, lookup(tasks, keys, values, compiled=compiled), pa.scalar(None, pa.uint64()))
    else:
        parent = full(None, n, pa.uint64())
    return pa.record_batch(
        [
            full(capture, n, pa.int64()),
            names(kinds, _KINDS),
            names(column(spans.resource_kinds), _RESOURCES),
            column(spans.resource_ids),
            starts,
            ends,
            pc.subtract(ends, starts),
            names(column(spans.reasons), table),
            names(column(spans.names), table),
            tasks,
            names(column(spans.task_names), table),
            parent,
            column(spans.procs),
            _stacks(spans, spans.start_stacks, spans.start_tables, stacks),
            _stacks(spans, spans.end_stacks, spans.end_tables, stacks),
            flag(flags, SPAN_CLIPPED_START),
            flag(flags, SPAN_CLIPPED_END),
        ],
        schema=SCHEMAS["spans"],
    )


def _is(column: pa.Array, value: int) -> pa.Array:
    """Where a dictionary column's index is value."""
    return pc.equal(column.indices, pa.scalar(value, pa.int32()))


def _rows(spans: pa.RecordBatch, mask: pa.Array, columns: list[str]) -> pa.RecordBatch:
    """The columns named, of the rows the mask keeps: the others are not filtered."""
    return spans.select(columns).filter(mask)


def _select(spans: pa.RecordBatch, kind: SpanKind, table: str, renames: Mapping[str, str]) -> pa.RecordBatch:
    """The table's columns (renamed as said) of the spans of a kind."""
    columns = [renames.get(f.name, f.name) for f in SCHEMAS[table]]
    rows = _rows(spans, _is(spans["kind"], kind), columns)
    return pa.record_batch(rows.columns, schema=SCHEMAS[table])


_GC_KINDS = (int(SpanKind.GC), int(SpanKind.STW))


def gc_spans_batch(spans: pa.RecordBatch) -> pa.RecordBatch:
    """The GC cycles and stop-the-world pauses of the spans."""
    columns = [f.name for f in SCHEMAS["gc_spans"]]
    rows = _rows(spans, one_of(spans["kind"].indices, _GC_KINDS), columns)
    return pa.record_batch(rows.columns, schema=SCHEMAS["gc_spans"])


def tasks_batch(spans: pa.RecordBatch) -> pa.RecordBatch:
    return _select(spans, SpanKind.TASK, "tasks", {})


def regions_batch(spans: pa.RecordBatch) -> pa.RecordBatch:
    return _select(spans, SpanKind.REGION, "regions", {"goroutine": "resource_id"})


# The spans' columns goroutine_states takes (kind: its state).
STATE_COLUMNS = [
    "capture",
    "resource_id",
    "start",
    "end",
    "duration",
    "kind",
    "reason",
    "proc",
    "start_stack_id",
    "end_stack_id",
    "name",
    "task",
    "task_name",
    "clipped_start",
    "clipped_end",
]


def goroutine_rows(spans: pa.RecordBatch, states: int) -> pa.RecordBatch:
    """The spans of goroutines' states (running, runnable, blocked, syscall),
    in goroutine_states' columns: the first ``states`` rows of partitioned
    spans (kernels.span_partition), their columns shared."""
    return spans.slice(0, states).select(STATE_COLUMNS)


def goroutine_states_batch(rows: pa.RecordBatch, wakers: pa.Array) -> pa.RecordBatch:
    """``goroutine_states`` of goroutine_rows' rows, with their wakers."""
    return pa.record_batch(
        [
            rows["capture"],
            rows["resource_id"],
            rows["start"],
            rows["end"],
            rows["duration"],
            rows["kind"],
            rows["reason"],
            rows["proc"],
            rows["start_stack_id"],
            rows["end_stack_id"],
            wakers,
            rows["name"],
            rows["task"],
            rows["task_name"],
            rows["clipped_start"],
            rows["clipped_end"],
        ],
        schema=SCHEMAS["goroutine_states"],
    )


_PROC_STATES = pa.array(["running", "goroutine"], pa.string())


def proc_states_batch(capture: int, spans: pa.RecordBatch, states: int, procs: int) -> pa.RecordBatch:
    """The goroutines' running intervals on a P, then the P intervals (held
    by an M), of partitioned spans (kernels.span_partition): their first
    ``states`` rows are goroutine states, the next ``procs`` P spans. A P
    span's ``proc`` is its P."""
    head = spans.slice(0, states + procs)
    ran = pc.and_(
        _is(head["kind"], SpanKind.RUNNING).slice(0, states),
        pc.greater_equal(head["proc"].slice(0, states), pa.scalar(0, pa.int64())),
    )
    keep = pa.concat_arrays([ran, full(True, procs, pa.bool_())])
    rows = head.select(["resource_id", "start", "end", "duration", "proc", "clipped_start", "clipped_end"]).filter(keep)
    n, goroutines = rows.num_rows, rows.num_rows - procs
    state = pa.concat_arrays([full(1, goroutines, pa.int32()), full(0, procs, pa.int32())])
    on_goroutine = pa.concat_arrays([full(True, goroutines, pa.bool_()), full(False, procs, pa.bool_())])
    return pa.record_batch(
        [
            full(capture, n, pa.int64()),
            rows["proc"],
            rows["start"],
            rows["end"],
            rows["duration"],
            names(state, _PROC_STATES),
            null_where_not(rows["resource_id"], on_goroutine),
            rows["clipped_start"],
            rows["clipped_end"],
        ],
        schema=SCHEMAS["proc_states"],
    )
