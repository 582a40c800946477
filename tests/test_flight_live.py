"""The flight recorder against the real demo service: triggers fire (or
not), captures are complete traces Go's tools open and that hold what fired,
the bounds hold, and the command re-attaches to a restarted service."""

from __future__ import annotations

import itertools
import json
import os
import signal
import tempfile
import urllib.request
from pathlib import Path

import pytest
import trio

import livetrace
from livetrace._flight.capture import Capture
from livetrace._flight.recorder import FlightRecorder
from livetrace._trace.select.filter import Filter
from livetrace._trace.spans.model import SpanKind

from .conftest import cli, demo, go_dump, go_tool_trace
from .plainsvc import plain_service
from .test_flight_stop_live import Stderr

WAIT = 40.0  # the most a test waits for a capture before failing


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as r:
        data: bytes = r.read()
    return data.decode()


def regions_in(path: Path, name: str) -> list[livetrace.Span]:
    return list(livetrace.decode_spans(path, Filter(kinds=frozenset({SpanKind.REGION}), regions=(name,))))


async def next_capture(rec: FlightRecorder) -> Capture:
    with trio.fail_after(WAIT):
        async for capture in rec.captures():
            return capture
    raise AssertionError("the recorder ended without a capture")


async def ask(url: str) -> None:
    await trio.to_thread.run_sync(get, url)


@pytest.mark.slow
# The recorder at work, not the decoder (the twins' spans are checked on files): on the twin, whose
# decoding of a loaded demo is far slower, the capture's timing around the trigger is not the recorder's.
@pytest.mark.once
async def test_region_trigger_modern(tmp_path: Path) -> None:
    async with demo("1.26", args=["-workers", "1"]) as d, livetrace.connect(d.trace_address, advance=0.5) as session:
        rec = FlightRecorder(
            session,
            keep=5.0,  # room for the twin's decoding lag: the region's begin must still be kept
            triggers=["region:slow-request>200ms", "gc>1h", "stw>1h"],
            out_dir=tmp_path,
            after=1.0,
            cooldown=0,
        )
        async with trio.open_nursery() as n:
            n.start_soon(rec.run)
            await trio.sleep(5.5)  # more than keep: the capture's first generation is not the trace's first
            await ask(d.http + "/slow?ms=300")
            capture = await next_capture(rec)
            await session.stop()
    assert rec.state.fired == 1  # the thresholds the demo never crosses did not fire
    (trace,) = capture.traces
    go_tool_trace("1.26", trace)  # the same toolchain's tool opens it
    info = json.loads(capture.json_path.read_text())
    assert info["trigger"] == "region:slow-request>200ms" and info["span"]["kind"] == "region"
    assert info["span"]["name"] == "slow-request" and info["span"]["duration_ns"] > 200_000_000
    assert info["goroutine"] == info["span"]["resource"]["id"]
    assert any(f["function"] == "main.handleSlow" for f in info["span"]["start_stack"])
    assert info["units"][0]["generation"] > 1 and info["traces"] == [trace.name]
    assert info["time_range"]["last_read"] > info["fired_at"]  # the tail is in
    assert [s.duration for s in regions_in(trace, "slow-request")] == [info["span"]["duration_ns"]]
    status, out, err = go_dump(trace, "parsed")  # Go's own reader: every event, the region among them
    assert status == 0, err
    assert "RegionBegin Time=" in out and 'Type="slow-request"' in out


@pytest.mark.slow
@pytest.mark.once
async def test_region_and_rss_triggers_legacy_segments(tmp_path: Path) -> None:
    async with demo("1.21", args=["-workers", "1"]) as d, livetrace.connect(d.trace_address, segment=1.0) as session:
        rec = FlightRecorder(
            session,
            keep=6.0,
            triggers=["region:slow-request>200ms", "rss>150MiB"],
            out_dir=tmp_path,
            after=0.5,
            cooldown=0,
        )
        assert rec.process is not None and rec.process.pid == d.pid  # local: RSS polled with psutil
        async with trio.open_nursery() as n:
            n.start_soon(rec.run)
            await trio.sleep(1.5)
            await ask(d.http + "/slow?ms=300")
            region = await next_capture(rec)
            await ask(d.http + "/alloc?mb=200&seconds=30")
            rss = await next_capture(rec)
            await session.stop()
    info = json.loads(region.json_path.read_text())
    assert info["trigger"] == "region:slow-request>200ms" and info["layout"] == "segments"
    assert info["span"]["name"] == "slow-request"
    for path in region.traces:
        go_tool_trace("1.21", path)  # each kept segment is a complete trace
    holding = [p for p in region.traces if regions_in(p, "slow-request")]
    assert len(holding) == 1
    assert info["fired_in"]["file"] == holding[0].name
    rss_info = json.loads(rss.json_path.read_text())
    assert rss.firing.trigger.text == "rss>150MiB" and rss_info["value"] > 150 << 20 and rss_info["span"] is None


