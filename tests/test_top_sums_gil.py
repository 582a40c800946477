"""The compiled TopSums adds a batch's spans up without the GIL (the pool's
threads run meanwhile), taking it back only to ask root_of: an answer, an
exception and a call back into the sums all come through that hand-over,
and the sums stay usable after. Its take groups and sorts without it too."""

from __future__ import annotations

import os
from array import array

import pytest

from livetrace._trace.accel import ccore
from livetrace._trace.spans.model import SpanKind
from livetrace._views.top_sums import RootOf, TopSums

from .gilcheck import lets_the_gil_go

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("LIVETRACE_PURE_PYTHON") == "1", reason="the compiled sums' GIL; runs on the compiled pass"
    ),
    pytest.mark.compiled_core,
]


def blocked(sums: TopSums | ccore.TopSums, goroutines: list[int], root_of: RootOf, index: int = 0) -> None:
    """One blocked span of 10 ns per goroutine, each on its own stack (a root_of question each)."""
    n = len(goroutines)
    cols = [
        array("B", [SpanKind.BLOCKED] * n),
        array("B", [1] * n),  # goroutines' spans
        array("q", goroutines),
        array("q", [0] * n),
        array("q", [10] * n),
        array("I", [0] * n),
        array("I", [0] * n),
        array("Q", [100 + g for g in goroutines]),
        array("Q", [0] * n),
        array("I", [0] * n),
        array("I", [0] * n),
    ]
    k, rk, rid, start, end, reason, name, ss, es, st, et = (memoryview(c) for c in cols)
    sums.feed(k, rk, rid, start, end, reason, name, ss, es, st, et, memoryview(array("I", [0])), None, index, root_of)


def test_answers_between_spans_give_the_twins_sums() -> None:
    def root_of(tok: int, stack: int) -> int:
        return stack % 3  # three names, asked of goroutine after goroutine

    got = []
    for sums in (ccore.TopSums(), TopSums()):
        blocked(sums, list(range(1, 200)), root_of)
        got.append(sums.take())
    assert got[0] == got[1] and len(got[0][0]) == 3


@pytest.mark.parametrize("at", [1, 50, 199])
def test_an_exception_of_root_of_comes_out_and_the_sums_go_on(at: int) -> None:
    def root_of(tok: int, stack: int) -> int:
        if stack == 100 + at:
            raise KeyError(stack)
        return 1

    sums = ccore.TopSums()
    with pytest.raises(KeyError):
        blocked(sums, list(range(1, 200)), root_of)
    blocked(sums, [500], lambda tok, stack: 2, index=1)  # usable: fed again, and taken
    rows, *_ = sums.take()
    assert {r[0] for r in rows} >= {2}


@pytest.mark.parametrize("call", ["take", "name", "name_all", "forget"])
def test_root_of_calling_back_into_the_sums_is_refused(call: str) -> None:
    sums = ccore.TopSums()
    args = {"take": (), "name": (5, 1, 0), "name_all": (bytes(8), bytes(8), 0), "forget": (0,)}[call]

    def root_of(tok: int, stack: int) -> int:
        getattr(sums, call)(*args)
        return 0

    with pytest.raises(RuntimeError, match="in use"):
        blocked(sums, [1], root_of)
    blocked(sums, [2], lambda tok, stack: 0, index=1)
    assert len(sums.take()[0]) == 1


def test_take_lets_the_gil_go() -> None:
    """take groups the goroutines and sorts the durations without the GIL
    (a generation's are millions): long enough here for another thread to
    be run on a loaded machine."""
    n = 1 << 17
    cols = [
        array("B", [SpanKind.RUNNABLE]) * n,  # sorted, for the scheduler latency
        array("B", [1]) * n,
        array("q", range(1, n + 1)),  # a goroutine each, grouped
        array("q", [0]) * n,
        array("q", range(n, 0, -1)),  # durations in reverse order
        *(array("I", [0]) * n for _ in range(2)),
        array("Q", [100]) * n,  # one stack: root_of asked once
        array("Q", [0]) * n,
        *(array("I", [0]) * n for _ in range(2)),
    ]

    def fed() -> ccore.TopSums:
        sums = ccore.TopSums()
        k, rk, rid, start, end, reason, name, ss, es, st, et = cols
        sums.feed(k, rk, rid, start, end, reason, name, ss, es, st, et, array("I", [0]), None, 0, lambda tok, stack: 1)
        return sums

    ready = [fed() for _ in range(20)]  # fed beforehand: only take is tried
    got = []
    assert lets_the_gil_go(lambda: got.append(ready.pop().take()))
    rows, kinds, _, _ = got[0]
    assert [r[1] for r in rows] == [n] and memoryview(kinds[SpanKind.RUNNABLE][0]).cast("q")[-1] == n
