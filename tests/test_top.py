"""`livetrace top`: its numbers against a plain reckoning from the spans of
the same trace (one Span and one Event object at a time, nothing shared
with top's column loops), on files and on live sessions of the demo (Go
1.26.6 and 1.21.13: `--once --format json --record` gives the snapshot and
the very trace it summed up), the text sections and address forms, and the
redrawn screen and its keys in tmux."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import trio

from livetrace._files import decode_batches
from livetrace._items import Notice
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import METRIC_NAMES, GoState, Kind, transition_parts
from livetrace._trace.spans.builder import SpanBuilder
from livetrace._trace.spans.model import SpanKind
from livetrace._trace.spec.modern import EV_HEAP_ALLOC, EV_HEAP_GOAL, EV_PROCS_CHANGE
from livetrace._views.top import UNNAMED, TopStats
from livetrace._views.top_screen import snapshot_dict

from .conftest import ROOT, cli, demo, twin_on_stress

CORPUS = ROOT / "tests" / "corpus"
SECTIONS = (
    "GC, stop-the-world, scheduler latency",
    "GC cycles",
    "stop-the-world",
    "sched latency",
    "goroutines now",
    "top goroutines by start function",
    "slowest user regions and tasks",
    "heap ",
    "GOMAXPROCS",
    "shed: ",
)


def _p(values: list[int], p: float) -> int:
    v = sorted(values)
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)] if v else 0


def _summary(values: list[int]) -> dict[str, int]:
    v = sorted(values)
    return {"count": len(v), "p50": _p(v, 50), "p99": _p(v, 99), "max": v[-1] if v else 0, "total": sum(v)}


def reckon(paths: list[Path]) -> dict[str, Any]:
    """What one snapshot of these trace files (a legacy session's segments,
    in order) should say, reckoned span by span and event by event."""
    builder = SpanBuilder(compiled=False)
    durations: dict[str, list[int]] = defaultdict(list)
    user: dict[str, dict[str, list[int]]] = {"region": defaultdict(list), "task": defaultdict(list)}
    names: dict[int, str] = {}
    per_g: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    metrics: dict[int, int] = {}
    events = 0
    for i, path in enumerate(paths):
        if i:
            builder.gap()
        for item in decode_batches(path):
            if not isinstance(item, EventBatch):
                continue
            events += len(item)
            for e in item:
                if e.code in METRIC_NAMES:
                    metrics[e.code] = e.args[0]
                if e.kind == Kind.STATE_TRANSITION:
                    rkind, g, old, _, _, stack = transition_parts(e)
                    if rkind == "Goroutine" and old == GoState.NOT_EXIST and stack:  # created: its start function
                        frames = e.frames(stack)
                        if frames:
                            names[g - (1 << 64) if g >= 1 << 63 else g] = frames[-1].func
            for s in builder.feed(item):
                kind = SpanKind(s.kind)
                if kind in (SpanKind.REGION, SpanKind.TASK):
                    user[str(kind)][s.name].append(s.duration)
                    continue
                if kind in (SpanKind.GC, SpanKind.STW, SpanKind.MARK_ASSIST):
                    durations[str(kind)].append(s.duration)
                    continue
                if s.resource.kind != "Goroutine":
                    continue
                if kind == SpanKind.RUNNABLE:
                    durations["sched"].append(s.duration)
                own = s.end_stack if kind == SpanKind.RUNNING else None if kind == SpanKind.RUNNABLE else s.start_stack
                if own and not names.get(s.resource.id):
                    names[s.resource.id] = own[-1].func
                if s.duration > 0:
                    key = f"blocked:{s.reason}" if kind == SpanKind.BLOCKED else str(kind)
                    per_g[s.resource.id][key] += s.duration
    groups: dict[str, dict[str, Any]] = {}
    for g, acc in per_g.items():
        grp = groups.setdefault(
            names.get(g) or UNNAMED,
            {"goroutines": 0, "running": 0, "runnable": 0, "syscall": 0, "blocked": defaultdict(int)},
        )
        grp["goroutines"] += 1
        for key, ns in acc.items():
            if key.startswith("blocked:"):
                grp["blocked"][key[8:]] += ns
            else:
                grp[key] += ns
    opens = builder.open_counts()
    return {
        "events": events,
        "gc": _summary(durations["gc"]),
        "stw": _summary(durations["stw"]),
        "mark_assist": _summary(durations["mark-assist"]),
        "sched": _summary(durations["sched"]),
        "states": {str(k): opens[k] for k in (SpanKind.RUNNING, SpanKind.RUNNABLE, SpanKind.BLOCKED, SpanKind.SYSCALL)},
        "groups": {n: {**g, "blocked": dict(g["blocked"])} for n, g in groups.items()},
        "regions": {n: _summary(v) for n, v in user["region"].items()},
        "tasks": {n: _summary(v) for n, v in user["task"].items()},
        "heap": metrics.get(EV_HEAP_ALLOC),
        "heap_goal": metrics.get(EV_HEAP_GOAL),
        "gomaxprocs": metrics.get(EV_PROCS_CHANGE),
    }


def assert_matches(snap: dict[str, Any], expected: dict[str, Any]) -> None:
    for key in ("events", "gc", "stw", "mark_assist", "sched", "states", "regions", "tasks", "heap", "heap_goal"):
        assert snap[key] == expected[key], key
    assert snap["gomaxprocs"] == expected["gomaxprocs"]
    groups = {
        g["name"]: {k: g[k] for k in ("goroutines", "running", "runnable", "syscall", "blocked")}
        for g in snap["groups"]
    }
    assert groups == expected["groups"]


def _stats_of(path: Path, compiled: bool) -> dict[str, Any]:
    stats = TopStats(compiled=compiled)
    for item in decode_batches(path, compiled=compiled):
        if isinstance(item, EventBatch):
            stats.feed(item)
        elif isinstance(item, Notice):
            stats.notice(item)
    return snapshot_dict(stats.snapshot())


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "twin"])
@pytest.mark.parametrize(
    "name",
    twin_on_stress(
        [
            "legacy/go-testdata/user_task_region_1_21_good",
            "legacy/go-testdata/stress_1_21_good",
            "legacy/go-testdata/http_1_19_good",
            "legacy/go-testdata/stress_1_11_good",
        ],
        lambda name: (CORPUS / name).stat().st_size,
    ),
)
def test_snapshot_of_a_file_is_the_reckoning(name: str, compiled: bool) -> None:
    path = CORPUS / name
    snap = _stats_of(path, compiled)
    assert_matches(snap, reckon([path]))
    assert snap["events"] > 0 and snap["groups"]


@pytest.mark.slow  # decodes a whole stress trace: seconds on the twin
def test_second_snapshot_counts_only_its_interval() -> None:
    """A snapshot counts the spans that ended since the previous one, and
    of a long one only its part since then."""
    path = CORPUS / "legacy/go-testdata/stress_1_21_good"
    batches = [b for b in decode_batches(path) if isinstance(b, EventBatch) and len(b)]
    stats = TopStats()
    half = len(batches) // 2
    for b in batches[:half]:
        stats.feed(b)
    first = stats.snapshot()
    for b in batches[half:]:
        stats.feed(b)
    second = stats.snapshot()
    assert second.index == first.index + 1
    assert first.events + second.events == sum(len(b) for b in batches)
    trace_span = second.end - first.end
    for g in second.groups:
        # Per goroutine, no state can take longer than the interval.
        assert g.running + g.runnable + g.syscall + g.blocked_total <= g.goroutines * trace_span


# -- live --


def _run_top(address: str, *args: str, timeout: float = 120) -> tuple[str, str]:
    p = cli("top", address, *args)
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, err
    return out, err


@pytest.mark.slow
@pytest.mark.once  # the view and its command; the twins' sums are checked on files above
@pytest.mark.parametrize("version", ["1.26", "1.21"])
def test_once_json_is_the_reckoning_of_its_recording(version: str, tmp_path: Path) -> None:
    record = tmp_path / "top.trace"

    async def run() -> tuple[str, str]:
        # One load generator of each kind still collects, schedules and runs every region and task the
        # checks below name, and keeps the recording reckoned here (on the twin, span by span) small.
        async with demo(version, args=["-workers", "1"], env={"GOMAXPROCS": "2"}) as d:
            return await trio.to_thread.run_sync(
                lambda: _run_top(
                    d.trace_address, "--once", "--interval", "2", "--format", "json", "--record", str(record)
                )
            )

    out, err = trio.run(run)
    lines = out.splitlines()
    assert len(lines) == 1, out
    snap = json.loads(lines[0])
    paths = sorted(tmp_path.glob("top*.trace"), key=lambda p: (len(p.name), p.name))
    assert paths and paths[0] == record, (paths, err)
    assert_matches(snap, reckon(paths))
    # Plausible, for a demo at work: it ran, collected, and its workers' regions and tasks ended.
    assert snap["gomaxprocs"] == 2
    assert snap["heap"] > 0 and snap["heap_goal"] >= snap["heap"] // 2
    assert snap["gc"]["count"] >= 1 and snap["sched"]["count"] > 100
    assert sum(snap["states"].values()) >= 8
    assert {"allocate", "hash"} <= snap["regions"].keys() and "request" in snap["tasks"]
    assert any(g["name"].startswith("main.") and g["running"] > 0 for g in snap["groups"])
    assert snap["shed_generations"] == 0 and snap["lost_batches"] == 0


@pytest.mark.slow
@pytest.mark.once
@pytest.mark.parametrize("version", ["1.26", "1.21"])
def test_once_text_has_every_section_for_every_address_form(version: str) -> None:
    async def run() -> list[str]:
        # A legacy trace tells GOMAXPROCS only at a stop-the-world after its start: its opening
        # Gomaxprocs ends the start's snapshot, and Go's parser, as ours, makes no metric of it. On a
        # loaded machine a second of the light demo could hold no GC, and so showed "GOMAXPROCS -";
        # GOGC=10 has it collect many times a second.
        async with demo(version, env={"GOMAXPROCS": "2", "GOGC": "10"}) as d:
            outs = []
            for address in (d.trace_address, f"pid:{d.pid}", d.http):
                out, _ = await trio.to_thread.run_sync(_run_top, address, "--once")
                outs.append(out)
            out, _ = await trio.to_thread.run_sync(_run_top, d.trace_address, "--duration", "3.5")
            outs.append(out)
            return outs

    outs = trio.run(run)
    # On a pipe, without --once: a plain snapshot per refresh, no redrawing.
    piped = outs.pop()
    assert piped.count("snapshot ") >= 2 and "\x1b" not in piped, piped
    for out in outs:
        for section in SECTIONS:
            assert section in out, (section, out)
        assert "GOMAXPROCS 2" in out
        assert "main." in out and "allocate" in out and "request" in out


# -- the redrawn screen, in tmux --


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def _wait_for(session: str, predicate: Any, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = _tmux("capture-pane", "-p", "-t", session)
        if predicate(screen):
            return screen
        time.sleep(0.2)
    raise AssertionError(f"the screen never showed what was expected:\n{screen}")


@pytest.mark.slow
@pytest.mark.once
def test_redraw_and_keys_in_tmux(tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    session = f"livetrace-top-{os.getpid()}"
    status, errors = tmp_path / "status", tmp_path / "stderr"

    async def run() -> None:
        async with demo("1.26", env={"GOMAXPROCS": "2"}) as d:
            cmd = f"{sys.executable} -m livetrace top {d.trace_address} 2>{errors}; echo $? > {status}"
            env = [f"{k}={v}" for k, v in os.environ.items() if k in ("PYTHONPATH", "PATH", "LIVETRACE_PURE_PYTHON")]
            _tmux(
                "new-session",
                "-d",
                "-s",
                session,
                "-x",
                "160",
                "-y",
                "70",
                "env",
                "-u",
                "COLUMNS",
                "-u",
                "LINES",
                *env,
                "sh",
                "-c",
                cmd,
            )
            try:
                await trio.to_thread.run_sync(_drive, session, status)
            except BaseException:
                print(errors.read_text() if errors.exists() else "(no stderr)")
                raise
            finally:
                subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)

    trio.run(run)


def _drive(session: str, status: Path) -> None:
    first = _wait_for(session, lambda s: "snapshot 1:" in s and "slowest user regions" in s)
    for section in SECTIONS:
        assert section in first, section
    assert "running ▼" in first and "q quit" in first
    # Redrawn in place: a later snapshot replaces the first on the same screen.
    later = _wait_for(session, lambda s: "snapshot 3:" in s)
    assert "snapshot 1:" not in later and later.count("goroutines now") == 1
    _tmux("send-keys", "-t", session, "b")
    _wait_for(session, lambda s: "blocked ▼" in s and "sorted by blocked" in s)
    _tmux("send-keys", "-t", session, "p")
    paused = _wait_for(session, lambda s: "PAUSED" in s)
    time.sleep(2.5)  # refreshes would have come by now: the screen stays as it was
    assert _tmux("capture-pane", "-p", "-t", session) == paused
    _tmux("send-keys", "-t", session, "p")
    _wait_for(session, lambda s: "PAUSED" not in s)
    _tmux("send-keys", "-t", session, "q")
    deadline = time.monotonic() + 30
    while not status.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert status.read_text().strip() == "0"


def test_the_parser_offers_every_sort_column_the_screen_has() -> None:
    from livetrace._cli.top_options import SORT_COLUMNS
    from livetrace._views.top_screen import SORT_NAMES

    assert set(SORT_COLUMNS) == set(SORT_NAMES)
