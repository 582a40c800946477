"""Fan-out throughput: events per second delivered to 1, 2 and 4
subscribers from one decode, without a network.

    .venv/bin/python bench/fanout.py [--trace FILE] [--go PATH] [--runs N]

The trace's bytes go through the decoder once, and each batch through the
session's fan-out (livetrace._session.subscribers.Fanout, the same code a
live session runs, sans socket) to N lossless subscribers that receive
their batches. Two mixes of subscribers: all unfiltered ("all"), and
filtered ones in turn (state transitions only; two goroutines; a stack
regex; logs) that keep less. "delivered" counts the events in the batches
the subscribers received, per second of the whole run (decode included);
"decoded" the trace's events per second. Without --trace it records the
demo service (Go 1.26, 4 workers) until the file holds at least 8 MB.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import trio
from _common import demo_trace  # bench/, the script's directory

from livetrace import EventBatch, Filter, Kind, implementation, open_decoder
from livetrace._go.toolchain import find_go
from livetrace._session.subscribers import Fanout, Subscription

CHUNK = 1 << 20
FILTERS = [
    Filter(kinds=frozenset({Kind.STATE_TRANSITION})),
    Filter(goroutines=frozenset({1, 2})),
    Filter(stack=re.compile(r"net/http")),
    Filter(kinds=frozenset({Kind.LOG})),
]


async def run(data: bytes, filters: list[Filter | None]) -> tuple[float, int, int]:
    """(seconds, events decoded, events delivered)."""
    fan = Fanout()
    subs = [fan.subscribe(f, what="batches", lossless=True, buffer=8) for f in filters]
    decoded = delivered = 0

    async def consume(sub: Subscription) -> None:
        nonlocal delivered
        async for item in sub:
            if isinstance(item, EventBatch):
                delivered += len(item)

    async def feed() -> None:
        nonlocal decoded
        dec = open_decoder(data[:16])
        for pos in range(0, len(data), CHUNK):
            for item in dec.feed_iter(data[pos : pos + CHUNK]):
                decoded += len(item) if isinstance(item, EventBatch) else 0
                await fan.publish(item)
        for item in dec.close_iter():
            decoded += len(item) if isinstance(item, EventBatch) else 0
            await fan.publish(item)
        fan.finish()

    t = time.perf_counter()
    async with trio.open_nursery() as n:
        for s in subs:
            n.start_soon(consume, s)
        n.start_soon(feed)
    return time.perf_counter() - t, decoded, delivered


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", type=Path, help="a trace file (default: record the demo)")
    ap.add_argument("--go", type=Path, help="the go binary to build the demo with")
    ap.add_argument("--runs", type=int, default=3, help="best of N (default 3)")
    args = ap.parse_args()
    go = args.go or find_go()
    with demo_trace(args.trace, go) as path:
        data = path.read_bytes()
    print(f"trace: {len(data) / 1e6:.1f} MB; decoder: {implementation()}")
    base = min(trio.run(run, data, []) for _ in range(args.runs))
    print(f"decode alone: {base[1] / base[0] / 1e6:.2f} M events/s ({base[0]:.2f} s)")
    for mix in ("all", "filtered"):
        for n in (1, 2, 4):
            filters: list[Filter | None] = [None] * n if mix == "all" else list(FILTERS[:n])
            secs, decoded, delivered = min(trio.run(run, data, filters) for _ in range(args.runs))
            print(
                f"{mix:>8} x{n}: {delivered / secs / 1e6:6.2f} M events/s delivered "
                f"({delivered:,} events in {secs:.2f} s; decoded {decoded / secs / 1e6:.2f} M events/s)"
            )


if __name__ == "__main__":
    main()
