"""How good are the provisional times of a live legacy trace?

    .venv/bin/python bench/legacy_clock.py --go PATH-to-go-1.19-or-1.21 [--seconds 5] [--workers 4]

Records the demo service built with a legacy Go through the bridge and feeds
each chunk to LegacyDecoder as it arrives, with the time the helper got it.
Every event delivered once the clock is known gets a provisional time
(the estimate as it stood then); at the end the footer gives the exact
ones. Prints the estimated frequency against the footer's, and how far
provisional times between events stray from the exact ones.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import trio

import livetrace
from livetrace._go.demo import run_demo
from livetrace._go.toolchain import build_demo, find_go
from livetrace._trace.legacy.read import LegacyDecoder
from livetrace._trace.spec.legacy import EV_CPU_SAMPLE, EV_GO_SYS_EXIT


async def main(args: argparse.Namespace) -> None:
    go = find_go(args.go)
    decoder = LegacyDecoder()
    provisional = []  # (event, provisional unix ns)
    undated = 0
    async with run_demo(build_demo(Path(go)), args=["-workers", str(args.workers)]) as demo:
        async with livetrace.connect(demo.trace_address, duration=args.seconds) as session:
            async for c in session.chunks():
                if not isinstance(c, livetrace.Chunk):
                    continue
                for e in decoder.feed(c.data, c.read_unix_ns):
                    if e.typ in (EV_CPU_SAMPLE, EV_GO_SYS_EXIT):
                        continue  # their times are re-stamped at the end
                    wall = decoder.clock.wall_ns(e.ts)
                    if wall is None:
                        undated += 1
                    else:
                        provisional.append((e, wall))
    estimate = decoder.clock.ticks_per_sec
    trace = decoder.close()
    ref, ref_wall = provisional[0]
    errors = sorted(abs((wall - ref_wall) - (e.ts - ref.ts)) / 1e6 for e, wall in provisional)
    q = statistics.quantiles(errors, n=100)
    print(
        f"demo {demo.go_version}, {args.workers} workers, {args.seconds:g} s: {len(trace.events):,} events, "
        f"{len(provisional):,} given a provisional time as they arrived, {undated:,} before the clock was known"
    )
    print(
        f"frequency: estimated {estimate:,.0f}/s, footer {trace.ticks_per_sec:,}/s "
        f"({100 * (estimate - trace.ticks_per_sec) / trace.ticks_per_sec:+.4f}%)"
    )
    print(
        f"provisional time between two events, error: p50 {q[49]:.3f} ms, p99 {q[98]:.3f} ms, max {errors[-1]:.3f} ms"
    )


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--go", required=True)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--workers", type=int, default=4)
    trio.run(main, p.parse_args())
