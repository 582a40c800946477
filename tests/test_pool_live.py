"""Live: a session with a pool of four threads, on the demo service through
its helper, gives its subscribers what one thread makes of the same trace
(issue 27): tail's lines of events and of spans, written in the pool,
equal those written in order from an unmapped lossless subscriber's
batches, with spans from one sequential SpanBuilder."""

from __future__ import annotations

import pytest
import trio

import livetrace
from livetrace import EventBatch, SpanBuilder
from livetrace._cli.tail import Formatter, Render, Rendered, View
from livetrace._session.subscribers import Subscription
from livetrace._trace.spans.batch import SpanBatch

from .conftest import demo


def lines_of(items: list[object]) -> bytes:
    return b"".join(p for x in items if isinstance(x, Rendered) for p in x.pieces)


def written(view: View, batches: list[EventBatch] | list[SpanBatch]) -> bytes:
    """The lines one Formatter writes, in order, for the non-empty batches."""
    formatter, out, t0 = Formatter(view), [], None
    for b in batches:
        if not len(b):
            continue
        if t0 is None:
            t0 = b.starts[0] if isinstance(b, SpanBatch) else b.times[0]
        out += formatter.pieces(b, t0, False)
    return b"".join(out)


# once: live, the same on either core; both twins write the same bytes at any jobs in
# test_pool_identity.py, which runs on both passes.
@pytest.mark.slow
@pytest.mark.once
async def test_four_jobs_write_what_one_thread_writes_live() -> None:
    events_view = View("jsonl", None, False, False)
    spans_view = View("text", None, True, False)
    async with (
        demo("1.26", args=["-workers", "2"]) as d,
        livetrace.connect(d.trace_address, duration=3, advance=0.2, jobs=4) as session,
    ):
        full = session.subscribe(what="batches", lossless=True, buffer=4)
        events = session.subscribe(what="batches", lossless=True, buffer=4, map=Render(events_view))
        spans = session.subscribe(what="spans", lossless=True, buffer=4, map=Render(spans_view))
        results: dict[str, list[object]] = {}

        async def collect(name: str, sub: Subscription) -> None:
            results[name] = [x async for x in sub]

        with trio.fail_after(120):
            async with trio.open_nursery() as n:
                for name, sub in (("full", full), ("events", events), ("spans", spans)):
                    n.start_soon(collect, name, sub)
    assert session._pump is not None and session._pump.peak_units > 1  # generations were in the pool at once
    batches = [x for x in results["full"] if isinstance(x, EventBatch)]
    assert sum(map(len, batches)) > 10_000
    assert lines_of(results["events"]) == written(events_view, batches)
    builder, built = SpanBuilder(), []
    for x in results["full"]:
        if isinstance(x, EventBatch):
            built.append(builder.feed(x))
        elif isinstance(x, livetrace.Gap):
            builder.gap()
    built.append(builder.close())
    assert lines_of(results["spans"]) == written(spans_view, built)
    assert session.counters.spans == sum(map(len, built))
