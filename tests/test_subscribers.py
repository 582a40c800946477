"""Subscribers: one decode fanned out, a filter and a buffer each.

The fan-out itself is sans-socket (fed decoded batches of a corpus trace
here); one live test runs four subscribers on a demo service at once."""

from __future__ import annotations

import io
import re

import pytest
import trio

import livetrace
from livetrace import Event, EventBatch, Filter, Kind, Span, SpanBatch, SpanBuilder, SpanKind, SubscriberGap
from livetrace._files import decode_batches
from livetrace._session.subscribers import Fanout, Subscription

from .conftest import demo
from .test_select import TRACES, fields, reference


def corpus_batches() -> list[EventBatch]:
    data = TRACES["stress_1_21_good"]
    return [b for b in decode_batches(io.BytesIO(data)) if isinstance(b, EventBatch)]


async def drain(sub: Subscription) -> list[object]:
    return [x async for x in sub]


@pytest.mark.slow  # decodes a whole stress trace: seconds on the twin
async def test_a_slow_subscriber_loses_batches_and_is_told_while_the_others_do_not() -> None:
    fan = Fanout()
    everything = fan.subscribe(what="batches", lossless=True, buffer=1)
    slow = fan.subscribe(what="batches", buffer=2)
    logs = fan.subscribe(Filter(kinds=frozenset({Kind.LOG})), what="events", buffer=10_000)
    batches = corpus_batches()
    got: list[object] = []

    async def feed() -> None:
        for b in batches:
            await fan.publish(b)
        fan.finish()

    async with trio.open_nursery() as n:
        n.start_soon(feed)
        got = await drain(everything)  # keeps up: the feeder waits for it
    assert [len(b) for b in got] == [len(b) for b in batches]  # type: ignore[arg-type]  # batches
    slow_items = await drain(slow)
    gap = slow_items[2]
    assert isinstance(gap, SubscriberGap) and len(slow_items) == 3
    assert gap.batches == len(batches) - 2
    assert gap.events == sum(len(b) for b in batches[2:])
    assert gap.first_time == batches[2].times[0]
    assert slow.lost_batches == gap.batches
    want = [fields(e) for e in reference((e for b in batches for e in b), Filter(kinds=frozenset({Kind.LOG})))]
    assert [fields(e) for e in await drain(logs)] == want  # type: ignore[arg-type]  # events


def spans_of(items: list[object]) -> list[Span]:
    return [s for x in items if isinstance(x, SpanBatch) for s in x]


def reference_spans(items: list[object]) -> list[Span]:
    """Spans built from a whole decoded stream by one builder of our own
    (a helper's gap forgets the open spans, as the session's builder does)."""
    builder = SpanBuilder()
    spans: list[Span] = []
    for x in items:
        if isinstance(x, EventBatch):
            spans += builder.feed(x)
        elif isinstance(x, livetrace.Gap):
            builder.gap()
    return spans + list(builder.close())


LONG_WAITS = Filter(kinds=frozenset({SpanKind.BLOCKED, SpanKind.RUNNABLE, SpanKind.SYSCALL}), min_duration=20_000)


def long_waits(spans: list[Span]) -> list[Span]:
    kinds = LONG_WAITS.kinds or frozenset()
    return [s for s in spans if s.kind in kinds and s.duration >= (LONG_WAITS.min_duration or 0)]


@pytest.mark.slow  # decodes a whole stress trace: seconds on the twin
async def test_span_subscribers_share_one_builder_and_each_gets_what_its_filter_keeps() -> None:
    fan = Fanout()
    everything = fan.subscribe(what="spans", lossless=True, buffer=1)
    waits = fan.subscribe(LONG_WAITS, what="spans", buffer=100_000)
    events = fan.subscribe(Filter(kinds=frozenset({Kind.LOG})), what="batches", buffer=100_000)
    batches = corpus_batches()

    async def feed() -> None:
        for b in batches:
            await fan.publish(b)
        await fan.publish_end()
        fan.finish()

    async with trio.open_nursery() as n:
        n.start_soon(feed)
        got = await drain(everything)
    want = reference_spans(list(batches))
    assert spans_of(got) == want and len(want) > 1000
    assert fan.spans_built == len(want)
    assert all(isinstance(x, SpanBatch) and len(x) for x in got)  # no notices here; never an empty batch
    assert spans_of(await drain(waits)) == long_waits(want) != []
    assert all(isinstance(x, EventBatch) for x in await drain(events))  # event subscribers get no spans


