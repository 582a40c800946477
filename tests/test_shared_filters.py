"""A recording and two `livetrace tail`s with different filters against one
service at once: the recording is complete and opens in Go's tool, and each
tail shows exactly what its filter selects from the recording's events.

A tail joins the running trace late, at a generation (or, legacy, segment)
boundary, and leaves at one, so its events are a contiguous run of the
recording's filtered events. Run on both twins: the filters run in the core."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

import livetrace
from livetrace import Filter, Kind
from livetrace._cli.render.jsonl import JsonlEncoder
from livetrace._trace.select.events import select_events

from .conftest import cli, demo, go_tool_trace

pytestmark = pytest.mark.slow

# Neither filter keeps what a late joiner's decoder makes differently from
# the recording's: the first generation's transitions out of Undetermined,
# and the Syncs' numbers.
LOGS = Filter(kinds=frozenset({Kind.LOG}))
P0_NOT_SCHED = Filter(kinds=frozenset(Kind) - {Kind.BAD, Kind.SYNC, Kind.STATE_TRANSITION}, procs=frozenset({0}))
TAIL_ARGS = {LOGS: ["-k", "Log"], P0_NOT_SCHED: ["-k", "!StateTransition", "-k", "!Sync", "--proc", "0"]}


async def finish(proc: subprocess.Popen[str], timeout: float = 90) -> tuple[int, str, str]:
    def wait() -> tuple[int, str, str]:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err

    return await trio.to_thread.run_sync(wait)


def comparable(line: str, legacy: bool) -> dict[str, Any]:
    """An event's JSON as both streams must agree on it.

    Without wall-clock times, which a live legacy session estimates from
    when chunks arrived and a file cannot; a legacy event without its time
    too, as a live session puts its segments on one time line and each
    recorded segment starts its own. And a task's end without the type and
    parent its begin gave: a late joiner never saw a task begun before it
    joined (Go's reader, on a flight recording, neither).
    """
    d: dict[str, Any] = json.loads(line)
    d.pop("wall", None)
    if isinstance(d.get("clock_snapshot"), dict):
        d["clock_snapshot"].pop("wall", None)
    if legacy:
        d.pop("time_ns", None)
    if d.get("kind") == "TaskEnd":
        d.pop("type", None)
        d.pop("parent", None)
    return d


def expected(paths: list[Path], filters: list[Filter], legacy: bool) -> list[list[dict[str, Any]]]:
    """What each filter selects from the recording (decoded once)."""
    encoders = [JsonlEncoder() for _ in filters]
    out: list[list[dict[str, Any]]] = [[] for _ in filters]
    for path in paths:
        for item in livetrace.decode_batches(path):
            if isinstance(item, livetrace.EventBatch):
                for flt, encoder, lines in zip(filters, encoders, out, strict=True):
                    text = b"".join(encoder.encode_batch(select_events(item, flt))).decode()
                    lines.extend(comparable(line, legacy) for line in text.splitlines())
    return out


def recorded_segments(tmp_path: Path, name: str) -> list[Path]:
    """The recording's files in order: the first, then each further segment's."""
    first = tmp_path / name
    rest = sorted(tmp_path.glob(first.stem + ".*" + first.suffix), key=lambda p: int(p.stem.rsplit(".", 1)[1]))
    return [first, *rest]


# The twin's pass runs the modern case only: its legacy decoding is slow live (a minute a case),
# and tests/test_select.py holds both twins' legacy filtering to the same meaning.
@pytest.mark.parametrize(
    "version", ["1.26", pytest.param("1.21", marks=pytest.mark.once), pytest.param("1.19", marks=pytest.mark.once)]
)
async def test_a_recording_and_two_filtered_tails_share_one_trace(version: str, tmp_path: Path) -> None:
    legacy = version in ("1.21", "1.19")
    segment = ["--segment", "1"] if legacy else []  # a legacy trace is shared in segments
    out = tmp_path / "shared.trace"
    # Modern Go, the case the twin's pass runs: one load generator of each kind still logs on P 0 in
    # every generation, and keeps the recording the tails are held to (decoded whole here) small. A
    # legacy trace needs the full load, or its first buffers come too late for the wait below.
    async with demo(version, full_load=legacy) as d:
        # The recording lasts until both tails are done: on a loaded machine a tail's start can
        # come late enough that a fixed-length recording would end before the tail does.
        rec = cli("record", d.trace_address, "-o", str(out), *segment)
        # A legacy trace's first buffer comes when one fills: on a loaded machine (three demos at
        # full load on two cores) that took over 30 s.
        with trio.fail_after(120):
            while not any(p.stat().st_size > 16 for p in tmp_path.glob("shared.trace.*.part")):
                await trio.sleep(0.05)
        tails = {
            flt: cli("tail", d.trace_address, "-d", "2", "--format", "jsonl", *args, *segment)
            for flt, args in TAIL_ARGS.items()
        }
        results = {flt: await finish(p) for flt, p in tails.items()}
        rec.send_signal(signal.SIGINT)
        code, _, err = await finish(rec)
    assert code == 0, err
    assert "trace complete (ended: client-stop)" in err and "shed" not in err, err
    assert not list(tmp_path.glob("*.incomplete"))
    paths = recorded_segments(tmp_path, out.name)
    for p in paths:
        go_tool_trace(version, p)
    wants = dict(zip(results, expected(paths, list(results), legacy), strict=True))
    for flt, (tail_code, tail_out, tail_err) in results.items():
        assert tail_code == 0, tail_err
        assert "summary:" in tail_err, tail_err
        got = [comparable(line, legacy) for line in tail_out.splitlines()]
        if legacy:  # where one segment ends and the next begins
            got = [e for e in got if not (e["kind"] == "Gap" and "segment" in e)]
        assert got, f"{TAIL_ARGS[flt]} showed nothing: {tail_err}"
        want = wants[flt]
        # The tail's run of events is where its first event is in the recording. Matched without
        # times first: Go's reader moves the events of a generation that come before the previous
        # generation's end to just after it, and a late joiner's first generation has no previous
        # one, so the first events the tail shows can be earlier than in the recording.
        untimed = [{k: v for k, v in e.items() if k != "time_ns"} for e in want]
        got_untimed = [{k: v for k, v in e.items() if k != "time_ns"} for e in got]
        starts = [i for i, e in enumerate(untimed) if e == got_untimed[0]]
        near = [e for e in want if e.get("time_ns") == got[0].get("time_ns")]
        assert starts, (
            f"{TAIL_ARGS[flt]}: the tail's first event is not in the recording of {len(paths)} files: {got[0]}; "
            f"the recording's events at that time: {near}; the tail: {tail_err}; the recording: {err}"
        )
        at = next((i for i in starts if untimed[i : i + len(got)] == got_untimed), None)
        assert at is not None, f"{TAIL_ARGS[flt]} differs from the recording"
        moved = [k for k, e in enumerate(got) if e.get("time_ns") != want[at + k].get("time_ns")]
        assert moved == list(range(len(moved))), f"{TAIL_ARGS[flt]}: times differ past the first generation"
        assert all(got[k]["time_ns"] < want[at + k]["time_ns"] for k in moved)
