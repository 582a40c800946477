"""How one helper serves 1, 2 and 4 consumers of one trace: what each got
(bytes, chunks, MB/s, and the events in what it got, per second) and the
service's memory (VmRSS) with them attached.

    python bench/fanout_consumers.py [--go PATH] [--seconds 5] [--counts 1,2,4]

Each round starts the demo service (built with that Go), attaches N raw
consumers with livetrace.connect (chunks only, nothing decoded) for the same
duration, and prints one line per consumer and the demo's VmRSS measured
while they were attached. The events each consumer got are counted after
the round, by decoding what it received (so decoding does not slow the
consumers down). Not a test: figures depend on the machine.
"""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path

import trio

import livetrace
from livetrace._go.demo import run_demo
from livetrace._go.toolchain import build_demo


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


Got = tuple[int, int, int, float, bytes | None]


async def consume(address: str, seconds: float, i: int, out: list[Got]) -> None:
    data: list[bytes] | None = []
    async with livetrace.connect(address, duration=seconds, client_name=f"bench {i}") as session:
        start = trio.current_time()
        async for frame in session.chunks():
            if isinstance(frame, livetrace.Chunk) and data is not None:
                data.append(frame.data)
            elif isinstance(frame, livetrace.Notice):
                data = None  # shed generations: what it got is no longer one trace to count
        elapsed = trio.current_time() - start
        c = session.counters
        out.append((i, c.bytes, c.chunks, elapsed, None if data is None else b"".join(data)))


def count_events(trace: bytes | None) -> int | None:
    if trace is None:
        return None
    return sum(len(b) for b in livetrace.decode_batches(io.BytesIO(trace)) if isinstance(b, livetrace.EventBatch))


async def round_(exe: Path, n: int, seconds: float) -> None:
    async with run_demo(exe, args=["-workers", "4"]) as demo:
        idle = rss_mib(demo.pid)
        got: list[Got] = []
        peak = 0.0
        async with trio.open_nursery() as nursery:
            for i in range(n):
                nursery.start_soon(consume, demo.trace_address, seconds, i, got)
            while len(got) < n:
                peak = max(peak, rss_mib(demo.pid))
                await trio.sleep(0.2)
    total = sum(g[1] for g in got)
    print(f"{n} consumer(s): demo VmRSS idle {idle:.1f} MiB, peak while attached {peak:.1f} MiB")
    events_total = 0
    for i, b, chunks, elapsed, trace in sorted(got, key=lambda g: g[0]):
        rate = b / 1e6 / elapsed
        events = count_events(trace)
        counted = "shed generations: not counted" if events is None else f"{events / elapsed / 1e3:.0f}k events/s"
        events_total += events or 0
        print(
            f"  consumer {i}: {b / 1e6:8.2f} MB in {chunks:6d} chunks over {elapsed:.1f} s ({rate:.2f} MB/s, {counted})"
        )
    print(
        f"  delivered in all: {total / 1e6:.2f} MB ({total / 1e6 / seconds:.2f} MB/s), "
        f"{events_total / seconds / 1e3:.0f}k events/s"
    )


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--go", default=os.environ.get("GO", "go"), help="the Go toolchain to build the demo with")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--counts", default="1,2,4")
    args = p.parse_args()
    exe = build_demo(Path(args.go))
    for n in (int(x) for x in args.counts.split(",")):
        await round_(exe, n, args.seconds)


if __name__ == "__main__":
    trio.run(main)
