"""One unit (a generation, a legacy segment, a pprof window) to one
RecordBatch per table.

:class:`UnitBuilder` takes a unit's decoded batches and the spans that ended
in them (already joined, by SpanBuilder or SpanJoin) and gives every table's
rows of that unit: the core's columns in, Arrow out, with no Python object
per row. What it keeps between units is small and per distinct thing, not
per event: the stacks and frames it has emitted (each once) and the
parents of the tasks open. A pipeline may run one per worker, a unit at a
time, each unit becoming one Parquet row group; the stable stack ids
(stacks.py) make the stacks two workers both emit the same rows. A task's
parent is known where the builder saw its begin: a task whose begin went
through another worker has a null ``parent_task``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from livetrace._tables.columns import full, names, null_where_not, strided
from livetrace._tables.events import Strings, counters_batch, cpu_samples_batch, events_batch, logs_batch
from livetrace._tables.goroutines import goroutine_units_batch
from livetrace._tables.kernels import Scratch, Wakes, span_partition, wakers_at_ends
from livetrace._tables.schema import SCHEMAS, TABLE_NAMES
from livetrace._tables.spans import (
    STATE_COLUMNS,
    Names,
    gc_spans_batch,
    goroutine_rows,
    goroutine_states_batch,
    proc_states_batch,
    regions_batch,
    spans_batch,
    tasks_batch,
)
from livetrace._tables.stacks import StackIds
from livetrace._tables.sums import unit_sums
from livetrace._trace.accel import use_compiled
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import NO_TASK
from livetrace._trace.model.tables import Tables
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import SPAN_KIND_NAMES, SpanKind
from livetrace._trace.spec.modern import EV_GO_SWITCH, EV_GO_SWITCH_DESTROY, EV_GO_UNBLOCK, EV_USER_TASK_BEGIN

Unit = dict[str, pa.RecordBatch]

# Events that make another goroutine (arg0) runnable: the event's goroutine woke it.
_WAKES = (EV_GO_UNBLOCK, EV_GO_SWITCH, EV_GO_SWITCH_DESTROY)
# open_counts' goroutine states, as counters.
_GOROUTINE_COUNTS = (SpanKind.RUNNING, SpanKind.RUNNABLE, SpanKind.BLOCKED, SpanKind.SYSCALL)
_COUNT_NAMES = pa.array([f"goroutines:{SPAN_KIND_NAMES[k]}" for k in _GOROUTINE_COUNTS], pa.string())


def _empty_batch(table: str) -> pa.RecordBatch:
    s = SCHEMAS[table]
    return pa.record_batch([pa.array([], f.type) for f in s], schema=s)


def _concat(table: str, batches: list[pa.RecordBatch], columns: Sequence[str] | None = None) -> pa.RecordBatch:
    """The batches as one (a table's, or those of its columns named)."""
    if not batches:
        empty = _empty_batch(table)
        return empty if columns is None else empty.select(columns)
    return batches[0] if len(batches) == 1 else pa.concat_batches(batches)


def _wakers(rows: pa.RecordBatch, events: pa.RecordBatch, *, compiled: bool | None = None) -> pa.Array:
    """Per goroutine-state row, the goroutine whose event ended it by making
    it runnable (an unblock at the row's end, of the row's goroutine); null
    where the row's end is (a row not asked about)."""
    ends, goroutines = rows["end"], rows["resource_id"]
    codes, times, woken, wakers = events["event"].indices, events["time"], events["arg0"], events["goroutine"]
    # A lookup by time: the first wake at the row's end, kept where it
    # woke the row's goroutine. Where it woke another, two wakes may share
    # that time (a legacy trace's ties): then the join on both.
    got = wakers_at_ends(ends, goroutines, codes, times, woken, wakers, _WAKES, compiled=use_compiled(compiled))
    if not isinstance(got, Wakes):
        return got
    right = (
        pa.table({"goroutine": got.woken, "end": got.times, "waker": got.wakers})
        .group_by(["goroutine", "end"])
        .aggregate([("waker", "min")])
    )
    left = pa.table({"goroutine": goroutines, "end": ends, "row": strided(len(ends), 1)})
    joined = left.join(right, ["goroutine", "end"], join_type="left outer").sort_by("row")
    return joined["waker_min"].combine_chunks()


def _blocked_wakers(rows: pa.RecordBatch, events: pa.RecordBatch, *, compiled: bool) -> pa.Array:
    """_wakers of the blocked rows (only a waiting goroutine is woken), null
    for the others: their ends are null, so the rows need no filtering and
    the answer no scattering back among them."""
    blocked = pc.equal(rows["kind"].indices, pa.scalar(int(SpanKind.BLOCKED), pa.int32()))
    asked = pa.record_batch([null_where_not(rows["end"], blocked), rows["resource_id"]], names=["end", "resource_id"])
    return _wakers(asked, events, compiled=compiled)


class Run(NamedTuple):
    """Consecutive batches of a unit that share one tables (``gen``; a
    batch with none among them). ``tabled``: per row, whether its batch
    had the run's tables (None: every row's did)."""

    batches: list[EventBatch]
    gen: Tables | None
    tabled: pa.Array | None


def merged_events(batches: Sequence[EventBatch]) -> list[Run]:
    """Consecutive batches of one tables as one run: the kernels then run
    once per unit, not once per (often small) batch, whose fixed cost would
    dominate, and read each batch where it is (kernels.event_columns). A
    batch with no tables (a trace's closing Sync) joins the run it follows,
    its rows marked, rather than making a run of its own."""
    out: list[Run] = []
    run: list[EventBatch] = []
    for b in batches:
        if not len(b):
            continue
        gen = next((r.gen for r in run if r.gen is not None), None)
        if b.gen is not None and gen is not None and b.gen is not gen:
            out.append(_run(run))
            run = []
        run.append(b)
    if run:
        out.append(_run(run))
    return out


def _run(run: list[EventBatch]) -> Run:
    gen = next((b.gen for b in run if b.gen is not None), None)
    tabled = None
    if gen is not None and any(b.gen is None for b in run):
        tabled = pa.concat_arrays([full(b.gen is not None, len(b), pa.bool_()) for b in run])
    return Run(run, gen, tabled)


class Spans(NamedTuple):
    """A unit's spans of one names table as one batch, partitioned (kernels.span_partition)."""

    batch: SpanBatch
    states: int  # its first rows: the goroutine states
    procs: int  # the P spans after them


def merged_spans(
    batches: Sequence[SpanBatch], *, compiled: bool | None = None, scratch: Scratch | None = None
) -> list[Spans]:
    """The batches as one, where they share one names table (one builder's:
    their tables keys are that builder's too); else each as its own. Its
    rows partitioned while joined: the goroutine states, which are nearly
    every span, are then a slice of the spans' columns, not a copy.
    ``scratch``: as for kernels.span_partition, where there is one group
    (groups are all made before any is read)."""
    bs = [b for b in batches if len(b)]
    groups = [bs] if all(b.names_table is bs[0].names_table for b in bs) else [[b] for b in bs]
    kept = scratch if len(groups) == 1 else None
    out = []
    for group in filter(None, groups):
        cols, states, procs = span_partition(group, compiled=use_compiled(compiled), scratch=kept)
        tables = {k: t for b in group for k, t in b.tables.items()}
        out.append(Spans(SpanBatch(cols, tables, group[-1].names_table), states, procs))
    return out


def _note_parents(parents: dict[int, int], events: pa.RecordBatch) -> None:
    """The parents the unit's task begins name."""
    begins = pc.equal(events["event"].indices, pa.scalar(EV_USER_TASK_BEGIN, pa.int32()))
    tasks, of = events["arg0"].filter(begins).to_pylist(), events["arg1"].filter(begins).to_pylist()
    parents.update((task, parent) for task, parent in zip(tasks, of, strict=True) if parent != NO_TASK)


class Built(NamedTuple):
    """A unit built as far as its order matters: ``unit`` holds every table
    but the sums of its goroutine states (the tables of sums.py), which
    ``rest`` makes from ``unit``'s rows alone: in any thread, in any order,
    while the next unit is built (they are a third of a unit's build)."""

    unit: Unit
    rest: Callable[[], Unit]

    def whole(self) -> Unit:
        """Every table's rows, in TABLE_NAMES' order."""
        out = {**self.unit, **self.rest()}
        return {name: out[name] for name in TABLE_NAMES}


class UnitBuilder:
    """Units to tables. ``stacks`` dedups stacks and frames for every unit
    it builds (pass one to share it between builders); ``compiled`` as for
    :func:`livetrace.open_decoder`: which core's kernels run."""

    def __init__(self, stacks: StackIds | None = None, *, compiled: bool | None = None) -> None:
        self._compiled = use_compiled(compiled)
        self.stacks = stacks or StackIds(compiled=self._compiled)
        self._strings = Strings(compiled=self._compiled)
        self._names = Names()
        # Memory for the columns read only while a unit is built, kept for the next.
        self._scratch = Scratch()
        # Per capture, the parents of its tasks begun and not yet ended.
        self._parents: dict[int, dict[int, int]] = {}

    def forget(self, capture: int) -> None:
        """The capture ended: its tasks still open are its own (a live
        session's next segment is a capture of its own), so let go of them."""
        self._parents.pop(capture, None)

    def build(
        self,
        capture: int,
        events: Sequence[EventBatch],
        spans: Sequence[SpanBatch],
        open_counts: tuple[int, Mapping[SpanKind, int]] | None = None,
        *,
        names_upto: int | None = None,
    ) -> Built:
        """Every table's rows of one unit: its event batches, the spans that
        ended in them, and (time, SpanBuilder.open_counts()) at its end for
        the goroutines-by-state counters. ``names_upto``: how many names the
        spans' names table had at the unit's end (None: all it has; it
        grows while a later unit's batches are fed). ``captures`` is left empty: a
        capture's row is made once, at its end (captures.py). Built as far as
        it must follow the units before (the stacks, frames and task parents
        this builder keeps): ``Built.whole()`` makes the rest, in any thread."""
        generation = next((b.gen.gen for b in events if b.gen is not None), 0)
        ev = [
            events_batch(capture, r.batches, r.gen, self.stacks, self._strings, generation, r.tabled, self._scratch)
            for r in merged_events(events)
        ]
        per_batch = {
            "logs": [logs_batch(e) for e in ev],
            "counters": [counters_batch(e) for e in ev],
            "cpu_samples": [cpu_samples_batch(e) for e in ev],
        }
        event_rows = _concat("events", ev)
        parents = self._parents.setdefault(capture, {})
        _note_parents(parents, event_rows)
        parts = [
            (
                spans_batch(
                    capture, p.batch, self.stacks, self._names, parents, compiled=self._compiled, names_upto=names_upto
                ),
                p,
            )
            for p in merged_spans(spans, compiled=self._compiled, scratch=self._scratch)
        ]
        sp = _concat("spans", [s for s, _ in parts])
        tasks = tasks_batch(sp)
        for task in tasks["task"].to_pylist():  # ended: its parent is in its row now
            parents.pop(task, None)
        rows = _concat("spans", [goroutine_rows(s, p.states) for s, p in parts], STATE_COLUMNS)
        states = goroutine_states_batch(rows, _blocked_wakers(rows, event_rows, compiled=self._compiled))
        procs = _concat("proc_states", [proc_states_batch(capture, s, p.states, p.procs) for s, p in parts])
        units = goroutine_units_batch(
            capture, generation, event_rows, states, self.stacks.rootless, compiled=self._compiled
        )
        out: Unit = {
            "events": event_rows,
            "goroutine_states": states,
            "goroutine_units": units,
            "proc_states": procs,
            "spans": sp,
            "gc_spans": gc_spans_batch(sp),
            "tasks": tasks,
            "regions": regions_batch(sp),
            "logs": _concat("logs", per_batch["logs"]),
            "counters": _concat("counters", [*per_batch["counters"], self._counts(capture, open_counts)]),
            "cpu_samples": _concat("cpu_samples", per_batch["cpu_samples"]),
        }
        out["stacks"], out["frames"] = self.stacks.take_new()
        out["captures"] = _empty_batch("captures")
        return Built(out, partial(unit_sums, capture, generation, states, units, compiled=self._compiled))

    @staticmethod
    def _counts(capture: int, open_counts: tuple[int, Mapping[SpanKind, int]] | None) -> pa.RecordBatch:
        if open_counts is None:
            return _empty_batch("counters")
        time, counts = open_counts
        n = len(_GOROUTINE_COUNTS)
        return pa.record_batch(
            [
                full(capture, n, pa.int64()),
                full(time, n, pa.int64()),
                names(pa.array(range(n), pa.int32()), _COUNT_NAMES),
                pa.array([counts.get(k, 0) for k in _GOROUTINE_COUNTS], pa.int64()),
            ],
            schema=SCHEMAS["counters"],
        )
