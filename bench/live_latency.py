"""How long after they happen do events reach a `livetrace tail` pipe?

    .venv/bin/python bench/live_latency.py [--go PATH] [--seconds 10] [--workers 1]

Starts the demo service, runs `livetrace tail --format jsonl` on it into a
pipe read as fast as possible, and compares each event's wall-clock time
(from the trace's clock snapshot, Go 1.25+) with when its line arrived.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from datetime import datetime

import trio

from livetrace._demo import run_demo
from livetrace._gotool import build_demo, find_go


_seconds: dict[bytes, float] = {}


def parse_wall(s: bytes) -> float:
    """RFC 3339 UTC with nanoseconds to Unix seconds, cheaply: the reader
    must not be what falls behind."""
    base, _, frac = s.partition(b".")
    sec = _seconds.get(base)
    if sec is None:
        sec = _seconds[base] = datetime.fromisoformat(base.decode() + "+00:00").timestamp()
    return sec + (float(b"0." + frac) if frac else 0.0)


async def main(args: argparse.Namespace) -> None:
    exe = build_demo(find_go(args.go))
    async with run_demo(exe, args=["-workers", str(args.workers)]) as demo:
        kinds = [a for k in args.kind for a in ("-k", k)]
        proc = subprocess.Popen([sys.executable, "-m", "livetrace", "tail", demo.trace_address, "--format", "jsonl",
                                 "--duration", str(args.seconds), "--period", str(args.period), *kinds],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdout is not None

        def read() -> list[float]:
            lags = []
            key = b'"wall": "'
            for line in proc.stdout:  # type: ignore[union-attr]
                now = time.time()
                i = line.find(key)
                if i >= 0:
                    j = i + len(key)
                    lags.append(now - parse_wall(line[j : line.index(b"Z", j)]))
            return lags

        lags = await trio.to_thread.run_sync(read)
        proc.wait()
    lags.sort()
    q = statistics.quantiles(lags, n=100)
    shown = ", ".join(args.kind) or "all kinds"
    print(f"demo {demo.go_version}, {args.workers} worker(s) of each kind, {len(lags):,} events ({shown}) "
          f"over {args.seconds:g} s, generation period {args.period:g} s")
    print(f"latency from event to pipe: p50 {q[49]:.3f} s, p99 {q[98]:.3f} s, max {lags[-1]:.3f} s")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--go")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--kind", action="append", default=[], help="tail only this kind (repeatable)")
    p.add_argument("--period", type=float, default=0.5, help="tail --period (default 0.5)")
    trio.run(main, p.parse_args())
