"""Each goroutine state's waker (livetrace/_tables/kernels.py's
wakers_at_ends): the compiled pass (_ccore/tables/columns.c) gives the
twin's answer, on ends with nulls and an offset, ends that do not ascend,
wakes at one time, times out of order, and a first wake at a row's end
that woke another goroutine (None: the caller joins)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._tables.kernels import wakers_at_ends

pytestmark = pytest.mark.compiled_core  # it names both cores, so the compiled pass alone runs it

_TIMES = st.integers(-3, 40)


def _both(ends: pa.Array, goroutines: pa.Array, wakes: list[tuple[int, int, int]]) -> list[object]:
    times = pa.array([t for t, _, _ in wakes], pa.int64())
    woken = pa.array([w for _, w, _ in wakes], pa.uint64())
    wakers = pa.array([k for _, _, k in wakes], pa.int64())
    out = [wakers_at_ends(ends, goroutines, times, woken, wakers, compiled=c) for c in (True, False)]
    return [None if o is None else o.to_pylist() for o in out]


def test_the_first_wake_at_the_end_names_the_waker() -> None:
    ends = pa.array([10, None, 20, 5, 30], pa.int64())
    goroutines = pa.array([1, 2, 3, 4, 5], pa.int64())
    wakes = [(10, 1, 100), (10, 9, 101), (20, 3, 102)]  # two at 10: the first counts, and it woke row 0's
    compiled, twin = _both(ends, goroutines, wakes)
    assert compiled == twin == [100, None, 102, None, None]
    # the first at 20 woke another: only a join answers
    assert _both(ends, goroutines, [(20, 8, 1), (20, 3, 2)]) == [None, None]


@settings(max_examples=200)
@given(
    rows=st.lists(st.tuples(st.none() | _TIMES, st.integers(0, 4)), max_size=30),
    wakes=st.lists(st.tuples(_TIMES, st.integers(0, 4), st.integers(0, 99)), min_size=1, max_size=20),
    ordered=st.booleans(),
    offset=st.integers(0, 9),
)
def test_wakers_on_both_cores_alike(
    rows: list[tuple[int | None, int]], wakes: list[tuple[int, int, int]], ordered: bool, offset: int
) -> None:
    ends = pa.array([0] * offset + [e for e, _ in rows], pa.int64()).slice(offset)
    goroutines = pa.array([9] * offset + [g for _, g in rows], pa.int64()).slice(offset)
    compiled, twin = _both(ends, goroutines, sorted(wakes) if ordered else wakes)
    assert compiled == twin
