"""A legacy trace while it runs: events per P as their chunks arrive, with
provisional times from a clock estimated from chunk arrival times, merged
across Ps through the reorder window; the same events, exactly ordered and
timed, once the footer is in; and `tail` of a legacy service, in segments by
default."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import trio

import livetrace
from livetrace._trace.legacy.clock import TickClock
from livetrace._trace.legacy.read import LegacyDecoder
from livetrace._trace.legacy.trace import LegacyEvent
from livetrace._trace.spec.legacy import EV_CPU_SAMPLE, EV_GO_SYS_EXIT

from .conftest import cli, demo, go_binary


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
    delivered: list[tuple[livetrace.Chunk, list[tuple[LegacyEvent, int | None]]]] = []
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
    dated = [
        (e, w) for _, evs in delivered for e, w in evs if w is not None and e.typ not in (EV_CPU_SAMPLE, EV_GO_SYS_EXIT)
    ]
    assert len(dated) > len(fed) // 2
    ref, ref_wall = dated[0]
    worst = max(abs((w - ref_wall) - (e.ts - ref.ts)) for e, w in dated)
    assert worst < 5_000_000, f"provisional times stray {worst / 1e6:.3f} ms from the final ones"


@pytest.mark.slow
async def test_a_session_delivers_provisional_events_then_the_exact_ones() -> None:
    items: list[object] = []
    ended_before_first = None
    async with demo("1.21", args=["-workers", "1", "-pace", "5"]) as d:
        async with livetrace.connect(d.trace_address, duration=3.0) as session:
            assert session.info.segment_ms == 0
            async for item in session.event_batches():
                if ended_before_first is None and isinstance(item, livetrace.Provisional):
                    ended_before_first = session.end is not None
                items.append(item)
    # Provisional events come while the trace runs, before any footer.
    assert ended_before_first is False
    kinds = [type(i).__name__ for i in items]
    resolved = kinds.index("SymbolsResolved")
    assert set(kinds[:resolved]) == {"Provisional"} and set(kinds[resolved + 1 :]) == {"EventBatch"}
    notice = items[resolved]
    assert isinstance(notice, livetrace.SymbolsResolved) and notice.stacks > 0
    assert notice.estimated_ticks_per_sec == pytest.approx(notice.ticks_per_sec, rel=1e-3)
    provisional = [i for i in items if isinstance(i, livetrace.Provisional)]
    exact = [e for i in items if isinstance(i, livetrace.EventBatch) for e in i]
    assert len(exact) == notice.events > 10_000
    # Merged across Ps in time order, but for the few that came too late.
    released = -(1 << 63)
    for p in provisional:
        times = [e.time for e in p.events]
        on_time = times[p.late :]
        assert on_time == sorted(on_time) and (not on_time or on_time[0] >= released)
        released = max([released, *on_time])
    n_provisional = sum(len(p.events) for p in provisional)
    assert n_provisional > 0.9 * len(exact)
    assert sum(p.late for p in provisional) < 0.25 * n_provisional  # a quiet P fills its buffer slowly
    # Stacks are ids until the footer; after it they have frames.
    assert any(e.stack_id() for p in provisional for e in p.events)
    assert not any(e.stack() for p in provisional for e in p.events)
    assert any(e.stack() for e in exact)
    assert [e.kind for e in (exact[0], exact[-1])] == [livetrace.Kind.SYNC, livetrace.Kind.SYNC]


@pytest.mark.slow
async def test_tail_of_a_legacy_service_prints_exact_segments_stitched_together() -> None:
    async with demo("1.21", args=["-workers", "1", "-pace", "5"]) as d:
        proc = cli("tail", d.trace_address, "--format", "jsonl", "-d", "3.5")
        out, err = await trio.to_thread.run_sync(lambda: proc.communicate(timeout=120))
    assert proc.returncode == 0, err
    assert "restarted every 1 s" in err
    # The summary names the largest segment's size, the figure its memory is bounded by.
    largest = re.search(r"(\d+) segments, largest ([\d,]+) bytes", err)
    assert largest and int(largest[1]) >= 3 and int(largest[2].replace(",", "")) > 0
    lines = [json.loads(line) for line in out.splitlines()]
    gaps = [x for x in lines if x["kind"] == "Gap"]
    syncs = [x for x in lines if x["kind"] == "Sync"]
    assert len(gaps) >= 2 and all(g["why"].startswith("segment mode") and g["duration_ns"] >= 0 for g in gaps)
    assert len(syncs) == 2 * (len(gaps) + 1) and [s["n"] for s in syncs] == list(range(1, len(syncs) + 1))
    events = [x for x in lines if x["kind"] != "Gap"]
    assert not any(x.get("provisional") for x in events)
    # One stream: times rise across the segments, and stacks are resolved.
    times = [x["time_ns"] for x in events]
    assert times == sorted(times) and times[-1] > 2_500_000_000
    assert sum(bool(x.get("stack")) for x in events) > len(events) // 10


@pytest.mark.slow
async def test_tail_without_segments_prints_provisional_events() -> None:
    async with demo("1.21", args=["-workers", "1", "-pace", "5"]) as d:
        proc = cli("tail", d.trace_address, "-d", "2.5", "--segment", "0")
        out, err = await trio.to_thread.run_sync(lambda: proc.communicate(timeout=120))
    assert proc.returncode == 0, err
    lines = out.splitlines()
    assert "printed provisionally" in err
    # the exact events seen against the provisional ones shown: the summary gives the reason they differ
    assert "(filtered out, past --limit, or never placed provisionally)" in err
    assert sum(line.startswith("~") for line in lines) > 1000
    assert lines[-1].startswith("--- footer: symbols resolved")


@pytest.mark.slow
def test_the_demo_command_tails_a_legacy_service_in_segments(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "livetrace",
            "demo",
            "--go",
            str(go_binary("1.21")),
            "-s",
            "1",
            "--tail",
            "2.5",
            "-o",
            str(tmp_path / "demo.trace"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "not traced for" in proc.stdout and "Log " in proc.stdout and "events in this generation" in proc.stdout
    assert "sched latency" in proc.stdout and "slowest user regions and tasks" in proc.stdout
