"""`top` shows the span of time a snapshot covers (issue 26, point 5): a
legacy trace opens with a Sync at time -1, which is no time of the trace,
and a quiet service's whole window came as one batch that began with it,
so top printed "- of trace" and `"start": -1`. On the corpus's legacy
traces, and live over http:// on a quiet service of Go 1.21.13 and 1.26.6."""

from __future__ import annotations

import json

import pytest
import trio

from livetrace._files import decode_batches
from livetrace._trace.model.batch import EventBatch
from livetrace._views.top import TopStats
from livetrace._views.top_screen import View, header

from .conftest import ROOT, cli
from .smallsvc import small_service

LEGACY = ROOT / "tests" / "corpus" / "legacy" / "go-testdata"


@pytest.mark.parametrize(
    "name", ["http_1_21_good", "http_1_19_good", pytest.param("stress_1_11_good", marks=pytest.mark.slow_twin)]
)
def test_a_legacy_trace_s_snapshot_spans_its_events(name: str) -> None:
    stats = TopStats()
    times = []
    for batch in decode_batches(LEGACY / name):
        if isinstance(batch, EventBatch):
            stats.feed(batch)
            times += [t for t in batch.times if t >= 0]
    snap = stats.snapshot()
    assert (snap.start, snap.end) == (min(times), max(times))
    assert snap.end > snap.start > 0
    assert " - of trace" not in header(snap, "a file", View()).plain


@pytest.mark.slow
@pytest.mark.parametrize("version", ["1.21", "1.26"])
async def test_top_over_http_shows_the_window_s_span(version: str) -> None:
    async with small_service("quietsvc", version) as svc:
        p = cli("top", f"http://{svc.pprof}", "--once", "--duration", "1", "--format", "json")
        out, err = await trio.to_thread.run_sync(lambda: p.communicate(timeout=120))
    assert p.returncode == 0, err
    (snap,) = [json.loads(line) for line in out.splitlines()]
    assert snap["events"] > 0, snap
    # One window of a second: its first and last events, on the trace's clock.
    assert snap["start"] >= 0 and 0.5e9 <= snap["end"] - snap["start"] <= 5e9, snap
