"""``sched_units``, ``pprof_units`` and ``pprof_interval_units``: per unit,
the goroutine states that the ``sched_latency``, ``pprof`` and
``pprof_intervals`` views count, summed as far as their answers allow
(docs/sql.md, "The prepared views"), so that the views read these few rows
rather than every state of a set of traces.

``sched_latency`` takes exact quantiles of the runnable waits per goroutine
group: it needs each wait's duration, but not each wait, so the waits are
counted per goroutine and duration. ``pprof`` clips each interval to its
goroutine's lifetime, which only the whole capture knows (its first run, its
forever block, its latest interval): an interval that begins at or after
the goroutine's first run in its own unit begins in its lifetime, so those
are summed per goroutine, profile and stack, with their earliest start and
latest end for the view to check against the lifetime's end; each other
interval (before the goroutine's first run in the unit, where the lifetime
may begin later) is a row of its own, for the view to clip.
``pprof_interval_units`` counts the same intervals per duration too, for
``pprof_intervals``, which lists each interval's (clipped) duration.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from livetrace._tables.columns import full, sorted_by_keys
from livetrace._tables.goroutines import state_is, unit_batch
from livetrace._tables.schema import PPROF_PROFILES
from livetrace._trace.spans.model import SPAN_KIND_NAMES, SpanKind
from livetrace._views.pprof import PROFILE_RULES

PROFILE_NAMES = pa.array(PPROF_PROFILES, pa.string())  # a profile column's dictionary
_NO_PROFILE = -1


def _renamed(table: pa.Table, names: dict[str, str]) -> pa.Table:
    return table.rename_columns([names.get(n, n) for n in table.column_names])


def sched_units_batch(capture: int, generation: int, states: pa.RecordBatch) -> pa.RecordBatch:
    """The unit's ``sched_units`` rows: its runnable intervals whose end was
    seen, counted per goroutine and duration, by those."""
    waits = pc.and_(state_is(states, SpanKind.RUNNABLE), pc.invert(states["clipped_end"]))
    rows = pa.table({"goroutine": states["goroutine"], "duration": states["duration"]}).filter(waits)
    keys = ["goroutine", "duration"]
    counts = sorted_by_keys(rows.group_by(keys, use_threads=False).aggregate([("duration", "count")]), keys)
    return unit_batch(capture, generation, _renamed(counts, {"duration_count": "waits"}), "sched_units")


def _profile_of(state: str, reason: str) -> int:
    """The profile Go's ``-pprof`` counts a state in, as an index into
    PPROF_PROFILES (-1: none): _views/pprof.py's PROFILE_RULES."""
    for i, name in enumerate(PPROF_PROFILES):
        rule = PROFILE_RULES[name]
        if state == SPAN_KIND_NAMES[rule.state] and rule.counts(reason.encode()):
            return i
    return _NO_PROFILE


def profile_table(states: pa.RecordBatch) -> pa.Array:
    """The profile (_profile_of) of each pair of a state's and a reason's
    dictionary index, at state * len(reasons) + reason (int32)."""
    kinds, reasons = states["state"].dictionary.to_pylist(), states["reason"].dictionary.to_pylist()
    return pa.array([_profile_of(k, r) for k in kinds for r in reasons], pa.int32())


def _profiles(states: pa.RecordBatch) -> pa.Array:
    """Each state's profile, looked up by its state's and its reason's
    dictionary indices together: one take, whatever the rows."""
    at = pc.add(pc.multiply(states["state"].indices, len(states["reason"].dictionary)), states["reason"].indices)
    return pc.take(profile_table(states), at)


def _pprof_rows(states: pa.RecordBatch, units: pa.RecordBatch) -> tuple[pa.Table, pa.Table]:
    """The unit's intervals of a profile whose end was seen and that last a
    while (one that does not is never counted: clipping only shortens it):
    those that began at or after their goroutine's first run in the unit
    (``units``: its goroutine_units rows), and the others (of a goroutine
    that did not run in it, too)."""
    profile = _profiles(states)
    ns = states["duration"]
    counted = pc.and_(pc.and_(pc.not_equal(profile, _NO_PROFILE), pc.invert(states["clipped_end"])), pc.greater(ns, 0))
    rows = pa.table(
        {
            "goroutine": states["goroutine"],
            "profile": profile,
            "stack_id": states["start_stack_id"],
            "start": states["start"],
            "end": states["end"],
            "ns": ns,
        }
    ).filter(counted)
    first_run = pc.take(units["first_run"], pc.index_in(rows["goroutine"], value_set=units["goroutine"]))
    inside = pc.fill_null(pc.greater_equal(rows["start"], first_run), False)
    return rows.filter(inside), rows.filter(pc.invert(inside))


def _pprof_batch(capture: int, generation: int, inside: pa.Table, alone: pa.Table, table: str) -> pa.RecordBatch:
    """``table``'s rows: the intervals ``inside`` summed per its key
    (goroutine, profile, stack, and for pprof_interval_units their
    duration), by that key; then each of ``alone`` a row of its own."""
    keys = ["goroutine", "profile", "stack_id", *(["ns"] if table == "pprof_interval_units" else [])]
    sums = inside.group_by(keys, use_threads=False).aggregate(
        [("start", "count"), ("ns", "sum"), ("start", "min"), ("end", "max")]
    )
    sums = sorted_by_keys(sums, keys)
    alone = pa.table(
        {
            **{k: alone[k] for k in keys},
            "start_count": full(1, alone.num_rows, pa.int64()),
            "ns_sum": alone["ns"],
            "start_min": alone["start"],
            "end_max": alone["end"],
        }
    )
    both = pa.concat_tables([sums.select(alone.column_names).cast(alone.schema), alone])
    both = _renamed(
        both, {"start_count": "intervals", "ns_sum": "total_ns", "start_min": "first_start", "end_max": "last_end"}
    )
    names = pa.DictionaryArray.from_arrays(both["profile"].combine_chunks(), PROFILE_NAMES)
    both = both.set_column(both.column_names.index("profile"), "profile", names)
    return unit_batch(capture, generation, both, table)


def pprof_batches(
    capture: int, generation: int, states: pa.RecordBatch, units: pa.RecordBatch
) -> tuple[pa.RecordBatch, pa.RecordBatch]:
    """The unit's ``pprof_units`` and ``pprof_interval_units`` rows: its
    intervals that the profiles count (_pprof_rows) summed per goroutine,
    profile and stack, and counted per those and their duration; each that
    began before its goroutine's first run in the unit (``units``: its
    goroutine_units rows) a row of its own."""
    inside, alone = _pprof_rows(states, units)
    return (
        _pprof_batch(capture, generation, inside, alone, "pprof_units"),
        _pprof_batch(capture, generation, inside, alone, "pprof_interval_units"),
    )
