"""Tail GC cycles and stop-the-world pauses longer than 1 ms, as spans.

Run it with: python examples/gc_pauses.py unix:/tmp/svc.sock [SECONDS]
(The same from the shell: livetrace tail ADDRESS --spans -k gc -k stw --min-duration 1ms)
"""

import sys

import trio

import livetrace
from livetrace import Filter, SpanKind


async def main(address: str, seconds: float) -> None:
    flt = Filter(kinds=frozenset({SpanKind.GC, SpanKind.STW}), min_duration=1_000_000)
    async with livetrace.connect(address, duration=seconds) as session:
        async for item in session.subscribe(flt, what="spans"):
            if isinstance(item, livetrace.Notice):
                print(f"--- {item}")
                continue
            for span in item:
                why = f" ({span.reason})" if span.reason else ""
                print(f"{span.kind}{why}: {span.duration / 1e6:.2f} ms at {span.start / 1e9:.3f} s")


if __name__ == "__main__":
    trio.run(main, sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 5.0)
