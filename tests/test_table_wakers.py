"""Each goroutine state's waker (livetrace/_tables/kernels.py's
wakers_at_ends): the compiled pass over the events (_ccore/tables/columns.c)
gives the twin's answer, on ends with nulls and an offset, ends that do
not ascend, events at one time (wakes and others), times out of order, and
a first wake at a row's end that woke another goroutine (the wakes alone,
for the caller's join)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._tables.kernels import Wakes, wakers_at_ends
from livetrace._trace.accel import ccore

pytestmark = pytest.mark.compiled_core  # it names both cores, so the compiled pass alone runs it

_TIMES = st.integers(-3, 40)


_WAKE, _OTHER = 3, 9  # event codes: the wakes asked about are 3 and 4


def _both(ends: pa.Array, goroutines: pa.Array, events: list[tuple[int, int, int, int]]) -> list[object]:
    """Each core's answer over events of (time, code, woken, waker)."""
    times = pa.array([e[0] for e in events], pa.int64())
    codes = pa.array([e[1] for e in events], pa.int32())
    woken = pa.array([e[2] for e in events], pa.uint64())
    wakers = pa.array([e[3] for e in events], pa.int64())
    out = [wakers_at_ends(ends, goroutines, codes, times, woken, wakers, (_WAKE, 4), compiled=c) for c in (True, False)]
    return [o if isinstance(o, Wakes) else o.to_pylist() for o in out]


def test_the_first_wake_at_the_end_names_the_waker() -> None:
    ends = pa.array([10, None, 20, 5, 30], pa.int64())
    goroutines = pa.array([1, 2, 3, 4, 5], pa.int64())
    # two wakes at 10: the first counts, and it woke row 0's; an event at 20 that is no wake, then a wake
    events = [(5, _OTHER, 4, 1), (10, _WAKE, 1, 100), (10, 4, 9, 101), (20, _OTHER, 8, 7), (20, _WAKE, 3, 102)]
    compiled, twin = _both(ends, goroutines, events)
    assert compiled == twin == [100, None, 102, None, None]
    # the compiled pass answers that itself (no event but a wake counts), rather than leave it to the twin
    data, bits = bytearray(8 * len(ends)), bytearray(1)
    wakes = bytes(1 if c in (_WAKE, 4) else 0 for c in range(256))
    columns = [
        pa.array([e[k] for e in events], t).buffers()[1]
        for k, t in ((1, pa.int32()), (0, pa.int64()), (2, pa.uint64()), (3, pa.int64()))
    ]
    valid, values = ends.buffers()[0], ends.buffers()[1]
    args = (values, valid, 0, len(ends), goroutines.buffers()[1], 0, *columns, wakes, (data, bits))
    assert ccore.table_wakers(*args) == 3
    # the first wake at 20 woke another: only a join answers, given the wakes alone (the other event left out)
    both = _both(ends, goroutines, [(20, _WAKE, 8, 1), (5, _OTHER, 4, 1), (20, 4, 3, 2)])
    assert both[0] == both[1] == Wakes(*(pa.array(v, pa.int64()) for v in ([20, 20], [8, 3], [1, 2])))
    assert _both(pa.array([], pa.int64()), pa.array([], pa.int64()), events) == [[], []]


@settings(max_examples=200)
@given(
    rows=st.lists(st.tuples(st.none() | _TIMES, st.integers(0, 4)), max_size=30),
    events=st.lists(
        st.tuples(_TIMES, st.sampled_from([_WAKE, 4, _OTHER]), st.integers(0, 4), st.integers(0, 99)), max_size=20
    ),
    ordered=st.booleans(),
    offset=st.integers(0, 9),
)
def test_wakers_on_both_cores_alike(
    rows: list[tuple[int | None, int]], events: list[tuple[int, int, int, int]], ordered: bool, offset: int
) -> None:
    ends = pa.array([0] * offset + [e for e, _ in rows], pa.int64()).slice(offset)
    goroutines = pa.array([9] * offset + [g for _, g in rows], pa.int64()).slice(offset)
    compiled, twin = _both(ends, goroutines, sorted(events, key=lambda e: e[0]) if ordered else events)
    assert compiled == twin
