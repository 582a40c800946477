"""The agent's span rows on the wall clock: from the trace's own clock
snapshot where it has one (Go 1.25+), else placed by when the batch came."""

from __future__ import annotations

from pathlib import Path

import pytest

import livetrace
from livetrace._agent.policies import span_rows
from livetrace._trace.spans.model import SPAN_KIND_NAMES

pytestmark = pytest.mark.once  # the rows of spans, whichever core built them

RUNTIME = Path(__file__).parent / "corpus" / "runtime" / "go126-generations.trace"
LEGACY = Path(__file__).parent / "corpus" / "legacy" / "go-testdata" / "http_1_21_good"
OVER = dict.fromkeys(SPAN_KIND_NAMES, 0)  # every span
NOW = 8_000_000_000_000_000_000  # a wall clock far from the trace's (the year 2223)


def test_a_go_1_26_traces_spans_are_placed_by_its_clock_snapshot() -> None:
    rows = []
    for batch in livetrace.decode_span_batches(RUNTIME):
        starts = list(batch.start_tables)
        made = span_rows(batch, OVER, NOW)
        assert len(made) == len(batch)  # every span is kept
        for row, tables in zip(made, starts, strict=True):
            base = batch.tables[tables].wall_base  # its own generation's snapshot
            assert base is not None
            assert row["wall_start"] == (base + row["start_ns"]) // 1000
        rows += made
    assert rows
    assert max(r["wall_start"] for r in rows) < NOW // 1000 // 2  # not the reader's clock


def test_a_trace_without_a_clock_is_placed_by_when_its_batch_came() -> None:
    for batch in livetrace.decode_span_batches(LEGACY):
        rows = span_rows(batch, OVER, NOW)
        if rows:
            newest = max(batch.ends)
            assert all(r["wall_start"] == (NOW - newest + r["start_ns"]) // 1000 for r in rows)
            return
    pytest.fail("no spans")
