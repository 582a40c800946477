"""`livetrace profile --kind KIND` against `go tool trace -pprof=KIND` on
the same trace file, both whole commands as a user runs them (interpreter
or toolchain start included), in one run: per kind, each side's best of
--runs and its spread (slowest minus fastest), the least CPU time (user and
system, all threads) of a run, and Go's best time over ours (the issue's
target: at least 2).

    .venv/bin/python bench/profile.py [--trace FILE] [--go PATH] [--kind sched ...] [--runs 3] [--twin]

Runs alternate between ours and Go's, so a busy moment of the machine
falls on both. Before timing, each command runs once untimed: Go's tool
is then built and cached, and our modules compiled to bytecode as an
installed package has them (the child runs without PYTHONDONTWRITEBYTECODE).
--twin times the pure-Python twin (LIVETRACE_PURE_PYTHON=1) instead of
the compiled core. Without --trace it records the demo service (Go 1.26,
4 workers) until the file holds at least 8 MB.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import demo_trace  # bench/, the script's directory

from livetrace._go.toolchain import find_go, go_env, go_version
from livetrace._views.pprof import PROFILE_KINDS


def our_env(twin: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "LIVETRACE_PURE_PYTHON")}
    if twin:
        env["LIVETRACE_PURE_PYTHON"] = "1"
    return env


def ours(path: Path, kind: str, out: Path, env: dict[str, str]) -> None:
    cmd = [sys.executable, "-m", "livetrace", "profile", str(path), "--kind", kind, "-o", str(out)]
    subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL, env=env)


def gos(go: Path, path: Path, kind: str, out: Path) -> None:
    with out.open("wb") as f:
        subprocess.run([str(go), "tool", "trace", f"-pprof={kind}", str(path)], check=True, stdout=f, env=go_env())


def timed(fn: Callable[..., None], *args: object) -> tuple[float, float]:
    """Wall time and CPU time (user and system, all threads) of one command."""
    before, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    fn(*args)
    wall, after = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def spread(times: list[tuple[float, float]]) -> str:
    walls = [w for w, _ in times]
    return f"{min(walls):6.3f} s (±{max(walls) - min(walls):.3f}, cpu {min(c for _, c in times):.3f} s)"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trace", type=Path, help="a trace file (default: record the Go 1.26 demo, 8 MB)")
    p.add_argument("--go", help="go binary whose `go tool trace` to time (default: as livetrace demo finds it)")
    p.add_argument("--kind", choices=PROFILE_KINDS, action="append", help="a profile to time (default: all four)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--twin", action="store_true", help="time the pure-Python twin, not the compiled core")
    args = p.parse_args()
    go = find_go(args.go)
    kinds = args.kind or list(PROFILE_KINDS)
    env = our_env(args.twin)
    rows = []
    with demo_trace(args.trace, go) as path, tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            out_ours, out_go = Path(tmp) / "ours.pb.gz", Path(tmp) / "go.pb.gz"
            ours(path, kind, out_ours, env)
            gos(go, path, kind, out_go)
            t_ours, t_go = [], []
            for _ in range(args.runs):
                t_ours.append(timed(ours, path, kind, out_ours, env))
                t_go.append(timed(gos, go, path, kind, out_go))
            rows.append((kind, t_ours, t_go))
        size = path.stat().st_size / 1e6
    side = "the pure-Python twin" if args.twin else "the compiled core"
    print(f"{size:.1f} MB trace; go: {go_version(go)} ({go}); ours on {side}")
    print(f"whole commands, best of {args.runs} (±slowest - fastest; least CPU time), Go's best over ours")
    for kind, t_ours, t_go in rows:
        ratio = min(w for w, _ in t_go) / min(w for w, _ in t_ours)
        print(f"{kind:<8} livetrace profile {spread(t_ours)}   go tool trace -pprof {spread(t_go)}   {ratio:5.2f}x")


if __name__ == "__main__":
    main()
