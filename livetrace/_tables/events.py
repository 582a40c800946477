"""The ``events`` table of a run of EventBatches, and the tables that are a choice
of its rows: ``logs``, ``counters`` (the runtime's metric events) and
``cpu_samples``. Every column is computed over the batch's columns: the
per-code facts (kind, name, which argument is the stack or a string) are
lookup arrays indexed by the codes column."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from livetrace._tables.columns import full, name_table, names, null_where_not
from livetrace._tables.kernels import Scratch, event_columns, lookup
from livetrace._tables.schema import SCHEMAS
from livetrace._tables.stacks import StackIds
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import (
    KIND_NAMES,
    KIND_OF_CODE,
    METRIC_NAMES,
    NEW_STACK_ARG,
    STACK_ARG,
    STRING_ARGS,
    SYNC_CODE,
)
from livetrace._trace.model.tables import Tables
from livetrace._trace.spec.kinds import Kind
from livetrace._trace.spec.modern import EV_USER_LOG, SPECS

_KIND_OF = [int(k) for k in KIND_OF_CODE]
_KINDS = pa.array(KIND_NAMES, pa.string())
_EVENT_NAMES = pa.array(
    ["Sync" if c == SYNC_CODE else (s.name if (s := SPECS[c] if c < len(SPECS) else None) else "") for c in range(256)],
    pa.string(),
)
# Per code, which argument is its stack, a created goroutine's stack, and
# its two strings (-1: none).
_PICKERS = [
    list(STACK_ARG),
    list(NEW_STACK_ARG),
    [STRING_ARGS.get(c, (-1,))[0] for c in range(256)],
    [(*STRING_ARGS.get(c, ()), -1, -1)[1] for c in range(256)],
]
_METRIC_CODES = sorted(METRIC_NAMES)
_METRIC_INDEX = pa.array([_METRIC_CODES.index(c) if c in METRIC_NAMES else 0 for c in range(256)], pa.int32())
_METRIC_NAMES = pa.array([METRIC_NAMES[c] for c in _METRIC_CODES], pa.string())


class Strings:
    """A generation's strings as an Arrow dictionary, made once per tables."""

    def __init__(self, *, compiled: bool) -> None:
        self.compiled = compiled  # which core's kernels run
        self._tables: Tables | None = None
        self._keys = pa.array([], pa.uint64())
        self._values = pa.array([], pa.string())
        self._indices = pa.array([], pa.int32())

    def column(self, tables: Tables | None, ids: pa.Array) -> pa.DictionaryArray:
        """The strings named by a column of string ids (null where none)."""
        if tables is not self._tables:
            self._tables = tables
            strings = tables.strings if tables is not None else {}
            self._keys = pa.array(list(strings), pa.uint64())
            self._values = name_table(list(strings.values()))
            self._indices = pa.array(range(len(strings)), pa.int32())
        indices = lookup(ids, self._keys, self._indices, compiled=self.compiled)
        return pa.DictionaryArray.from_arrays(indices, self._values)


def events_batch(
    capture: int,
    batches: Sequence[EventBatch],
    gen: Tables | None,
    stacks: StackIds,
    strings: Strings,
    generation: int,
    tabled: pa.Array | None = None,
    scratch: Scratch | None = None,
) -> pa.RecordBatch:
    """The ``events`` rows of consecutive batches of one tables, ``gen``
    (the first batch's that has tables; None: none has); ``generation``:
    their unit's (a trace's final Sync has no tables of its own); ``tabled``: per
    row, whether its batch's tables are the run's (None: every row's are):
    the columns read from the tables (wall time, stacks, strings) are null
    on the others. ``scratch``: kept memory for what is read only while
    the rows are made (kernels.Scratch)."""
    cols = event_columns(batches, _KIND_OF, _PICKERS, compiled=strings.compiled, scratch=scratch)
    n = len(cols.codes)
    times = cols.times
    stack_of, new_stack_of, string1_of, string2_of = cols.picked
    base = gen.wall_base if gen is not None else None
    wall = (
        full(None, n, pa.timestamp("ns", tz="UTC"))
        if base is None
        else pc.cast(pc.add(times, pa.scalar(base, pa.int64())), pa.timestamp("ns", tz="UTC"))
    )
    if gen is None:
        stack_ids = new_stack_ids = full(None, n, pa.int64())
    else:
        stack_ids, new_stack_ids = stacks.stable(gen, stack_of), stacks.stable(gen, new_stack_of)
    string1, string2 = strings.column(gen, string1_of), strings.column(gen, string2_of)
    if tabled is not None:
        wall, stack_ids, new_stack_ids, string1, string2 = (
            null_where_not(a, tabled) for a in (wall, stack_ids, new_stack_ids, string1, string2)
        )
    return pa.record_batch(
        [
            full(capture, n, pa.int64()),
            full(gen.gen if gen is not None else generation, n, pa.int64()),
            times,
            wall,
            pa.DictionaryArray.from_arrays(cols.kinds, _KINDS),
            pa.DictionaryArray.from_arrays(cols.codes, _EVENT_NAMES),
            cols.goroutines,
            cols.procs,
            cols.threads,
            stack_ids,
            new_stack_ids,
            *cols.args,
            *cols.extra,
            string1,
            string2,
        ],
        schema=SCHEMAS["events"],
    )


def logs_batch(events: pa.RecordBatch) -> pa.RecordBatch:
    """The ``logs`` rows of a batch's ``events``."""
    e = events.filter(pc.equal(events["event"].indices, pa.scalar(EV_USER_LOG, pa.int32())))
    return pa.record_batch(
        [
            e["capture"],
            e["time"],
            e["goroutine"],
            e["arg0"],
            e["string1"],
            pc.cast(e["string2"], pa.string()),
            e["stack_id"],
        ],
        schema=SCHEMAS["logs"],
    )


def counters_batch(events: pa.RecordBatch) -> pa.RecordBatch:
    """The ``counters`` rows of a batch's ``events``: its metric events."""
    e = events.filter(pc.equal(events["kind"].indices, pa.scalar(int(Kind.METRIC), pa.int32())))
    return pa.record_batch(
        [
            e["capture"],
            e["time"],
            names(pc.take(_METRIC_INDEX, e["event"].indices), _METRIC_NAMES),
            pc.cast(e["arg0"], pa.int64(), safe=False),
        ],
        schema=SCHEMAS["counters"],
    )


def cpu_samples_batch(events: pa.RecordBatch) -> pa.RecordBatch:
    e = events.filter(pc.equal(events["kind"].indices, pa.scalar(int(Kind.STACK_SAMPLE), pa.int32())))
    return pa.record_batch(
        [e["capture"], e["time"], e["thread"], e["proc"], e["goroutine"], e["stack_id"]],
        schema=SCHEMAS["cpu_samples"],
    )
