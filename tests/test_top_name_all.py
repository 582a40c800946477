"""A batch's goroutine creations name their goroutines all at once
(TopSums.name_all: a busy service creates thousands a second, and a call
of name() each was most of top's work on them): the same names as name()
each, in order (a later creation of an id renames it), with ids past 2**63
as the goroutine columns hold them (negative), unnamed ones left alone; on
both twins, which agree."""

from __future__ import annotations

import os
from array import array

import pytest

from livetrace._trace.accel import ccore
from livetrace._views.top_sums import TopSums

from .test_top_sums import feed

pytestmark = [
    pytest.mark.skipif(os.environ.get("LIVETRACE_PURE_PYTHON") == "1", reason="compares both twins"),
    pytest.mark.compiled_core,
]

CREATED = [5, 6, (1 << 64) - 3, 5, 9, 7]  # 5 created twice; one id past 2**63
NAMES = [11, 12, 13, 14, 0, 15]  # 9 unnamed (a stack with no root)


def groups(sums: TopSums | ccore.TopSums) -> list[tuple[int, int]]:
    """Each goroutine's name id, from the sums of a running span of each (its own stack none: named by creation)."""
    ids = [5, 6, -3, 9, 7, 8]  # 8 never created
    n = len(ids)
    cols = [
        memoryview(array(t, v))
        for t, v in [
            ("B", [0] * n),  # running
            ("B", [1] * n),  # of a goroutine
            ("q", ids),
            ("q", [0] * n),
            ("q", [10] * n),
            ("I", [0] * n),
            ("I", [0] * n),
            ("Q", [0] * n),
            ("Q", [0] * n),
            ("I", [0] * n),
            ("I", [0] * n),
        ]
    ]
    feed(sums, cols, None, 2, lambda t, s: 99)
    return sorted((name, goroutines) for name, goroutines, *_ in sums.take()[0])


@pytest.mark.parametrize("make", [TopSums, ccore.TopSums], ids=["twin", "compiled"])
def test_name_all_names_as_name_each_in_order(make: type[TopSums]) -> None:
    one_by_one, at_once = make(), make()
    for g, name in zip(CREATED, NAMES, strict=True):
        if name:
            one_by_one.name(g - (1 << 64) if g >> 63 else g, name, 1)
    at_once.name_all(array("Q", CREATED), array("Q", NAMES), 1)
    got = groups(at_once)
    assert got == groups(one_by_one)
    assert got == [(0, 2), (12, 1), (13, 1), (14, 1), (15, 1)]  # 5 renamed 14; 9 and 8 unnamed


@pytest.mark.parametrize("make", [TopSums, ccore.TopSums], ids=["twin", "compiled"])
def test_name_all_refuses_columns_of_other_lengths(make: type[TopSums]) -> None:
    with pytest.raises(ValueError, match="as many 8-byte names as 8-byte goroutine ids"):
        make().name_all(array("Q", [1, 2]), array("Q", [3]), 0)
    with pytest.raises(ValueError, match="as many 8-byte names as 8-byte goroutine ids"):
        make().name_all(array("B", [1, 2, 3]), array("B", [4, 5, 6]), 0)  # no whole id
