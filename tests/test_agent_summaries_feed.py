"""The agent's summaries and spans over thresholds from one span
subscription with marks and one of summarized batches (as ``top`` reads a
session): each summary is the snapshot of its generation that a
:class:`TopStats` fed the batches themselves (building the spans itself)
makes, and the spans rows are exactly the spans at least as long as their
kind's threshold, on either core."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import livetrace
from livetrace._agent.policies import Summaries, span_rows, summaries, summary_row
from livetrace._files import decode_batches
from livetrace._session.subscribers import Fanout
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.spans.model import SPAN_KIND_NAMES
from livetrace._views.top import TopStats

CORPUS = Path(__file__).parent / "corpus"
TRACES = [CORPUS / "runtime" / "go126-generations.trace", CORPUS / "legacy" / "go-testdata" / "http_1_21_good"]
NOW = 8_000_000_000_000_000_000


def by_batches(path: Path) -> list[dict[str, Any]]:
    """A summary per generation from a TopStats fed the batches (it builds the spans itself)."""
    stats, rows, fed = TopStats(), [], False
    for item in decode_batches(path):
        if isinstance(item, EventBatch) and len(item):
            if item.gen is not None and stats.unit is not None and item.gen is not stats.unit:
                rows.append(summary_row(stats.snapshot()))
            stats.feed(item)
            fed = True
    return [*rows, summary_row(stats.snapshot())] if fed else rows


async def by_feed(path: Path) -> list[dict[str, Any]]:
    """The agent's summaries, its subscriptions fed the file's items through a fan-out."""
    fanout = Fanout()
    feed = summaries(fanout)
    got = Summaries(feed.events.take_buffered)
    rows: list[dict[str, Any]] = []
    for item in decode_batches(path):
        await fanout.publish(item)
        rows += [r for x in feed.spans.take_buffered() for r in got.feed(x)]
    await fanout.publish_end()
    rows += [r for x in feed.spans.take_buffered() for r in got.feed(x)]
    return rows + got.end()


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
async def test_each_summary_is_the_snapshot_of_its_generation_from_the_batches_themselves(path: Path) -> None:
    got, expected = await by_feed(path), by_batches(path)
    assert len(got) == len(expected) >= 1
    if path.name.startswith("go126"):
        assert [r["first_generation"] for r in got] == [1, 2, 3, 4, 5]
    for mine, theirs in zip(got, expected, strict=True):
        read = {**theirs, "top_json": json.loads(theirs["top_json"])}
        assert {**mine, "top_json": json.loads(mine["top_json"])} == read


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_the_spans_over_thresholds_are_those_at_least_as_long_as_their_kinds(path: Path) -> None:
    batches = list(livetrace.decode_span_batches(path))
    durations: dict[str, list[int]] = {}
    for b in batches:
        for i in range(len(b)):
            durations.setdefault(SPAN_KIND_NAMES[b.kinds[i]], []).append(b.ends[i] - b.starts[i])
    # Thresholds each kind's spans meet some of (their median), one every span meets, and kinds left out.
    over = {k: sorted(durations[k])[len(durations[k]) // 2] for k in ("running", "blocked", "syscall")}
    over["runnable"] = 0
    wanted = [
        (SPAN_KIND_NAMES[b.kinds[i]], b.starts[i], b.ends[i] - b.starts[i])
        for b in batches
        for i in range(len(b))
        if SPAN_KIND_NAMES[b.kinds[i]] in over and b.ends[i] - b.starts[i] >= over[SPAN_KIND_NAMES[b.kinds[i]]]
    ]
    got = [(r["kind"], r["start_ns"], r["duration_ns"]) for b in batches for r in span_rows(b, over, NOW)]
    assert got == wanted
    assert {k for k, _, _ in got} >= {"running", "blocked", "runnable"} and len(got) < sum(map(len, batches))
