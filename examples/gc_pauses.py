"""Tail GC cycles and stop-the-world pauses longer than a threshold (1 ms
unless told otherwise), as spans.

Run it with: python examples/gc_pauses.py unix:/tmp/svc.sock [SECONDS] [THRESHOLD_MS]
(The same from the shell: livetrace tail ADDRESS --spans -k gc -k stw --min-duration 1ms)
"""

import sys

import trio

import livetrace
from livetrace import Filter, SpanKind


async def main(address: str, seconds: float, threshold_ms: float) -> None:
    # The kinds and the threshold run in the decoding core: shorter pauses
    # never become Python objects.
    flt = Filter(kinds=frozenset({SpanKind.GC, SpanKind.STW}), min_duration=round(threshold_ms * 1e6))
    pauses = 0
    async with livetrace.connect(address, duration=seconds) as session:
        async for item in session.subscribe(flt, what="spans"):
            if not isinstance(item, livetrace.SpanBatch):
                print(f"--- {item}")  # a notice: a gap in the trace
                continue
            for span in item:
                pauses += 1
                why = f" ({span.reason})" if span.reason else ""
                print(f"{span.kind}{why}: {span.duration / 1e6:.3f} ms at {span.start / 1e9:.3f} s")
    print(f"{pauses} GC cycles and stop-the-world pauses of {threshold_ms:g} ms or more")


if __name__ == "__main__":
    args = sys.argv[1:]
    trio.run(main, args[0], float(args[1]) if len(args) > 1 else 5.0, float(args[2]) if len(args) > 2 else 1.0)
