"""top's per-span sums when names are forgotten between two takes: a
goroutine counted since the last take whose name :meth:`TopSums.forget`
drops, counted again before the next take, is one goroutine with all its
time, in both twins (the compiled one finds a goroutine's sums through its
name record, and finds them again after its name goes)."""

from __future__ import annotations

import os
from array import array

import pytest

from livetrace._trace.accel import ccore
from livetrace._trace.spans.model import RES_GOROUTINE, SpanKind
from livetrace._views.top_sums import TopSums

from .test_top_sums import feed

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("LIVETRACE_PURE_PYTHON") == "1",
        reason="compares both implementations; runs on the compiled pass",
    ),
    pytest.mark.compiled_core,
]


def spans(rows: list[tuple[SpanKind, int, int, int, int]]) -> list[memoryview]:
    """Goroutine spans (kind, goroutine, start, end, own stack), of one tables' and name id 0."""
    kinds, gs, starts, ends, stacks = zip(*rows, strict=True)
    n = len(rows)
    return [
        memoryview(array("B", kinds)),
        memoryview(array("B", [RES_GOROUTINE] * n)),
        memoryview(array("q", gs)),
        memoryview(array("q", starts)),
        memoryview(array("q", ends)),
        memoryview(array("I", [0] * n)),
        memoryview(array("I", [0] * n)),
        memoryview(array("Q", stacks)),  # start stacks: a blocked or syscall span's own
        memoryview(array("Q", stacks)),  # end stacks: a running span's own
        memoryview(array("I", [1] * n)),
        memoryview(array("I", [1] * n)),
    ]


def run(sums: TopSums | ccore.TopSums, g: int = 1) -> object:
    for name in range(2000):
        sums.name(name, 7, 1)
    first = [(SpanKind.RUNNING, g, 0, 10, 0), (SpanKind.BLOCKED, 5, 0, 20, 0), (SpanKind.SYSCALL, 1600, 0, 30, 0)]
    feed(sums, spans(first), None, 2, lambda t, s: 99)
    sums.forget(3)  # every name goes: the three counted ones too
    again = [(SpanKind.RUNNING, g, 10, 15, 4), (SpanKind.RUNNABLE, 1600, 30, 70, 0), (SpanKind.BLOCKED, 9, 0, 3, 0)]
    feed(sums, spans(again), None, 3, lambda t, s: 99)
    return sums.take()


@pytest.mark.parametrize("g", [1, 0])  # 0: a key the compiled sums' maps keep apart
def test_a_goroutine_whose_name_goes_between_takes_is_counted_once_in_both(g: int) -> None:
    fast, twin = run(ccore.TopSums(), g), run(TopSums(), g)
    assert fast == twin
    groups = fast[0]  # type: ignore[index]
    assert sum(goroutines for _, goroutines, *_ in groups) == 4  # g, 5, 1600 and 9: each once
