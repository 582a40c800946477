"""One unit (a generation, a legacy segment, a pprof window) to one
RecordBatch per table.

:class:`UnitBuilder` takes a unit's decoded batches and the spans that ended
in them (already joined, by SpanBuilder or SpanJoin) and gives every table's
rows of that unit: the core's columns in, Arrow out, with no Python object
per row. What it keeps between units is small and per distinct thing, not
per event: the stacks and frames it has emitted (each once) and the tasks'
parents. A pipeline may run one per worker, a unit at a time, each unit
becoming one Parquet row group; the stable stack ids (stacks.py) make the
stacks two workers both emit the same rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from livetrace._tables.columns import full, names
from livetrace._tables.events import Strings, counters_batch, cpu_samples_batch, events_batch, logs_batch
from livetrace._tables.schema import SCHEMAS, TABLE_NAMES
from livetrace._tables.spans import (
    Names,
    goroutine_rows,
    goroutine_states_batch,
    proc_states_batch,
    regions_batch,
    spans_batch,
    tasks_batch,
)
from livetrace._tables.stacks import StackIds
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import NO_TASK
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import SPAN_KIND_NAMES, SpanKind
from livetrace._trace.spec.modern import EV_GO_SWITCH, EV_GO_SWITCH_DESTROY, EV_GO_UNBLOCK, EV_USER_TASK_BEGIN

Unit = dict[str, pa.RecordBatch]

# Events that make another goroutine (arg0) runnable: the event's goroutine woke it.
_WAKES = pa.array([EV_GO_UNBLOCK, EV_GO_SWITCH, EV_GO_SWITCH_DESTROY], pa.int32())
# open_counts' goroutine states, as counters.
_GOROUTINE_COUNTS = (SpanKind.RUNNING, SpanKind.RUNNABLE, SpanKind.BLOCKED, SpanKind.SYSCALL)
_COUNT_NAMES = pa.array([f"goroutines:{SPAN_KIND_NAMES[k]}" for k in _GOROUTINE_COUNTS], pa.string())


def _empty_batch(table: str) -> pa.RecordBatch:
    s = SCHEMAS[table]
    return pa.record_batch([pa.array([], f.type) for f in s], schema=s)


def _concat(table: str, batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if not batches:
        return _empty_batch(table)
    return batches[0] if len(batches) == 1 else pa.concat_batches(batches)


def _wakers(rows: pa.RecordBatch, events: pa.RecordBatch) -> pa.Array:
    """Per goroutine-state row, the goroutine whose event ended it by making
    it runnable (an unblock at the row's end, of the row's goroutine)."""
    wakes = events.filter(pc.is_in(events["event"].indices, value_set=_WAKES))
    if not wakes.num_rows or not rows.num_rows:
        return full(None, rows.num_rows, pa.int64())
    right = (
        pa.table(
            {
                "goroutine": pc.cast(wakes["arg0"], pa.int64(), safe=False),
                "end": wakes["time"],
                "waker": wakes["goroutine"],
            }
        )
        .group_by(["goroutine", "end"])
        .aggregate([("waker", "min")])
    )
    left = pa.table({"goroutine": rows["resource_id"], "end": rows["end"], "row": _row_numbers(rows.num_rows)})
    joined = left.join(right, ["goroutine", "end"], join_type="left outer").sort_by("row")
    return joined["waker_min"].combine_chunks()


def _row_numbers(n: int) -> pa.Array:
    return pc.subtract(pc.cumulative_sum(full(1, n, pa.int64())), pa.scalar(1, pa.int64()))


class UnitBuilder:
    """Units to tables. ``stacks`` dedups stacks and frames for every unit
    it builds (pass one to share it between builders)."""

    def __init__(self, stacks: StackIds | None = None) -> None:
        self.stacks = stacks or StackIds()
        self._strings = Strings()
        self._names = Names()
        self._parents: dict[tuple[int, int], int] = {}  # (capture, task) -> parent

    def build(
        self,
        capture: int,
        events: Sequence[EventBatch],
        spans: Sequence[SpanBatch],
        open_counts: tuple[int, Mapping[SpanKind, int]] | None = None,
    ) -> Unit:
        """Every table's rows of one unit: its event batches, the spans that
        ended in them, and (time, SpanBuilder.open_counts()) at its end for
        the goroutines-by-state counters. ``captures`` is left empty: a
        capture's row is made once, at its end (captures.py)."""
        ev = [events_batch(capture, b, self.stacks, self._strings) for b in events if len(b)]
        per_batch = {
            "logs": [logs_batch(e) for e in ev],
            "counters": [counters_batch(e) for e in ev],
            "cpu_samples": [cpu_samples_batch(e) for e in ev],
        }
        event_rows = _concat("events", ev)
        self._note_parents(capture, event_rows)
        parents = {t: p for (c, t), p in self._parents.items() if c == capture}
        sp = _concat("spans", [spans_batch(capture, s, self.stacks, self._names, parents) for s in spans if len(s)])
        rows = goroutine_rows(sp)
        out: Unit = {
            "events": event_rows,
            "goroutine_states": goroutine_states_batch(rows, _wakers(rows, event_rows)),
            "proc_states": proc_states_batch(sp),
            "spans": sp,
            "tasks": tasks_batch(sp),
            "regions": regions_batch(sp),
            "logs": _concat("logs", per_batch["logs"]),
            "counters": _concat("counters", [*per_batch["counters"], self._counts(capture, open_counts)]),
            "cpu_samples": _concat("cpu_samples", per_batch["cpu_samples"]),
        }
        out["stacks"], out["frames"] = self.stacks.take_new()
        out["captures"] = _empty_batch("captures")
        return {name: out[name] for name in TABLE_NAMES}

    def _note_parents(self, capture: int, events: pa.RecordBatch) -> None:
        begins = events.filter(pc.equal(events["event"].indices, pa.scalar(EV_USER_TASK_BEGIN, pa.int32())))
        for task, parent in zip(begins["arg0"].to_pylist(), begins["arg1"].to_pylist(), strict=True):
            if parent != NO_TASK:
                self._parents[capture, task] = parent

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
