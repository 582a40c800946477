"""goroutine_units' per-goroutine pass over a unit's goroutine_states
(goroutines.py's _seen): the compiled one (_ccore/tables/columns.c) gives
the twin's rows, on what whole traces seldom reach: rows that tie on
their start (the greater end, the greater own stack counts), stacks null
or rootless, a reason dictionary that holds "forever" twice, goroutine 0
and negative ids, rows from an offset."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._tables.goroutines import _seen
from livetrace._trace.spans.model import SPAN_KIND_NAMES

pytestmark = pytest.mark.compiled_core  # it names both cores, so the compiled pass alone runs it

_KINDS = pa.array(SPAN_KIND_NAMES, pa.string())
_REASONS = pa.array(["", "forever", "chan receive", "forever"], pa.string())
_STACK = st.none() | st.sampled_from([1, 2, -3, 2**63 - 1, -(2**63)])
_ROW = st.tuples(
    st.sampled_from([0, 1, 7, -5, 2**40]),  # goroutine
    st.integers(0, 6),  # start: few values, so rows tie
    st.integers(0, 6),  # end - start
    st.integers(0, 3),  # state: running, runnable, blocked, syscall
    st.integers(0, 3),  # reason
    _STACK,
    _STACK,
)


def _states(rows: list[tuple[int, int, int, int, int, int | None, int | None]], offset: int) -> pa.RecordBatch:
    pad = [rows[0]] * offset if rows else []
    every = pad + rows
    start, length = [r[1] for r in every], [r[2] for r in every]
    batch = pa.record_batch(
        {
            "goroutine": pa.array([r[0] for r in every], pa.int64()),
            "start": pa.array(start, pa.int64()),
            "end": pa.array([s + n for s, n in zip(start, length, strict=True)], pa.int64()),
            "state": pa.DictionaryArray.from_arrays(pa.array([r[3] for r in every], pa.int32()), _KINDS),
            "reason": pa.DictionaryArray.from_arrays(pa.array([r[4] for r in every], pa.int32()), _REASONS),
            "start_stack_id": pa.array([r[5] for r in every], pa.int64()),
            "end_stack_id": pa.array([r[6] for r in every], pa.int64()),
        }
    )
    return batch.slice(offset)


def _rows(t: pa.Table) -> list[dict[str, object]]:
    return sorted(t.select(sorted(t.column_names)).to_pylist(), key=lambda r: str(r["goroutine"]))


@settings(max_examples=150)
@given(rows=st.lists(_ROW, max_size=40), offset=st.integers(0, 9), rootless=st.sets(st.sampled_from([2, -3, 5])))
def test_seen_on_both_cores_alike(
    rows: list[tuple[int, int, int, int, int, int | None, int | None]], offset: int, rootless: set[int]
) -> None:
    states = _states(rows, offset)
    compiled = _seen(states, rootless, compiled=True)
    assert _rows(compiled) == _rows(_seen(states, rootless, compiled=False))
    assert compiled.num_rows == len({r[0] for r in rows})


def test_ties_at_a_start_take_the_greater() -> None:
    """Two rows of a goroutine at its latest start, two own stacks at its
    earliest: the greater end, the greater stack (as SQL's max over them)."""
    rows = [
        (1, 5, 1, 2, 0, 2, None),  # blocked at 5: own stack 2
        (1, 5, 3, 0, 0, None, -3),  # running at 5: own stack -3 (its end stack); the latest end, 8
        (1, 5, 2, 3, 0, 7, None),  # syscall at 5: own stack 7, the greatest
        (1, 9, 1, 1, 1, 4, 4),  # runnable at 9: no own stack; the latest start
        (1, 9, 4, 2, 3, None, None),  # blocked forever at 9 (the dictionary's second "forever"), no stack
    ]
    for compiled in (True, False):
        (got,) = _seen(_states(rows, 0), set(), compiled=compiled).to_pylist()
        assert got == {
            "goroutine": 1,
            "first_seen": 5,
            "last_seen": 13,
            "last_start": 9,
            "last_end": 13,
            "first_run": 5,
            "forever": 9,
            "own_stack_id": 7,
            "own_stack_start": 5,
        }, compiled
