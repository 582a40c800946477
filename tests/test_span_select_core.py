"""The core's span_select and span_take (what select_spans runs, compiled):
they choose and gather a batch's rows without the GIL, so that the pool's
threads select a generation's batches at once; a row out of range is a
typed error. Their agreement with the twin is test_spans.py's."""

from __future__ import annotations

from array import array

import pytest

from livetrace._trace.spans.batch import COLUMNS

from .gilcheck import lets_the_gil_go

pytestmark = pytest.mark.compiled_core


def columns(n: int) -> list[memoryview]:
    cols = [array(code, [0]) * n for _, code in COLUMNS]
    cols[4] = array("q", range(n))  # ends: span i lasts i ns
    return [memoryview(c).cast("B") for c in cols]


def test_take_refuses_a_row_out_of_range_and_gathers_the_rest() -> None:
    from livetrace._trace.accel import ccore

    cols = columns(4)
    with pytest.raises(IndexError, match="out of range"):
        ccore.span_take(cols, array("I", [1, 4]).tobytes())
    taken = ccore.span_take(cols, array("I", [3, 1]).tobytes())
    assert memoryview(taken[4]).cast("q").tolist() == [3, 1] and len(taken) == len(COLUMNS)


def test_select_and_take_let_the_gil_go() -> None:
    from livetrace._trace.accel import ccore

    n = 1 << 18
    cols = columns(n)
    rows = ccore.span_select(cols, None, None, None, None, None, n // 2, None)
    assert memoryview(rows).cast("I").tolist() == list(range(n // 2, n))
    assert lets_the_gil_go(lambda: ccore.span_select(cols, None, None, None, None, None, 1, None))
    assert lets_the_gil_go(lambda: ccore.span_take(cols, rows))