@pytest.mark.slow
async def test_a_span_subscriber_gets_the_spans_of_the_full_stream_its_filter_keeps() -> None:
    """Live: the spans a filtered span subscriber gets are exactly those a
    builder of our own makes from an unfiltered lossless subscriber's
    batches of the same session, filtered by the same rules."""
    async with demo("1.26", args=["-workers", "1"]) as d, livetrace.connect(d.trace_address, duration=2) as session:
        full = session.subscribe(what="batches", lossless=True, buffer=4)
        waits = session.subscribe(LONG_WAITS, what="spans", lossless=True, buffer=4)
        results: dict[str, list[object]] = {}

        async def collect(name: str, sub: Subscription) -> None:
            results[name] = await drain(sub)

        with trio.fail_after(120):
            async with trio.open_nursery() as n:
                n.start_soon(collect, "full", full)
                n.start_soon(collect, "waits", waits)
    want = reference_spans(results["full"])
    assert len(want) > 100
    got = spans_of(results["waits"])
    assert got == long_waits(want) and got
    # Built: the goroutines' spans; no P's (its kinds need none followed: spans/model.py's Follow).
    assert session.counters.spans == sum(s.resource.kind != "Proc" for s in want) < len(want)


@pytest.mark.slow
async def test_subscribers_with_filters_share_one_session() -> None:
    """Two filtered subscribers get exactly what their filters select from
    the full stream (a third, lossless, unfiltered subscriber); a fourth
    that reads nothing until the end loses batches and is told."""
    f_logs = Filter(kinds=frozenset({Kind.LOG, Kind.TASK_BEGIN}))
    f_http = Filter(stack=re.compile(r"net/http"), procs=frozenset({0, 1}))
    async with demo("1.26", args=["-workers", "1"]) as d, livetrace.connect(d.trace_address, duration=2.5) as session:
        full = session.subscribe(what="batches", lossless=True, buffer=4)
        a = session.subscribe(f_logs, buffer=100_000)
        b = session.subscribe(f_http, what="batches", buffer=100_000)
        slow = session.subscribe(what="batches", buffer=1)
        results: dict[str, list[object]] = {}

        async def collect(name: str, sub: Subscription) -> None:
            results[name] = await drain(sub)

        with trio.fail_after(120):
            async with trio.open_nursery() as n:
                for name, sub in (("full", full), ("a", a), ("b", b)):
                    n.start_soon(collect, name, sub)
            slow_items = await drain(slow)
    events = [e for x in results["full"] if isinstance(x, EventBatch) for e in x]
    assert len(events) > 1000
    assert not any(isinstance(x, SubscriberGap) for x in results["a"] + results["b"])
    got_a = [fields(e) for e in results["a"] if isinstance(e, Event)]
    assert got_a == [fields(e) for e in reference(iter(events), f_logs)] and got_a
    got_b = [fields(e) for x in results["b"] if isinstance(x, EventBatch) for e in x]
    assert got_b == [fields(e) for e in reference(iter(events), f_http)]
    gaps = [x for x in slow_items if isinstance(x, SubscriberGap)]
    assert len(gaps) == 1 and gaps[0].batches == slow.lost_batches > 0
    kept = sum(len(x) for x in slow_items if isinstance(x, EventBatch))
    assert kept + gaps[0].events == len(events)


@pytest.mark.slow
@pytest.mark.once
async def test_the_two_subscribers_example_runs() -> None:
    import sys

    from .conftest import ROOT

    async with demo("1.26", args=["-workers", "1"]) as d:
        proc = await trio.run_process(
            [sys.executable, str(ROOT / "examples" / "two_subscribers.py"), d.trace_address, "2"],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr.decode()
    last = proc.stdout.decode().splitlines()[-1]
    assert "log events" in last and not last.startswith("0 log events"), last
