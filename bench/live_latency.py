"""How long after they happen do events reach a `livetrace tail` pipe, and
how much memory does the consumer need?

    .venv/bin/python bench/live_latency.py [--go PATH] [--seconds 10] [--workers 4] [--pace 1] [--period 0.5]
                                           [--segment 1]

Starts the demo service (4 workers of each kind: its full load), runs
`livetrace tail --format jsonl` on it into a pipe read as fast as
possible, and compares events' wall-clock times (from the trace's clock
snapshot, Go 1.25+; estimated from chunk arrival times for a legacy Go,
1.21 and older, which tail reads in segments of --segment seconds) with
when their lines arrived: everything is read in
big pieces and the oldest line of each is timed, so that the reader is not
what falls behind. Also
reports whether anything was lost (generations shed), the largest
generation (or legacy segment, with its RSS target: twice it and 64 MiB)
and the tail process's peak RSS.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime

import trio

from livetrace._go.demo import run_demo
from livetrace._go.toolchain import build_demo, find_go

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
    async with run_demo(exe, args=["-workers", str(args.workers), "-pace", str(args.pace)]) as demo:
        kinds = [a for k in args.kind for a in ("-k", k)]
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "livetrace",
                "tail",
                demo.trace_address,
                "--format",
                "jsonl",
                "--duration",
                str(args.seconds),
                "--period",
                str(args.period),
                "--segment",
                str(args.segment),
                *kinds,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None

        def read() -> tuple[list[float], int]:
            """Read as fast as the pipe gives; time the oldest whole line of
            every read (the one that waited longest)."""
            lags, n, partial = [], 0, b""
            key = b'"wall": "'
            while data := proc.stdout.read1(1 << 20):  # type: ignore[union-attr]  # stdout=PIPE: never None
                now = time.time()
                n += data.count(b"\n")
                first = data.find(b"\n")
                line = partial + data[:first] if first >= 0 else b""
                last = data.rfind(b"\n")
                partial = data[last + 1 :] if last >= 0 else partial + data
                i = line.find(key)
                if i >= 0:
                    j = i + len(key)
                    lags.append(now - parse_wall(line[j : line.index(b"Z", j)]))
            return lags, n

        lags, lines = await trio.to_thread.run_sync(read)
        err = proc.stderr.read().decode()
        _, status, usage = os.wait4(proc.pid, 0)  # the child's own peak RSS
        proc.returncode = os.waitstatus_to_exitcode(status)
    lags.sort()
    q = statistics.quantiles(lags, n=100)
    shown = ", ".join(args.kind) or "all kinds"
    print(
        f"demo {demo.go_version}, {args.workers} worker(s) of each kind, pace {args.pace:g}, {lines:,} events "
        f"({shown}) over {args.seconds:g} s ({lines / args.seconds:,.0f}/s), generation period {args.period:g} s "
        f"(Go 1.22+) or segment {args.segment:g} s (legacy Go)"
    )
    print(
        f"latency from event to pipe ({len(lags):,} reads timed): p50 {q[49]:.3f} s, p99 {q[98]:.3f} s, "
        f"max {lags[-1]:.3f} s"
    )
    largest = re.search(r"largest generation ([\d.]+) MB", err)
    segment = re.search(r"segments, largest ([\d,]+) bytes", err)
    lost = re.search(r"(\d+) generations shed", err)
    if segment:  # legacy Go: the bound is twice the largest segment and 64 MiB
        size = int(segment.group(1).replace(",", ""))
        largest_shown = f"largest segment {size:,} bytes (target 2x + 64 MiB: {(2 * size) / 2**20 + 64:.1f} MiB)"
    else:
        largest_shown = f"largest generation {largest.group(1) + ' MB' if largest else '?'}"
    print(
        f"tail: exit {proc.returncode}; generations shed: {lost.group(1) if lost else 0}; "
        f"CPU {usage.ru_utime + usage.ru_stime:.1f} s (user {usage.ru_utime:.1f}); "
        f"peak RSS {usage.ru_maxrss / 1024:.1f} MiB; {largest_shown}"
    )
    print("tail said:", err.strip().splitlines()[-1] if err.strip() else "")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--go")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--kind", action="append", default=[], help="tail only this kind (repeatable)")
    p.add_argument("--pace", type=float, default=1.0, help="the demo's -pace: 5 is a fifth of the load (default 1)")
    p.add_argument("--period", type=float, default=0.5, help="tail --period (default 0.5)")
    p.add_argument("--segment", type=float, default=1.0, help="tail --segment, for legacy Go (default 1)")
    trio.run(main, p.parse_args())
