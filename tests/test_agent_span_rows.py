"""The agent's ``spans`` rows, read from a span batch's columns, hold what
each span's :class:`Span` object says: its kind, times, goroutine, reason,
name and task name (regions and tasks have them), on either core."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import livetrace
from livetrace._agent.policies import span_rows
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import SPAN_KIND_NAMES

CORPUS = Path(__file__).parent / "corpus"
TRACES = [
    CORPUS / "runtime" / "go126-generations.trace",
    CORPUS / "legacy" / "go-testdata" / "user_task_region_1_21_good",
]
OVER = dict.fromkeys(SPAN_KIND_NAMES, 0)  # every span
NOW = 8_000_000_000_000_000_000


def from_spans(batch: SpanBatch) -> list[dict[str, Any]]:
    """The rows as the Span objects of the batch give them."""
    guess = NOW - max(batch.ends) if len(batch) else 0
    rows = []
    for i, s in enumerate(batch):
        base = batch.tables[batch.start_tables[i]].wall_base if batch.start_tables[i] in batch.tables else None
        rows.append(
            {
                "kind": str(s.kind),
                "start_ns": s.start,
                "duration_ns": s.duration,
                "wall_start": ((base if base is not None else guess) + s.start) // 1000,
                "goroutine": s.resource.id if s.resource.kind == "Goroutine" else 0,
                "reason": s.reason,
                "name": s.name,
                "task_name": s.task_name,
            }
        )
    return rows


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_each_spans_row_holds_what_its_span_says(path: Path) -> None:
    got, wanted = [], []
    for batch in livetrace.decode_span_batches(path):
        got += span_rows(batch, OVER, NOW)
        wanted += from_spans(batch)
    assert got == wanted
    # The fields that a row reads from the names table and the resources are there to compare.
    assert {r["kind"] for r in got} >= {"running", "blocked", "region", "task"} or path.name.startswith("go126")
    assert any(r["reason"] for r in got) and any(r["goroutine"] for r in got)
    if "task" in path.name:
        assert any(r["name"] for r in got) and any(r["task_name"] for r in got)
