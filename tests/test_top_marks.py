"""`livetrace top` fed its spans from the session's pool (a span
subscription with marks) and its events' summaries apart gives the
snapshots that TopStats gives fed every batch in order (building the spans
itself, as top did before), a snapshot at every generation, segment and
window: with one job and with four, for a modern trace with a generation
shed, a legacy trace in segments, and pprof windows of both families.

The sources are test_pool_views's (a fake helper on a real unix socket, and
PprofWindows's frames, through a real Session). No Go runs.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import trio

from livetrace._cli import top
from livetrace._items import Notice, SegmentGap, SpanMark, WindowGap
from livetrace._protocol.text import json_safe
from livetrace._session.session import Session
from livetrace._session.subscribers import Fanout
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.spans.batch import SpanBatch
from livetrace._views.top import TopStats
from livetrace._views.top_screen import View, snapshot_dict

from .test_pool_views import SOURCES, both

pytestmark = pytest.mark.slow_twin


async def fed_batches(session: Session) -> bytes:
    """TopStats fed every batch (its own span builder), a snapshot where a
    generation ends (at the next one's first batch), at a segment's or
    window's end, and at the end."""
    stats, lines, fed = TopStats(), [], False

    def show() -> None:
        nonlocal fed
        lines.append(json_safe(json.dumps(snapshot_dict(stats.snapshot()))) + "\n")
        fed = False

    async with session.subscribe(what="batches", lossless=True, buffer=64) as sub:
        async for item in sub:
            if isinstance(item, EventBatch):
                if fed and stats.unit is not None and item.gen is not stats.unit:
                    show()
                stats.feed(item)
                fed = True
            elif isinstance(item, Notice):
                if isinstance(item, SegmentGap | WindowGap) and fed:
                    show()
                stats.notice(item)
    if fed:
        show()
    return "".join(lines).encode()


async def refreshing_top(session: Session) -> bytes:
    """top's own feeding, refreshing at every generation (no wait between)."""
    out = io.StringIO()
    await top._feed(session, TopStats(), top._Display(out, "json", View(sort="running", rows=50), False), False, 0.0)
    return out.getvalue().encode()


@pytest.mark.parametrize("source", SOURCES)
async def test_top_from_the_pools_spans_gives_the_snapshots_of_every_batch_fed(
    tmp_path: Path, source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No snapshot for a pause in the stream (a loaded machine's): only where a unit ends.
    monkeypatch.setattr(top, "QUIET", 3600.0)
    want, want4 = await both(tmp_path, source, fed_batches)
    one, four = await both(tmp_path, source, refreshing_top)
    assert want4 == want
    assert want.count(b"\n") > 1 and b'"groups": [{' in want
    assert one == want
    assert four == want


async def test_marks_come_only_to_the_span_subscriber_that_asked(tmp_path: Path) -> None:
    """Marks follow each unit's spans (each batch's with one job), tell all
    the events, and never reach the other subscribers; the spans cut at the
    end are not sent with them."""

    async def collect(session: Session) -> bytes:
        plain = session.subscribe(what="spans", lossless=True, buffer=1 << 20)
        marked = session.subscribe(what="spans", lossless=True, buffer=1 << 20, marks=True)
        events = session.subscribe(what="batches", lossless=True, buffer=1 << 20)
        got: dict[str, list[object]] = {"plain": [], "marked": [], "events": []}
        async with plain, marked, events:
            for name, sub in (("plain", plain), ("marked", marked), ("events", events)):
                async for item in sub:
                    got[name].append(item)
        n = sum(len(b) for b in got["events"] if isinstance(b, EventBatch))
        marks = [m for m in got["marked"] if isinstance(m, SpanMark)]
        assert not any(isinstance(x, SpanMark) for x in got["plain"] + got["events"])
        assert sum(m.events for m in marks) == n
        closed = [x for x in got["plain"] if getattr(x, "closed", False)]
        assert closed and not any(getattr(x, "closed", False) for x in got["marked"])
        return json.dumps([m.open for m in marks[-1:]]).encode()

    one, four = await both(tmp_path, "modern", collect)
    assert four == one


@pytest.mark.once
async def test_next_nowait_gives_what_is_buffered_then_the_sessions_error() -> None:
    """top drains its spans' buffer without a checkpoint an item: what is
    there comes in order, an empty buffer says so, and the error that ended
    the session is raised after what came before it, not lost."""
    fan = Fanout()
    sub = fan.subscribe(what="spans", buffer=8, marks=True)
    with pytest.raises(trio.WouldBlock):
        sub.next_nowait()
    mark = SpanMark(3, (1, 2))
    batch = SpanBatch.empty()
    await fan.deliver([(sub, batch, None), (sub, mark, None)])
    fan.finish(OSError("the helper went away"))
    assert sub.next_nowait() is batch
    assert sub.next_nowait() is mark
    with pytest.raises(OSError, match="went away"):
        sub.next_nowait()
    with pytest.raises(StopAsyncIteration):
        sub.next_nowait()
    with pytest.raises(ValueError, match="not events"):
        fan.subscribe(what="events").next_nowait()
