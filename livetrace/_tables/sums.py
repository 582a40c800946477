"""The unit tables summed from a unit's goroutine_states: ``sched_units``,
``blocked_units``, ``pprof_units`` and ``pprof_interval_units``
(profiles.py and goroutines.py say what their rows are).

Compiled, they are one pass over the states' columns
(_ccore/tables/units.c), without the GIL and with no Python object per
row; the twin is their pyarrow passes, a filter and a group_by per table.
Both give each table's grouped rows sorted by its key columns, each
ascending, a null stack first, and then the pprof tables' intervals that
are a row of their own, in the states' order: acero's group_by order is no
contract, and the two cores' tables are compared row for row. The views
aggregate these rows, so their answers do not depend on the order.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from livetrace._tables.columns import whole
from livetrace._tables.goroutines import blocked_units_batch, unit_batch
from livetrace._tables.profiles import PROFILE_NAMES, pprof_batches, profile_table, sched_units_batch
from livetrace._trace.accel import ccore

# Per table, its columns as table_unit_sums gives them, in that order: an
# int64 ("q"), one with a validity bitmap after it ("q?"), a dictionary
# index ("i") or a boolean ("b").
_LAYOUT: dict[str, tuple[tuple[str, str], ...]] = {
    "sched_units": (("goroutine", "q"), ("duration", "q"), ("waits", "q")),
    "blocked_units": (
        ("reason", "i"),
        ("stack_id", "q?"),
        ("clipped_end", "b"),
        ("intervals", "q"),
        ("total_ns", "q"),
        ("min_ns", "q"),
        ("max_ns", "q"),
    ),
    "pprof_units": (
        ("goroutine", "q"),
        ("profile", "i"),
        ("stack_id", "q?"),
        ("intervals", "q"),
        ("total_ns", "q"),
        ("first_start", "q"),
        ("last_end", "q"),
    ),
    "pprof_interval_units": (
        ("goroutine", "q"),
        ("profile", "i"),
        ("stack_id", "q?"),
        ("ns", "q"),
        ("intervals", "q"),
        ("first_start", "q"),
        ("last_end", "q"),
    ),
}


def unit_sums(
    capture: int, generation: int, states: pa.RecordBatch, units: pa.RecordBatch, *, compiled: bool
) -> dict[str, pa.RecordBatch]:
    """The four tables' rows of a unit, by name: from its goroutine_states
    rows and (for the pprof tables' lifetimes) its goroutine_units rows.
    ``compiled``: which core's pass."""
    if compiled:
        return _compiled(capture, generation, states, units)
    pprof, intervals = pprof_batches(capture, generation, states, units)
    return {
        "sched_units": sched_units_batch(capture, generation, states),
        "blocked_units": blocked_units_batch(capture, generation, states),
        "pprof_units": pprof,
        "pprof_interval_units": intervals,
    }


def _data(array: pa.Array) -> pa.Buffer | bytes:
    """An array's data buffer (an empty array may have none)."""
    return array.buffers()[1] or b""


def _validity(array: pa.Array) -> pa.Buffer | None:
    return array.buffers()[0] if array.null_count else None


def _compiled(
    capture: int, generation: int, states: pa.RecordBatch, units: pa.RecordBatch
) -> dict[str, pa.RecordBatch]:
    """unit_sums on the compiled core. The columns the goroutine_states
    schema makes non-null are read as they are, a validity bitmap unread."""
    cols = {c: whole(states[c]) for c in ("goroutine", "start", "end", "duration", "start_stack_id", "clipped_end")}
    kinds, reasons = whole(states["state"].indices), whole(states["reason"].indices)
    goroutines, first_runs = whole(units["goroutine"]), whole(units["first_run"])
    got = ccore.table_unit_sums(
        _data(cols["goroutine"]),
        _data(cols["start"]),
        _data(cols["end"]),
        _data(cols["duration"]),
        _data(cols["start_stack_id"]),
        _data(kinds),
        _data(reasons),
        _data(cols["clipped_end"]),
        _data(profile_table(states)),
        _data(goroutines),
        _data(first_runs),
        _validity(cols["start_stack_id"]),
        _validity(first_runs),
        states.num_rows,
        len(states["reason"].dictionary),
    )
    dictionaries = {"reason": states["reason"].dictionary, "profile": PROFILE_NAMES}
    return {
        table: unit_batch(capture, generation, _table(buffers, _LAYOUT[table], dictionaries), table)
        for table, buffers in zip(_LAYOUT, got, strict=True)
    }


def _table(
    buffers: Sequence[bytes], layout: tuple[tuple[str, str], ...], dictionaries: dict[str, pa.Array]
) -> pa.Table:
    """A table's columns over the kernel's bytes, as they are."""
    rows = len(buffers[0]) // (4 if layout[0][1] == "i" else 8)
    at, columns = 0, {}
    for name, kind in layout:
        data = pa.py_buffer(buffers[at])
        valid = pa.py_buffer(buffers[at + 1]) if kind == "q?" else None
        at += 2 if valid is not None else 1
        if kind == "i":
            indices = pa.Array.from_buffers(pa.int32(), rows, [None, data])
            columns[name] = pa.DictionaryArray.from_arrays(indices, dictionaries[name])
        else:
            columns[name] = pa.Array.from_buffers(pa.bool_() if kind == "b" else pa.int64(), rows, [valid, data])
    return pa.table(columns)
