"""A live histogram of scheduler latency: how long goroutines waited to run
(runnable -> running spans), printed every second.

Run it with: python examples/sched_latency.py unix:/tmp/svc.sock [SECONDS]
"""

import sys

import trio

import livetrace
from livetrace import Filter, SpanKind

# Bucket upper bounds, ns: 1µs, 10µs, 100µs, 1ms, 10ms, 100ms, more.
BOUNDS = [1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000]
LABELS = ["<1µs", "<10µs", "<100µs", "<1ms", "<10ms", "<100ms", ">=100ms"]


def bucket(ns: int) -> int:
    return next((i for i, b in enumerate(BOUNDS) if ns < b), len(BOUNDS))


async def main(address: str, seconds: float) -> None:
    counts = [0] * len(LABELS)
    flt = Filter(kinds=frozenset({SpanKind.RUNNABLE}))
    async with livetrace.connect(address, duration=seconds) as session, trio.open_nursery() as nursery:

        async def report() -> None:
            while True:
                await trio.sleep(1)
                total = sum(counts) or 1
                print(" ".join(f"{lab}:{100 * c / total:4.1f}%" for lab, c in zip(LABELS, counts, strict=True)))

        nursery.start_soon(report)
        async for item in session.subscribe(flt, what="spans", buffer=64):
            if not isinstance(item, livetrace.Notice):
                for span in item:
                    counts[bucket(span.duration)] += 1
        nursery.cancel_scope.cancel()
    print(f"{sum(counts)} waits to run")


if __name__ == "__main__":
    trio.run(main, sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 5.0)
