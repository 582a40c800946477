"""top's per-span sums: the compiled TopSums (_ccore/views/top.c) against
its twin (_views/top_sums.py), on the same spans: the same sums, in the
same order, and so the same snapshots (every field, groups in order), on
the corpus, with snapshots taken mid-trace, and on hostile columns (the
same error)."""

from __future__ import annotations

import os
from array import array
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from livetrace._files import decode_batches
from livetrace._items import Notice
from livetrace._trace.accel import ccore
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.spans.builder import SpanBuilder
from livetrace._views.top import TopStats
from livetrace._views.top_screen import snapshot_dict
from livetrace._views.top_sums import RootOf, TopSums

from . import textform

CORPUS = textform.CORPUS.parent
pytestmark = [
    pytest.mark.skipif(
        os.environ.get("LIVETRACE_PURE_PYTHON") == "1",
        reason="compares both implementations; runs on the compiled pass",
    ),
    pytest.mark.compiled_core,
]
SMALL = ["legacy/go-testdata/user_task_region_1_21_good", "legacy/go-testdata/http_1_19_good"]
LARGE = [
    "legacy/go-testdata/stress_1_21_good",
    "legacy/go-testdata/stress_1_11_good",
    "runtime/go126-empty-stack-last.trace",
]


def feed(sums: TopSums | ccore.TopSums, cols: list[memoryview], since: int | None, index: int, root_of: RootOf) -> None:
    k, rk, rid, start, end, reason, name, ss, es, st, et = cols
    ids = memoryview(array("I", range(max(max(reason, default=0), max(name, default=0)) + 1)))  # as they are
    sums.feed(k, rk, rid, start, end, reason, name, ss, es, st, et, ids, since, index, root_of)


def snapshots(path: Path, compiled: bool, every: int) -> list[dict[str, Any]]:
    """TopStats over the file, a snapshot every ``every`` batches and at the end."""
    stats = TopStats(compiled=compiled)
    out = []
    n = 0
    for item in decode_batches(path, compiled=True):
        if isinstance(item, EventBatch):
            stats.feed(item)
            n += 1
            if n % every == 0:
                out.append(snapshot_dict(stats.snapshot()))
        elif isinstance(item, Notice):
            stats.notice(item)
    out.append(snapshot_dict(stats.snapshot()))
    return out


@pytest.mark.parametrize("name", [*SMALL, *(pytest.param(n, marks=pytest.mark.slow) for n in LARGE)])
@pytest.mark.parametrize("every", [1, 3, 1000])
def test_snapshots_of_both_twins_are_equal(name: str, every: int) -> None:
    fast = snapshots(CORPUS / name, True, every)
    twin = snapshots(CORPUS / name, False, every)
    assert fast == twin
    assert [list(s["groups"]) for s in fast] == [list(s["groups"]) for s in twin]  # in one order


def test_names_are_forgotten_alike() -> None:
    """Goroutine names not seen for a while are dropped, by both, once there are many."""
    for sums in (TopSums(), ccore.TopSums()):
        for g in range(2000):
            sums.name(g, 7, 1 if g < 1500 else 5)
        sums.forget(3)
        rows = []
        for g in (1, 1600):
            one = [("B", 0), ("B", 1), ("q", g), ("q", 0), ("q", 10), ("I", 0), ("I", 0), ("Q", 0), ("Q", 0)]
            cols = [memoryview(array(t, [v])) for t, v in [*one, ("I", 0), ("I", 0)]]
            feed(sums, cols, None, 9, lambda t, s: 99)
            rows += sums.take()[0]
        assert [(name, goroutines) for name, goroutines, *_ in rows] == [(0, 1), (7, 1)]


ANY_I64 = st.one_of(st.integers(-3, 50), st.integers(-(1 << 63), (1 << 63) - 1))


@st.composite
def columns(draw: st.DrawFn) -> list[memoryview]:
    n = draw(st.integers(0, 12))

    def col(typ: str, values: st.SearchStrategy[int]) -> memoryview:
        return memoryview(array(typ, draw(st.lists(values, min_size=n, max_size=n))))

    small = st.integers(0, 3)
    return [
        col("B", st.integers(0, 9)),
        col("B", st.integers(0, 3)),
        col("q", st.integers(-1, 4)),
        col("q", ANY_I64),
        col("q", ANY_I64),
        col("I", small),
        col("I", small),
        col("Q", st.one_of(small, st.integers(0, (1 << 64) - 1))),
        col("Q", small),
        col("I", small),
        col("I", small),
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(columns(), max_size=3), st.one_of(st.none(), ANY_I64))
def test_twins_agree_on_hostile_columns(batches: list[list[memoryview]], since: int | None) -> None:
    def run(sums: TopSums | ccore.TopSums) -> object:
        asked: list[tuple[int, int]] = []

        def root_of(tok: int, stack: int) -> int:
            asked.append((tok, stack))
            if stack == 3:
                raise KeyError(stack)  # a stack the tables lack
            return stack % 3

        try:
            for i, cols in enumerate(batches):
                feed(sums, cols, since, i, root_of)
            return sums.take(), asked
        except Exception as e:
            return type(e).__name__, str(e), asked

    assert run(ccore.TopSums()) == run(TopSums())


def test_spans_of_the_builder_feed_both_alike() -> None:
    """The sums themselves (before TopStats reads them), a batch at a time."""
    b = SpanBuilder()
    fast, twin = ccore.TopSums(), TopSums()
    path = CORPUS / "legacy/go-testdata/http_1_19_good"
    for i, item in enumerate(x for x in decode_batches(path) if isinstance(x, EventBatch)):
        spans = b.feed(item)
        cols = [spans.columns()[k] for k in (0, 1, 2, 3, 4, 9, 10, 5, 6, 7, 8)]
        for sums in (fast, twin):
            feed(sums, cols, 1000 * i, i, lambda t, s: s % 5)
        assert fast.take() == twin.take()
