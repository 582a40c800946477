"""`livetrace.decode_batches(source, jobs=N)`: events per wall second and
per CPU second (the process's, every thread's) with each number of jobs,
each trace decoded whole, runs alternating, best of --runs by wall time.

    .venv/bin/python bench/parallel_decode.py --jobs 1,2 TRACE [TRACE ...]

With more than one job a Go 1.22+ trace's generations are ordered by fresh
engines in a pool of threads and carried in order (modern/parallel.py); the
bench checks that every job count gives as many events, and says how many
generations the carry ordered again.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import livetrace
from livetrace._trace.model.batch import EventBatch


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run(path: Path, jobs: int) -> tuple[int, float, float]:
    """(events, wall seconds, CPU seconds) of one decode."""
    w0, c0 = time.perf_counter(), cpu()
    n = sum(len(b) for b in livetrace.decode_batches(path, jobs=jobs) if isinstance(b, EventBatch))
    return n, time.perf_counter() - w0, cpu() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+", type=Path)
    ap.add_argument("--jobs", default="1,2", help="job counts, comma-separated (default 1,2)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--switch-interval",
        type=float,
        help="sys.setswitchinterval(S) first: how long a thread back from C waits for the GIL (Python's 5 ms default)",
    )
    args = ap.parse_args()
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
    counts = [int(j) for j in args.jobs.split(",")]
    for path in args.traces:
        best: dict[int, tuple[float, float]] = {}
        events: set[int] = set()
        for _ in range(args.runs):
            for j in counts:
                n, wall, cpu_s = run(path, j)
                events.add(n)
                if j not in best or wall < best[j][0]:
                    best[j] = (wall, cpu_s)
        assert len(events) == 1, events
        (n,) = events
        base = best[counts[0]][0]
        print(f"{path.name}: {path.stat().st_size / 1e6:.1f} MB, {n:,} events")
        for j in counts:
            wall, cpu_s = best[j]
            print(
                f"  jobs {j}: {n / wall / 1e6:6.2f}M events/s ({wall:.2f} s wall, x{base / wall:.2f}), "
                f"{n / cpu_s / 1e6:6.2f}M events/CPU-s ({cpu_s:.2f} s CPU)"
            )


if __name__ == "__main__":
    main()
