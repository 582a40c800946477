"""Two subscribers of one live session, each with its own filter: the
service's request logs, and every event with net/http on the stack. The
trace is decoded once; each filter runs in the decoding core.

Run it with: python examples/two_subscribers.py unix:/tmp/svc.sock [SECONDS]
"""

import re
import sys

import trio

import livetrace
from livetrace import Filter, Kind


async def main(address: str, seconds: float) -> None:
    async with livetrace.connect(address, duration=seconds) as session:
        logs = session.subscribe(Filter(kinds=frozenset({Kind.LOG})))
        http = session.subscribe(Filter(stack=re.compile(r"net/http")), what="batches", buffer=64)
        counts = {"logs": 0, "http": 0}

        async def print_logs() -> None:
            async for ev in logs:
                if not isinstance(ev, livetrace.Event):
                    print(f"[logs] {ev}")  # a notice
                    continue
                counts["logs"] += 1
                if counts["logs"] <= 5:
                    task, category, message = ev.log()
                    print(f"[logs] task {task} {category}: {message}")

        async def count_http() -> None:
            async for batch in http:
                if not isinstance(batch, livetrace.EventBatch):
                    print(f"[http] {batch}")  # a notice: a SubscriberGap if this one fell behind
                    continue
                counts["http"] += len(batch)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(print_logs)
            nursery.start_soon(count_http)
    print(f"{counts['logs']} log events; {counts['http']} events with net/http on the stack")


if __name__ == "__main__":
    trio.run(main, sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 3.0)