@pytest.mark.slow
@pytest.mark.once
async def test_gc_trigger_cooldown_and_max_files(tmp_path: Path) -> None:
    async with demo("1.26", args=["-workers", "1"]) as d, livetrace.connect(d.trace_address, advance=0.5) as session:
        rec = FlightRecorder(
            session, keep=1.0, triggers=["gc>1us"], out_dir=tmp_path, after=0.2, cooldown=2.0, max_files=2
        )
        async with trio.open_nursery() as n:
            n.start_soon(rec.run)
            with trio.fail_after(WAIT):
                while len(rec.state.captures) < 3:
                    await trio.sleep(0.2)
            await session.stop()
    st = rec.state
    assert st.suppressed > 0  # the demo collects garbage far more often than every 2 s
    times = sorted(capture.firing.at_unix_ns for capture in st.captures)
    assert all(
        b - a >= 1.9e9 for a, b in itertools.pairwise(times)
    )  # the cooldown (monotonic) held, give or take the clocks
    left = sorted(p.name for p in tmp_path.iterdir())
    newest = st.captures[-2:]
    assert left == sorted(p.name for capture in newest for p in (*capture.traces, capture.json_path))
    assert st.removed == 2
    go_tool_trace("1.26", newest[-1].traces[0])
    assert json.loads(newest[-1].json_path.read_text())["span"]["kind"] == "gc"


@pytest.mark.slow
@pytest.mark.once
async def test_cli_reattaches_to_a_restarted_service(tmp_path: Path) -> None:
    sock_dir = tempfile.mkdtemp(prefix="lt-fl-")  # short: a unix socket path has a small limit
    address = f"unix:{sock_dir}/trace.sock"
    out = tmp_path / "captures"
    out.mkdir()
    proc = None
    try:
        async with demo("1.26", args=["-workers", "1"], listen=address):
            proc = cli(
                "flight", address, "--keep", "3s", "--after", "0.5s", "-t", "region:slow-request>100ms", "-o", str(out)
            )
            stderr = Stderr(proc)
            # On the first service before it goes (a slow start on a loaded
            # machine attached straight to the second, and never re-attached).
            await stderr.wait_for("attached to")
        async with demo("1.26", args=["-workers", "1"], listen=address) as d2:
            with trio.fail_after(WAIT):
                while not list(out.glob("*.json")):
                    await ask(d2.http + "/slow?ms=150")
                    await trio.sleep(1.0)
            proc.send_signal(signal.SIGTERM)
            await trio.to_thread.run_sync(lambda: proc.wait(timeout=60))
            err = stderr.text()
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        os.rmdir(sock_dir) if os.path.isdir(sock_dir) and not os.listdir(sock_dir) else None
    assert proc.returncode == 0, err
    assert "livetrace: attached to" in err and "re-attaching in" in err and "livetrace: re-attached to" in err
    assert "trigger region:slow-request>100ms fired" in err and "stopped: " in err
    (j,) = out.glob("*.json")
    info = json.loads(j.read_text())
    go_tool_trace("1.26", out / info["traces"][0])
    assert not list(out.glob("*.part")) and not list(out.glob(".*"))


@pytest.mark.slow
@pytest.mark.once
async def test_cli_pprof_windows(tmp_path: Path) -> None:
    # A service with net/http/pprof only (Go 1.26): the ring keeps whole
    # /debug/pprof/trace windows, and a capture is one complete trace per window.
    out = tmp_path / "captures"
    out.mkdir()
    async with plain_service("1.26") as svc:
        proc = cli(
            "flight", f"http://{svc.pprof}", "--window", "1", "--keep", "2s", "--after", "0.5s",
            "-t", "gc>1us", "-o", str(out),
        )  # fmt: skip
        try:
            with trio.fail_after(WAIT):
                while not list(out.glob("*.json")) and proc.poll() is None:
                    await trio.sleep(0.2)
            proc.send_signal(signal.SIGTERM)
            _, err = await trio.to_thread.run_sync(lambda: proc.communicate(timeout=60))
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, err
    assert "of windows (1 s, back to back" in err and "trigger gc>1us fired" in err
    (j,) = out.glob("*.json")
    info = json.loads(j.read_text())
    assert info["layout"] == "windows" and info["span"]["kind"] == "gc"
    assert len(info["traces"]) == len(info["units"]) >= 1
    assert info["fired_in"] is not None and info["fired_in"]["file"] in info["traces"]
    windows = [u["window"] for u in info["units"]]
    assert windows == list(range(windows[0], windows[0] + len(windows)))  # consecutive: a window's gap kept them
    for name in info["traces"]:
        go_tool_trace("1.26", out / name)  # each window a complete trace of its own
