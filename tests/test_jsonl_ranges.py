"""The GC's sweep and mark-assist ranges, the ranges a busy service has by
the ten thousand, are written by the compiled JSON writer (jsonl.c), not
handed to the twin a line at a time: on any columns of those codes
(active, begin, end; any P and goroutine, -1 included; any arguments) its
lines, exact and provisional, are the twin's bytes."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._trace.model.batch import NARGS, NEXTRA, EventBatch
from livetrace._trace.model.tables import Tables
from livetrace._trace.spec.modern import (
    EV_GC_MARK_ASSIST_ACTIVE,
    EV_GC_MARK_ASSIST_BEGIN,
    EV_GC_MARK_ASSIST_END,
    EV_GC_SWEEP_ACTIVE,
    EV_GC_SWEEP_BEGIN,
    EV_GC_SWEEP_END,
    EV_GO_START,
)

from .conftest import examples
from .twinenv import jsonl_of

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("LIVETRACE_PURE_PYTHON") == "1",
        reason="compares both implementations; runs on the compiled pass",
    ),
    pytest.mark.compiled_core,
]

RANGES = [
    EV_GC_SWEEP_ACTIVE,
    EV_GC_SWEEP_BEGIN,
    EV_GC_SWEEP_END,
    EV_GC_MARK_ASSIST_ACTIVE,
    EV_GC_MARK_ASSIST_BEGIN,
    EV_GC_MARK_ASSIST_END,
]
CODES = st.one_of(st.sampled_from(RANGES), st.just(EV_GO_START))
ARG = st.one_of(st.integers(0, 3), st.integers(0, 2**64 - 1))
ID = st.one_of(st.integers(-1, 9), st.integers(-(2**63), 2**63 - 1))


def _tables(wall: bool) -> Tables:
    g = Tables(gen=2)
    g.strings.update({1: b"reason"})
    g.frames.update({0x401000: (1, 1, 17)})
    g.stacks.update({1: (0x401000,), 2: (0x401000, 0x401000)})
    if wall:
        g.wall_origin = 1_700_000_000_123_456_789
    return g


def _i64(v: int) -> bytes:
    return v.to_bytes(8, "little", signed=True)


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.tuples(CODES, ID, ID, st.lists(ARG, min_size=NARGS + NEXTRA, max_size=NARGS + NEXTRA)),
        min_size=1,
        max_size=12,
    ),
    st.booleans(),
)
def test_range_lines_are_the_twins(events: list[tuple[int, int, int, list[int]]], wall: bool) -> None:
    n = len(events)
    cols = (
        bytes(c for c, *_ in events),
        b"".join(_i64(1000 + i) for i in range(n)),
        b"".join(_i64(5) for _ in range(n)),
        b"".join(_i64(p) for _, p, _, _ in events),
        b"".join(_i64(g) for _, _, g, _ in events),
        b"".join(v.to_bytes(8, "little") for *_, vals in events for v in vals[:NARGS]),
        b"".join(v.to_bytes(8, "little") for *_, vals in events for v in vals[NARGS:]),
    )
    batch = EventBatch(_tables(wall), n, cols)
    for provisional in (False, True):
        fast = jsonl_of(batch, True, provisional)
        assert fast == jsonl_of(batch, False, provisional)
        assert isinstance(fast, str) or fast.count(b"\n") == n
