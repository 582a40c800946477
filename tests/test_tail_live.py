"""Live events: `Session.events()`, `livetrace tail` in both formats, gaps."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import trio

import livetrace
from livetrace._session.defaults import GENERATION_BYTES
from livetrace._trace.modern.decoder import ModernDecoder

from .conftest import cli, demo, go_tool_trace

pytestmark = pytest.mark.slow


def flat(
    item: livetrace.EventBatch | livetrace.Provisional | livetrace.Notice,
) -> list[livetrace.Event | livetrace.Gap]:
    """A modern session's item as a list: a batch's events, or its gap."""
    if isinstance(item, livetrace.Gap):
        return [item]
    assert isinstance(item, livetrace.EventBatch), item  # nothing else comes from a modern runtime
    return list(item)


async def test_events_arrive_while_the_trace_is_still_running() -> None:
    async with demo("1.26", args=["-workers", "1"]) as d, livetrace.connect(d.trace_address) as session:
        got = []
        async for batch in session.event_batches():
            got += flat(batch)
            break  # the first generation, delivered long before any stop
        assert session.end is None, "events must come while the session runs, not at its end"
        await session.stop()
        async for batch in session.event_batches():
            got += flat(batch)
    kinds = {e.kind_name for e in got if isinstance(e, livetrace.Event)}
    assert {"Sync", "StateTransition", "TaskBegin", "Log", "RegionBegin"} <= kinds
    logs = [e for e in got if isinstance(e, livetrace.Event) and e.kind == livetrace.Kind.LOG]
    assert logs[0].log()[1:] == ("status", "200 OK")
    assert any(f.func.endswith("httpClient.func5") or "httpClient" in f.func for f in logs[0].stack())
    assert logs[0].wall_time is not None


async def test_a_stalled_consumer_gets_gaps_and_decoding_restarts_after_them() -> None:
    async with demo("1.26", args=["-queue-mb", "4", "-workers", "2"]) as d:
        async with livetrace.connect(d.trace_address) as session:
            await trio.sleep(8)  # read nothing: the helper's small queue overflows
            items: list[livetrace.Event | livetrace.Gap] = []
            syncs_after_gap = 0
            with trio.fail_after(120):
                async for batch in session.event_batches():  # now keep up, until whole generations follow a gap
                    items += flat(batch)
                    if any(isinstance(i, livetrace.Gap) for i in items):
                        syncs_after_gap += sum(
                            1 for i in flat(batch) if isinstance(i, livetrace.Event) and i.kind == livetrace.Kind.SYNC
                        )
                    if syncs_after_gap >= 2:
                        break
            await session.stop()
    gap = next(i for i in items if isinstance(i, livetrace.Gap))
    assert gap.bytes > 0 and gap.last_generation >= gap.first_generation
    after = [e for e in items[items.index(gap) + 1 :] if isinstance(e, livetrace.Event)]
    transitions = [e for e in after if e.kind == livetrace.Kind.STATE_TRANSITION]
    assert transitions, "decoding goes on after a gap"
    # It starts afresh there: states it has not seen yet are Undetermined.
    assert transitions[0].state_transition().old == "Undetermined"


@pytest.mark.once  # the fields; both cores' JSON lines are compared byte for byte (tests/test_compiled_core.py)
async def test_tail_jsonl_has_the_documented_fields() -> None:
    async with demo("1.26", args=["-workers", "1"]) as d:
        proc = cli("tail", d.trace_address, "--format", "jsonl", "--duration", "2.5")
        out, err = await trio.to_thread.run_sync(lambda: proc.communicate(timeout=120))
    assert proc.returncode == 0, err
    objs = [json.loads(line) for line in out.splitlines()]
    assert objs[0]["kind"] == "Sync" and objs[-1]["kind"] == "Sync"
    for o in objs:
        assert {"kind", "time_ns", "g", "p", "m"} <= o.keys()
        assert "wall" in o or o is objs[-1]
    st = next(o for o in objs if o["kind"] == "StateTransition" and o["resource"] == "goroutine" and o["reason"])
    assert {"id", "from", "to", "reason", "stack"} <= st.keys()
    log = next(o for o in objs if o["kind"] == "Log")
    assert log["category"] == "status" and log["stack"] and {"function", "file", "line"} == log["stack"][0].keys()
    task = next(o for o in objs if o["kind"] == "TaskBegin")
    assert task["type"] == "request" and task["parent"] is None


async def test_tail_text_is_one_line_per_event_and_stops_at_the_limit() -> None:
    async with demo("1.26", args=["-workers", "1"]) as d:
        proc = cli("tail", d.trace_address, "--limit", "50")
        out, err = await trio.to_thread.run_sync(lambda: proc.communicate(timeout=120))
    assert proc.returncode == 0, err
    lines = out.splitlines()
    assert len(lines) == 50 and "Sync" in lines[0] and "N=1" in lines[0]
    assert "50 events; session ended: client-stop" in err


def test_tail_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    async def run() -> tuple[int, str]:
        async with demo("1.26", args=["-workers", "1"]) as d:
            p = subprocess.run(
                f"{sys.executable} -m livetrace tail {d.trace_address} | head -3",
                shell=True,
                capture_output=True,
                text=True,
                timeout=120,
            )
            return len(p.stdout.splitlines()), p.stderr

    n, err = trio.run(run)
    assert n == 3 and "Traceback" not in err and "Error" not in err


async def test_demo_tails_after_recording(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "livetrace", "demo", "-s", "1", "--tail", "2.5", "-o", str(tmp_path / "demo.trace")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "tailing its events live" in proc.stderr
    assert "Log " in proc.stdout and "events in this generation" in proc.stdout
    # Its summary: one `livetrace top` snapshot.
    assert "livetrace top" in proc.stderr and "top goroutines by start function" in proc.stdout
    go_tool_trace("1.26", tmp_path / "demo.trace")


def test_the_fast_jsonl_encoder_writes_the_documented_objects() -> None:
    from livetrace._cli.render.jsonl import JsonlEncoder, event_dict

    from . import textform

    encoder = JsonlEncoder()
    for t in textform.all_tests():
        if not t.expect_success:
            continue
        d = ModernDecoder()
        for e in d.feed(t.data) + d.close():
            assert json.loads(encoder.encode(e)) == event_dict(e), t.name


async def test_tail_shows_only_the_kinds_asked_for() -> None:
    async with demo("1.26", args=["-workers", "1"]) as d:
        proc = cli("tail", d.trace_address, "--format", "jsonl", "-k", "Log", "-k", "TaskBegin", "--limit", "40")
        out, err = await trio.to_thread.run_sync(lambda: proc.communicate(timeout=120))
    assert proc.returncode == 0, err
    kinds = [json.loads(line)["kind"] for line in out.splitlines()]
    assert len(kinds) == 40 and set(kinds) == {"Log", "TaskBegin"}


async def test_a_live_consumer_can_have_generations_closed_more_often() -> None:
    async with demo("1.26", args=["-workers", "1"]) as d:
        async with livetrace.connect(d.trace_address, duration=2.5, advance=0.2) as session:
            assert session.info.advance_ms == 200
            syncs = [
                e async for e in session.events() if isinstance(e, livetrace.Event) and e.kind == livetrace.Kind.SYNC
            ]
    # The runtime alone closes about two in 2.5 s.
    assert len(syncs) >= 7


async def test_a_busy_service_s_generations_are_closed_at_the_size_asked_for() -> None:
    async with demo("1.26", args=["-workers", "4"]) as d:
        async with livetrace.connect(d.trace_address, duration=2.5, generation_bytes=1 << 20) as session:
            assert session.info.advance_bytes == 1 << 20 and session.info.advance_ms == 0
            chunks = [c async for c in session.chunks() if isinstance(c, livetrace.Chunk)]
    size: dict[int, int] = {}
    for c in chunks[1:]:  # after the header
        size[c.generation] = size.get(c.generation, 0) + len(c.data)
    # By time alone the runtime closes about three in 2.5 s; by size, one a MiB (but at most one
    # in 0.1 s). The service's buffers in flight when one is closed still go to it.
    want = min(sum(size.values()) >> 20, 25)
    assert len(size) >= max(want // 2, 4), size
    async with demo("1.26", args=["-workers", "1"]) as d:
        async with livetrace.connect(d.trace_address, duration=0.2) as session:
            assert session.info.advance_bytes == GENERATION_BYTES


async def test_connect_refuses_a_generation_size_out_of_the_helper_s_range() -> None:
    for size in (1000, (1 << 30) + 1):
        with pytest.raises(ValueError, match=f"generation_bytes must be 1048576 to 1073741824 .* not {size}"):
            async with livetrace.connect("unix:/nonexistent/helper.sock", generation_bytes=size):
                pass


async def test_tail_asks_for_the_generation_size_given() -> None:
    async with demo("1.26", args=["-workers", "1"]) as d:
        for given, said in (("1", "generation (0.5 s, or 1 MiB)"), ("0", "generation (0.5 s)")):
            proc = cli("tail", d.trace_address, "--generation-mb", given, "--duration", "0.3", "-k", "Log")
            _, err = await trio.to_thread.run_sync(lambda: proc.communicate(timeout=120))  # noqa: B023
            assert proc.returncode == 0 and said in err, err
    proc = cli("tail", "unix:/nonexistent", "--generation-mb", "0.5")
    _, err = await trio.to_thread.run_sync(lambda: proc.communicate(timeout=120))
    assert proc.returncode == 2 and "0.5 MiB: a generation's size is 1 to 1024 MiB, or 0 for no limit" in err, err


async def test_legacy_runtimes_ignore_the_advance_request(tmp_path: Path) -> None:
    async with demo("1.21", args=["-workers", "1"]) as d:
        async with livetrace.connect(d.trace_address, duration=0.5, advance=0.2, generation_bytes=1 << 20) as session:
            assert session.info.advance_ms == 0 and session.info.advance_bytes == 0
            rec = await livetrace.record(session, tmp_path / "legacy.trace")
        assert rec.end is not None and rec.end.complete
