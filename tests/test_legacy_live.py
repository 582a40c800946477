"""A legacy trace while it runs: events per P as their chunks arrive, with
provisional times from a clock estimated from chunk arrival times, and the
same events, exactly ordered and timed, once the footer is in."""

from __future__ import annotations

from collections import defaultdict

import pytest

import livetrace
from livetrace._legacy_decoder import LegacyDecoder, TickClock
from livetrace._legacy_spec import EV_CPU_SAMPLE, EV_GO_SYS_EXIT

from .conftest import demo


def test_the_clock_is_the_line_through_its_samples() -> None:
    clock = TickClock()
    assert clock.ticks_per_sec is None and clock.wall_ns(5) is None
    t0, w0 = 10**12, 1_700_000_000 * 10**9
    clock.add(w0, t0)
    clock.add(w0 + 10_000_000, t0 + 400_000)  # 10 ms: not yet enough to go on
    assert clock.ticks_per_sec is None
    for k in range(2, 20):
        clock.add(w0 + k * 25_000_000, t0 + k * 1_000_000)  # 40 M ticks/s
    assert clock.ticks_per_sec == pytest.approx(40e6, rel=1e-9)
    assert clock.wall_ns(t0 + 40_000_000) == pytest.approx(w0 + 1_000_000_000, abs=2)


@pytest.mark.slow
@pytest.mark.parametrize("version", ["1.19", "1.21"])
async def test_events_come_per_p_as_chunks_arrive_with_provisional_times(version: str) -> None:
    decoder = LegacyDecoder()
    delivered: list[tuple[livetrace.Chunk, list]] = []
    async with demo(version, args=["-workers", "2"]) as d:
        async with livetrace.connect(d.trace_address, duration=3.0) as session:
            async for c in session.chunks():
                assert isinstance(c, livetrace.Chunk)
                delivered.append((c, [(e, decoder.clock.wall_ns(e.ts)) for e in decoder.feed(c.data, c.read_unix_ns)]))
    fed = [e for _, evs in delivered for e, _ in evs]
    assert len(fed) > 10_000
    # Long before the end, events arrive, each P's in its own order.
    before_end = sum(len(evs) for c, evs in delivered if c.read_unix_ns < delivered[-1][0].read_unix_ns - 1e9)
    assert before_end > len(fed) // 4
    per_p = defaultdict(list)
    for e in fed:
        if e.typ != EV_CPU_SAMPLE:
            per_p[e.p].append(e.ts)
    assert all(ticks == sorted(ticks) for ticks in per_p.values())
    trace = decoder.close()
    # The same events, now ordered across Ps and in nanoseconds.
    assert {id(e) for e in trace.events} == {id(e) for e in fed}
    estimate = decoder.clock.ticks_per_sec
    assert estimate == pytest.approx(trace.ticks_per_sec, rel=1e-3)
    dated = [(e, w) for _, evs in delivered for e, w in evs if w is not None and e.typ not in (EV_CPU_SAMPLE,
                                                                                              EV_GO_SYS_EXIT)]
    assert len(dated) > len(fed) // 2
    ref, ref_wall = dated[0]
    worst = max(abs((w - ref_wall) - (e.ts - ref.ts)) for e, w in dated)
    assert worst < 5_000_000, f"provisional times stray {worst / 1e6:.3f} ms from the final ones"
