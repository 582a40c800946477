"""The gap between two pprof windows is measured on the trace's own clock
(issue 26, point 1): it was the time from the last byte of one window to
the first byte of the next, about a window too long where the service
holds its first bytes back (net/http's buffer, a legacy runtime's 64 KiB
ones), and its JSON was a `Gap` of shed generations with no length.

Live, against quietsvc built with Go 1.21.13 and 1.26.6: each WindowGap
a session decodes is the time from the last event of one window to the
first of the next, as worked out here from the windows' own bytes (Go
1.22+: the events' times; Go 1.21: the raw tick counter the windows
share). The message and the JSON say what was measured."""

from __future__ import annotations

import io
import itertools
import json

import pytest
import trio

import livetrace
from livetrace._cli.render.jsonl import gap_dict
from livetrace._items import TraceGap, WindowEnd, WindowGap
from livetrace._trace.legacy.wire import LegacyReader
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.spec.legacy import EV_BATCH, EV_CPU_SAMPLE, EV_FREQUENCY, EV_STACK, EV_TIMER_GOROUTINE
from tests.smallsvc import small_service

UNTIMED = (EV_FREQUENCY, EV_TIMER_GOROUTINE, EV_STACK, EV_CPU_SAMPLE)


def _legacy_span(data: bytes) -> tuple[int, int, int]:
    """A Go 1.7-1.21 trace's first and last event on the runtime's tick
    counter, and its ticks per second: each batch gives its ticks, each
    timed event after it the ticks since the one before."""
    reader = LegacyReader()
    first, last, freq = 1 << 64, 0, 0
    ticks = 0
    for _, typ, args, _ in reader.feed(data):
        if typ == EV_BATCH:
            ticks = args[-1]
        elif typ == EV_FREQUENCY:
            freq = args[0]
        elif typ not in UNTIMED:
            ticks += args[0]
            first, last = min(first, ticks), max(last, ticks)
    reader.close()
    return first, last, freq


def _modern_span(data: bytes) -> tuple[int, int]:
    """A Go 1.22+ trace's first and last event, in ns of the runtime's clock."""
    times = [t for b in livetrace.decode_batches(io.BytesIO(data)) if isinstance(b, EventBatch) for t in b.times]
    return min(t for t in times if t >= 0), max(times)


def _expected(windows: list[bytes], legacy: bool) -> list[float]:
    if legacy:
        spans = [_legacy_span(w) for w in windows]
        return [(b[0] - a[1]) / a[2] for a, b in itertools.pairwise(spans)]
    mspans = [_modern_span(w) for w in windows]
    return [(b[0] - a[1]) / 1e9 for a, b in itertools.pairwise(mspans)]


@pytest.mark.slow
@pytest.mark.parametrize("version", ["1.21", "1.26"])
async def test_window_gaps_are_measured_from_the_events(version: str) -> None:
    async with small_service("quietsvc", version) as svc:
        async with livetrace.connect(f"http://{svc.pprof}", window=1, duration=3) as session:
            batches = session.event_batches()  # subscribed before the first frame is read
            raw = session.subscribe(what="frames", lossless=True)
            gaps: list[WindowGap] = []
            windows: list[bytes] = [b""]

            async def collect() -> None:
                gaps.extend([item async for item in batches if isinstance(item, WindowGap)])

            async def watch() -> None:
                async for f in raw:
                    if isinstance(f, livetrace.Chunk):
                        windows[-1] += f.data
                    elif isinstance(f, WindowEnd):
                        windows.append(b"")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(collect)
                nursery.start_soon(watch)
    assert len(windows) == 3 and [g.window for g in gaps] == [1, 2]
    expected = _expected(windows, version == "1.21")
    for gap, want in zip(gaps, expected, strict=True):
        assert gap.measured_from == "events", gap
        assert 0 <= want < 1.0, expected  # nothing traced for less than the window, as the events show
        assert gap.seconds == pytest.approx(want, abs=1e-4), (gaps, expected)
        assert gap.message.startswith(f"no trace for {gap.seconds * 1e3:.1f} ms between pprof windows")
        assert "from the last event of one to the first of the next" in gap.message
        assert gap_dict(gap) == {
            "kind": "WindowGap",
            "window": gap.window,
            "seconds": gap.seconds,
            "measured_from": "events",
        }
        json.dumps(gap_dict(gap))


def test_a_gap_measured_from_bytes_says_so() -> None:
    gap = WindowGap(0, 0, 0, 0, False, window=1, seconds=1.0164)
    assert gap.message == (
        "no trace between pprof windows 1 and 2, whose bytes came 1016.4 ms apart (the untraced time is shorter "
        "where the service held the next window's first bytes back)"
    )
    assert gap_dict(gap) == {"kind": "WindowGap", "window": 1, "seconds": 1.0164, "measured_from": "bytes"}


def test_a_trace_gap_has_a_kind_of_its_own() -> None:
    measured = TraceGap(0, 0, 0, 0, False, window=2, seconds=0.25, measured=True)
    assert gap_dict(measured) == {"kind": "TraceGap", "trace": 2, "seconds": 0.25, "measured_from": "events"}
    unknown = TraceGap(0, 0, 0, 0, False, window=1)
    assert gap_dict(unknown) == {"kind": "TraceGap", "trace": 1, "seconds": None, "measured_from": None}
