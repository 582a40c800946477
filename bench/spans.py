"""Span building speed: the compiled core and its pure-Python twin, on the
events of a modern and a legacy trace (decoded once, beforehand, by the
compiled decoder: only the span layer is timed), and for scale Go's own
`go tool trace -pprof=sched` (parse plus one profile) on the same files.

    .venv/bin/python bench/spans.py [--trace FILE] [--legacy FILE] [--go PATH] [--runs 3] [--no-twin]

Without --trace it records the demo service (Go 1.26, 4 workers) until the
file holds at least 8 MB; without --legacy it records the demo built with
--legacy-go (Go 1.21 by default, found as `livetrace demo` finds Go 1.21:
give the path) the same way, or skips the legacy row when there is none.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

from _common import best_of, demo_trace  # bench/, the script's directory

import livetrace
from livetrace import EventBatch, SpanBuilder
from livetrace._go.toolchain import find_go, go_env, go_version


def events_of(path: Path) -> list[EventBatch]:
    return [b for b in livetrace.decode_batches(path, compiled=True) if isinstance(b, EventBatch)]


def spans(batches: list[EventBatch], compiled: bool) -> int:
    b = SpanBuilder(compiled=compiled)
    return sum(len(b.feed(batch)) for batch in batches) + len(b.close())


def go_pprof(go: Path, path: Path) -> None:
    cmd = [str(go), "tool", "trace", "-pprof=sched", str(path)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=go_env())


def rows_for(label: str, path: Path, go: Path, runs: int, twin: bool) -> list[tuple[str, float, int, int]]:
    batches = events_of(path)
    n_events = sum(map(len, batches))
    t, n = best_of(runs, spans, batches, True)
    rows = [(f"{label}: compiled core", t, n, n_events)]
    if twin:
        t, _ = best_of(1, spans, batches, False)
        rows.append((f"{label}: pure-Python twin", t, n, n_events))
    t, _ = best_of(runs, go_pprof, go, path)
    rows.append((f"{label}: go tool trace -pprof=sched", t, n, n_events))
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trace", type=Path, help="a modern trace (default: record the Go 1.26 demo)")
    p.add_argument("--legacy", type=Path, help="a Go 1.11-1.21 trace (default: record the --legacy-go demo)")
    p.add_argument("--legacy-go", type=Path, help="a Go 1.21 binary, to record a legacy demo trace")
    p.add_argument("--go", help="go binary whose `go tool trace` to time (default: as livetrace demo finds it)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--no-twin", action="store_true", help="skip the pure-Python twin")
    args = p.parse_args()
    go = find_go(args.go)
    rows = []
    with demo_trace(args.trace, go) as path:
        rows += rows_for(f"modern {path.stat().st_size / 1e6:.1f} MB", path, go, args.runs, not args.no_twin)
    if args.legacy or args.legacy_go:
        with demo_trace(args.legacy, args.legacy_go or go) as path:
            rows += rows_for(f"legacy {path.stat().st_size / 1e6:.1f} MB", path, go, args.runs, not args.no_twin)
    print(f"go: {go_version(go)} ({go}); best of {args.runs} (the twin: 1 run); span layer only, events decoded before")
    print(f"{'builder':<52} {'seconds':>8} {'spans':>10} {'spans/s':>12} {'events/s':>12}")
    for name, t, n, ne in rows:
        print(f"{name:<52} {t:8.3f} {n:10,} {n / t:12,.0f} {ne / t:12,.0f}")


if __name__ == "__main__":
    main()
