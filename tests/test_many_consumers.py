"""Many consumers of one trace, against the real demo: late joiners (a generation boundary on Go 1.22+, the next
segment on legacy Go, or a plain refusal), a consumer frozen with SIGSTOP
that sheds generations alone within bounded memory, and a new consumer right
after one was SIGKILLed. Helper behaviour, not decoding: run once
(test_shared_filters.py has a recording and two filtered tails at once)."""

from __future__ import annotations

import signal
import subprocess
import urllib.request
from pathlib import Path

import pytest
import trio

import livetrace
from livetrace._protocol import frames as proto

from .conftest import cli, demo, go_tool_trace

pytestmark = [pytest.mark.slow, pytest.mark.once]


async def finish(proc: subprocess.Popen[str], timeout: float = 90) -> tuple[int, str, str]:
    def wait() -> tuple[int, str, str]:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err

    return await trio.to_thread.run_sync(wait)


async def wait_recording(tmp_path: Path, out: Path) -> None:
    """Until the recording's temporary file holds more than the trace header."""
    with trio.fail_after(30):
        while not any(p.stat().st_size > 16 for p in tmp_path.glob(f"{out.name}.*.part")):
            await trio.sleep(0.05)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


async def test_a_late_joiner_gets_a_trace_that_starts_at_a_generation_boundary(tmp_path: Path) -> None:
    async with demo("1.26") as d, livetrace.connect(d.trace_address, client_name="first", advance=0.2) as first:
        frames = first.chunks()
        while first.counters.chunks < 3:
            await frames.__anext__()
        async with livetrace.connect(d.trace_address, duration=1.0, client_name="late") as late:
            assert late.info.joined_running and late.info.first_generation > 1
            chunks = [c async for c in late.chunks() if isinstance(c, proto.Chunk)]
        assert late.end is not None and late.end.complete and late.end.reason == "duration"
        assert chunks[0].data.startswith(b"go 1.26 trace")
        assert chunks[1].generation == late.info.first_generation
        path = tmp_path / "late.trace"
        path.write_bytes(b"".join(c.data for c in chunks))
        go_tool_trace("1.26", path)
        await first.stop()
        async for _ in frames:
            pass
        assert first.end is not None and first.end.complete and first.end.dropped_chunks == 0


async def test_a_frozen_consumer_sheds_generations_alone_in_bounded_memory(tmp_path: Path) -> None:
    queue_mb = 16
    fast_out, slow_out = tmp_path / "fast.trace", tmp_path / "slow.trace"
    async with demo("1.26", args=["-queue-mb", str(queue_mb)]) as d:
        fast = cli("record", d.trace_address, "-o", str(fast_out), "-d", "24")
        slow = cli("record", d.trace_address, "-o", str(slow_out), "-d", "24")
        await wait_recording(tmp_path, fast_out)
        await wait_recording(tmp_path, slow_out)
        before = rss_kib(d.pid)
        slow.send_signal(signal.SIGSTOP)
        try:
            await trio.sleep(20)  # the frozen consumer falls behind: inherent to the test
            during = rss_kib(d.pid)
        finally:
            slow.send_signal(signal.SIGCONT)
        fast_code, _, fast_err = await finish(fast)
        slow_code, _, slow_err = await finish(slow)
    assert fast_code == 0 and "trace complete (ended: duration)" in fast_err, fast_err
    assert "fell behind" not in fast_err and not list(tmp_path.glob("fast.*.trace"))
    go_tool_trace("1.26", fast_out)
    assert slow_code == 0, slow_err
    assert "fell behind" in slow_err and ("generations shed" in slow_err or "1 generation shed" in slow_err), slow_err
    assert (during - before) * 1024 < (queue_mb << 20) + (32 << 20), (before, during)


async def test_pprof_trace_handler_joins_the_shared_trace(tmp_path: Path) -> None:
    async with demo("1.26") as d, livetrace.connect(d.trace_address, client_name="first") as first:
        frames = first.chunks()
        while first.counters.chunks < 3:
            await frames.__anext__()

        def fetch() -> bytes:
            with urllib.request.urlopen(d.http + "/debug/pprof/trace?seconds=1", timeout=30) as r:
                body: bytes = r.read()
            return body

        path = tmp_path / "pprof.trace"
        path.write_bytes(await trio.to_thread.run_sync(fetch))
        go_tool_trace("1.26", path)
        await first.stop()
        async for _ in frames:
            pass
        assert first.end is not None and first.end.complete


@pytest.mark.parametrize("version", ["1.26", "1.21", "1.19"])
async def test_a_recording_right_after_a_killed_consumer_succeeds(version: str, tmp_path: Path) -> None:
    killed = tmp_path / "killed.trace"
    async with demo(version) as d:
        proc = cli("record", d.trace_address, "-o", str(killed))
        await wait_recording(tmp_path, killed)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        out = tmp_path / "next.trace"
        code, _, err = await finish(cli("record", d.trace_address, "-o", str(out), "-d", "1"))
        # Seen once in CI (Go 1.21, not reproduced in 45 runs here): the service refused the
        # connection. The service's state and log say why, should it come back.
        service = f"service exit status {d.process.poll()}; its log ends:\n{d.log_tail()}"
    assert code == 0, f"{err}\n{service}"
    go_tool_trace(version, out)


async def test_legacy_joiners_start_at_the_next_segment_or_are_told_to_wait(tmp_path: Path) -> None:
    async with demo("1.21") as d:
        async with livetrace.connect(d.trace_address, segment=1, client_name="segmented") as first:
            frames = first.chunks()
            while first.counters.segments < 1:
                await frames.__anext__()
            async with livetrace.connect(d.trace_address, duration=0.5) as late:
                assert late.info.joined_running and late.info.first_segment >= 2 and late.info.segment_ms == 1000
                chunks = [c async for c in late.chunks()]
            assert late.end is not None and late.end.complete
            assert all(isinstance(c, proto.Chunk) for c in chunks)  # one segment: no segment ends
            path = tmp_path / "late.trace"
            path.write_bytes(b"".join(c.data for c in chunks if isinstance(c, proto.Chunk)))
            assert path.read_bytes().startswith(b"go 1.21 trace")
            go_tool_trace("1.21", path)
            await first.stop()
            async for _ in frames:
                pass
        async with livetrace.connect(d.trace_address, duration=30, client_name="whole") as whole:
            frames = whole.chunks()
            while whole.counters.chunks < 2:
                await frames.__anext__()
            with pytest.raises(livetrace.LegacyTraceRunningError) as exc:
                async with livetrace.connect(d.trace_address):
                    pass
            await whole.stop()
            async for _ in frames:
                pass
    msg = str(exc.value)
    assert "only readable whole" in msg and '"whole"' in msg and "ends in about" in msg
    assert isinstance(exc.value, livetrace.BusyError)
