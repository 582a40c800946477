"""top's sorted durations: the compiled TopSums sorts each group's
durations with a radix sort that skips the bytes all of them share; its
twin sorts with Python's. Groups large enough for the radix sort (64 and
more), with durations that share some bytes and not others, negative ones
(hostile columns) and the extremes, come out the same from both."""

from __future__ import annotations

import os
from array import array

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from livetrace._trace.accel import ccore
from livetrace._trace.spans.model import SpanKind
from livetrace._views.top_sums import TopSums

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("LIVETRACE_PURE_PYTHON") == "1",
        reason="compares both implementations; runs on the compiled pass",
    ),
    pytest.mark.compiled_core,
]

DURATIONS = st.one_of(
    st.integers(0, 255),
    st.integers(0, 1 << 20),
    st.integers(-(1 << 40), 1 << 40),
    st.sampled_from([0, 1, -1, (1 << 62) - 1, -(1 << 62)]),
)


def take(sums: TopSums | ccore.TopSums, durations: list[int], kind: SpanKind) -> object:
    n = len(durations)

    def col(typ: str, values: list[int]) -> memoryview:
        return memoryview(array(typ, values))

    zeros = [0] * n
    sums.feed(
        col("B", [kind] * n),
        col("B", zeros),
        col("q", zeros),
        col("q", zeros),
        col("q", durations),
        col("I", zeros),
        col("I", zeros),
        col("Q", zeros),
        col("Q", zeros),
        col("I", zeros),
        col("I", zeros),
        col("I", [0]),
        None,
        0,
        lambda tok, stack: 0,
    )
    return sums.take()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(DURATIONS, min_size=60, max_size=700), st.sampled_from([SpanKind.GC, SpanKind.RUNNABLE]))
def test_large_groups_sort_alike(durations: list[int], kind: SpanKind) -> None:
    assert take(ccore.TopSums(), durations, kind) == take(TopSums(), durations, kind)


def test_sorted_in_order() -> None:
    """The radix sort's passes, every byte different somewhere (none skipped)."""
    durations = [((i * 0x9E3779B97F4A7C15) % (1 << 64)) - (1 << 63) for i in range(1000)]
    durations = [d // 2 for d in durations]  # end - start stays inside int64
    got = take(ccore.TopSums(), durations, SpanKind.GC)
    assert got == take(TopSums(), durations, SpanKind.GC)
    assert sorted(durations) in [list(memoryview(v[0]).cast("q")) for v in _groups(got)]


def _groups(taken: object) -> list[tuple[bytes, int]]:
    """The (durations, sum) pairs of what take gave, wherever they are."""
    out: list[tuple[bytes, int]] = []

    def walk(x: object) -> None:
        if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], bytes) and isinstance(x[1], int):
            out.append((x[0], x[1]))
        elif isinstance(x, (tuple, list)):
            for y in x:
                walk(y)
        elif isinstance(x, dict):
            for y in x.values():
                walk(y)

    walk(taken)
    return out
