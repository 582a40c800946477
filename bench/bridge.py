"""How fast the bridge carries the demo's trace, and what it costs.

    .venv/bin/python bench/bridge.py [--go PATH] [--seconds 10] [--workers 4]

Builds the demo with the given Go (default: as `livetrace demo` finds it),
records it for a while and prints the trace data rate, the consumer's CPU
per MB, the service's RSS with and without a session, and any drops.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import psutil
import trio

import livetrace
from livetrace._go.demo import run_demo
from livetrace._go.toolchain import build_demo, find_go


async def main(args: argparse.Namespace) -> None:
    exe = build_demo(find_go(args.go))
    me = psutil.Process()
    async with run_demo(exe, args=["-workers", str(args.workers)]) as demo:
        service = psutil.Process(demo.pid)
        await trio.sleep(1)
        idle_rss = service.memory_info().rss
        peak = idle_rss
        with tempfile.TemporaryDirectory() as tmp:
            async with livetrace.connect(demo.trace_address, duration=args.seconds) as session:
                cpu0, t0 = me.cpu_times(), trio.current_time()
                async with trio.open_nursery() as nursery:

                    async def sample() -> None:
                        nonlocal peak
                        while True:
                            peak = max(peak, service.memory_info().rss)
                            await trio.sleep(0.1)

                    nursery.start_soon(sample)
                    rec = await livetrace.record(session, Path(tmp) / "bench.trace")
                    nursery.cancel_scope.cancel()
                elapsed = trio.current_time() - t0
                cpu1 = me.cpu_times()
    mb = rec.counters.bytes / 1e6
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    print(f"service         {demo.go_version}, {args.workers} workers of each kind")
    print(f"trace data      {mb:.1f} MB in {rec.counters.chunks} chunks over {elapsed:.2f} s = {mb / elapsed:.2f} MB/s")
    print(f"consumer CPU    {cpu:.2f} s = {cpu / mb * 1e3:.1f} ms per MB")
    print(f"service RSS     {idle_rss / 2**20:.1f} MiB idle, {peak / 2**20:.1f} MiB peak while traced")
    print(f"dropped         {rec.counters.dropped_chunks} chunks, complete={rec.complete}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--go")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--workers", type=int, default=4)
    trio.run(main, p.parse_args())
