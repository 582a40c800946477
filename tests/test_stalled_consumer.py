"""A consumer that connects and then reads nothing must not hurt the
service: its memory stays within the queue's cap plus a margin, and the
consumer learns what was lost (shed generations on modern Go, an early,
still complete stop on legacy Go)."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
import trio

import livetrace

from .conftest import MODERN, demo, go_tool_trace

pytestmark = [pytest.mark.slow, pytest.mark.once]

# A legacy trace must pass three quarters of the queue to be stopped early,
# and a busy machine's demo writes only a few MB in the stall: a smaller
# queue there makes the early stop certain.
QUEUE_MB = {"1.26": 16, "1.21": 4, "1.19": 4}
STALL_SECONDS = 20
MARGIN = 32 << 20


@pytest.mark.parametrize("version", ["1.26", "1.21", "1.19"])
async def test_stalled_consumer_keeps_service_memory_bounded(version: str, tmp_path: Path) -> None:
    queue_mb = QUEUE_MB[version]
    async with demo(version, args=["-queue-mb", str(queue_mb)]) as d:
        service = psutil.Process(d.pid)
        baseline = service.memory_info().rss
        peak = baseline
        async with livetrace.connect(d.trace_address) as session:
            deadline = trio.current_time() + STALL_SECONDS
            while trio.current_time() < deadline:  # connected, reading nothing
                peak = max(peak, service.memory_info().rss)
                await trio.sleep(0.1)
            await session.stop()
            rec = await livetrace.record(session, tmp_path / "stalled.trace")
        peak_mib, base_mib = peak / (1 << 20), baseline / (1 << 20)
        print(f"go {version}: RSS baseline {base_mib:.1f} MiB, peak {peak_mib:.1f} MiB with a {queue_mb} MiB queue")
        assert peak < (queue_mb << 20) + MARGIN, f"RSS peaked at {peak_mib:.1f} MiB"

        end = rec.end
        assert rec.complete and end is not None
        if MODERN[version]:
            assert rec.gaps, "a stalled consumer must be told which generations were shed"
            assert end.dropped_generations >= 1 and end.dropped_bytes > 0
            assert sum(g.bytes for g in rec.gaps) == end.dropped_bytes
            # The helper sheds the oldest generations: those the stalled
            # consumer had begun to read too, so its recording may well hold
            # nothing before the gap and go on in its first file.
        else:
            assert end.reason == "overflow" and end.dropped_chunks == 0
            assert "stopped early" in end.detail
        for path in rec.paths:
            go_tool_trace(version, path)
        # The service is still fine and serves the next consumer.
        async with livetrace.connect(d.trace_address, duration=0.5) as again:
            assert [f async for f in again.chunks()] and again.end is not None and again.end.complete
