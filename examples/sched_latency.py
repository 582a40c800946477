"""A live histogram of scheduler latency: how long goroutines waited to run
(runnable -> running spans), printed every second, and once more at the end.

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


def table(counts: list[int]) -> str:
    """One line: the waits so far, and each bucket's count and share."""
    total = sum(counts)
    cells = (f"{lab} {c} ({100 * c / (total or 1):.1f}%)" for lab, c in zip(LABELS, counts, strict=True))
    return f"{total:>8} waits | " + " | ".join(cells)


async def main(address: str, seconds: float) -> None:
    counts = [0] * len(LABELS)
    seen = 0
    # Only the runnable spans are made into objects; the others stay in the core.
    flt = Filter(kinds=frozenset({SpanKind.RUNNABLE}))
    async with livetrace.connect(address, duration=seconds) as session, trio.open_nursery() as nursery:

        async def report() -> None:
            while True:
                await trio.sleep(1)
                print(table(counts), flush=True)

        nursery.start_soon(report)
        async for item in session.subscribe(flt, what="spans", buffer=64):
            if not isinstance(item, livetrace.SpanBatch):
                print(f"--- {item}")  # a notice: a gap, whose waits are not counted
                continue
            seen += len(item)
            # The batch's columns: no Span object is needed for a duration.
            for start, end in zip(item.starts, item.ends, strict=True):
                counts[bucket(end - start)] += 1
        nursery.cancel_scope.cancel()
    print(table(counts))
    print(f"{seen} runnable spans")


if __name__ == "__main__":
    trio.run(main, sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 5.0)
