"""top's sums ask root_of for a goroutine's start function once per
(tables, stack), in both twins: the compiled one caches every answer, an
unnamed root (0) too, and the twin asked again each batch while the
goroutine's name was 0 (hypothesis found it: the same sums, other calls)."""

from __future__ import annotations

import os
from array import array

import pytest

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


def asked(sums: TopSums | ccore.TopSums, roots: dict[int, int]) -> list[tuple[int, int]]:
    calls: list[tuple[int, int]] = []

    def root_of(tok: int, stack: int) -> int:
        calls.append((tok, stack))
        return roots.get(stack, 0)

    for index in range(3):  # the same goroutine blocked on the same stack, a batch each
        cols = [
            array("B", [SpanKind.BLOCKED]),
            array("B", [1]),  # a goroutine's span
            array("q", [7]),
            array("q", [0]),
            array("q", [10]),
            array("I", [0]),
            array("I", [0]),
            array("Q", [33]),
            array("Q", [0]),
            array("I", [0]),
            array("I", [0]),
        ]
        k, rk, rid, start, end, reason, name, ss, es, st, et = (memoryview(c) for c in cols)
        sums.feed(
            k, rk, rid, start, end, reason, name, ss, es, st, et, memoryview(array("I", [0])), None, index, root_of
        )
    return calls


@pytest.mark.parametrize("roots", [{}, {33: 2}], ids=["unnamed", "named"])
def test_root_of_is_asked_alike(roots: dict[int, int]) -> None:
    assert asked(ccore.TopSums(), roots) == asked(TopSums(), roots) == [(0, 33)]
