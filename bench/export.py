"""`livetrace export --to perfetto` against `go tool trace -pprof=sched` on
the same trace file, both whole commands as a user runs them (interpreter
or toolchain start included), best of --runs each (default one run).

    .venv/bin/python bench/export.py [--trace FILE] [--go PATH] [--runs 1]

Without --trace it records the demo service (Go 1.26, 4 workers) until the
file holds at least 8 MB.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import best_of, demo_trace  # bench/, the script's directory

from livetrace._go.toolchain import find_go, go_env, go_version


def ours(path: Path, out: Path) -> None:
    cmd = [sys.executable, "-m", "livetrace", "export", str(path), "--to", "perfetto", "-o", str(out)]
    subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)


def gos(go: Path, path: Path, out: Path) -> None:
    with out.open("wb") as f:
        subprocess.run([str(go), "tool", "trace", "-pprof=sched", str(path)], check=True, stdout=f, env=go_env())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trace", type=Path, help="a trace file (default: record the Go 1.26 demo, 8 MB)")
    p.add_argument("--go", help="go binary whose `go tool trace` to time (default: as livetrace demo finds it)")
    p.add_argument("--runs", type=int, default=1)
    args = p.parse_args()
    go = find_go(args.go)
    with demo_trace(args.trace, go) as path, tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ours.pftrace"
        t_ours, _ = best_of(args.runs, ours, path, out)
        t_go, _ = best_of(args.runs, gos, go, path, Path(tmp) / "go.pb.gz")
        size, out_size = path.stat().st_size / 1e6, out.stat().st_size / 1e6
    print(f"{size:.1f} MB trace; go: {go_version(go)} ({go}); best of {args.runs}, whole commands")
    print(f"{'livetrace export --to perfetto':<36} {t_ours:8.3f} s  ({out_size:.1f} MB written)")
    print(f"{'go tool trace -pprof=sched':<36} {t_go:8.3f} s")


if __name__ == "__main__":
    main()
