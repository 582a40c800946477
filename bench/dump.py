"""`livetrace decode --dump ...` against Go's own `go tool trace -d...` on
the same trace files, whole commands as a user runs them (interpreter or
toolchain start included), in one run, best of --runs each:

    wire              --dump wire          vs go tool trace -d=wire    (--go, Go 1.26+)
    parsed            --dump parsed        vs go tool trace -d=parsed  (--go)
    legacy            --dump legacy        vs Go 1.21's go tool trace -d  (--go-legacy)
    parsed of legacy  --dump parsed        vs go tool trace -d=parsed  (--go-parsed, Go 1.27.3)

    .venv/bin/python bench/dump.py [--trace FILE] [--legacy-trace FILE] [--go PATH] \\
        [--go-legacy PATH-to-go-1.21] [--go-parsed PATH-to-go-1.27] [--runs 3] [--out FILE] \\
        [--only modern|legacy ...] [--twin]

Without --trace it records the demo service built with --go (Go 1.26, 4
workers) until the file holds at least 8 MB; without --legacy-trace, the
same with --go-legacy (Go 1.21.13). Every command writes into --out
(default /dev/null), never a terminal. Seconds are wall time (best of
--runs); "cpu" is the user+system time of the best run's process and its
children (Go's tool spreads over both cores, ours runs on one). The ratio
is Go's wall time over ours, the target 2x; on a machine other work keeps
busy, the cpu ratio says more (a process with one thread gets a smaller
share of the cores than one with several). Ours runs with its modules'
bytecode cached, as an installed package has it, whatever
PYTHONDONTWRITEBYTECODE says. --twin adds ours on the pure-Python twin
(LIVETRACE_PURE_PYTHON=1), one run each.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

from _common import demo_trace  # bench/, the script's directory

from livetrace._go.toolchain import find_go, go_env, go_version

TARGET = 2.0
GO_CACHE = Path(__file__).resolve().parent.parent / ".cache" / "go"


def default_go(env: str, version: str) -> str | None:
    """A toolchain of the given version, from the test suite's variable or
    the repository's cache of toolchains."""
    cached = GO_CACHE / version / "go" / "bin" / "go"
    return os.environ.get(env) or (str(cached) if cached.exists() else None)


def timed(cmd: list[str], out: Path, runs: int, twin: bool = False) -> tuple[float, float]:
    """(wall, cpu) seconds of the fastest of runs runs of cmd, its standard
    output into out. A failing command stops the bench: a dump that fails
    would time nothing worth comparing. twin: ours on the pure-Python twin."""
    best = (float("inf"), float("inf"))
    for _ in range(runs):
        with out.open("wb") as f:
            before = os.times()
            t = time.perf_counter()
            env = {**go_env(), "LIVETRACE_PURE_PYTHON": "1" if twin else "0"}
            env.pop("PYTHONDONTWRITEBYTECODE", None)  # compiled once, as an installed package is
            done = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE, env=env, check=False)
            wall = time.perf_counter() - t
            if done.returncode:
                sys.exit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.decode(errors='replace')[-2000:]}")
            after = os.times()
        cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        best = min(best, (wall, cpu))
    return best


def ours(dump: str, path: Path) -> list[str]:
    return [sys.executable, "-m", "livetrace", "decode", "--dump", dump, str(path)]


def rows(
    args: argparse.Namespace, modern: Path | None, legacy: Path | None
) -> Iterator[tuple[str, list[str], list[str]]]:
    """(name, our command, Go's command) for each row to time."""
    if modern is not None:
        go = str(find_go(args.go))
        yield "--dump wire", ours("wire", modern), [go, "tool", "trace", "-d=wire", str(modern)]
        yield "--dump parsed", ours("parsed", modern), [go, "tool", "trace", "-d=parsed", str(modern)]
    if legacy is not None:
        yield "--dump legacy", ours("legacy", legacy), [args.go_legacy, "tool", "trace", "-d", str(legacy)]
        if args.go_parsed:
            cmd = [args.go_parsed, "tool", "trace", "-d=parsed", str(legacy)]
            yield "--dump parsed (legacy trace)", ours("parsed", legacy), cmd


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trace", type=Path, help="a Go 1.22+ trace (default: record the Go 1.26 demo, 8 MB)")
    p.add_argument("--legacy-trace", type=Path, help="a Go 1.21 or older trace (default: record the Go 1.21 demo)")
    p.add_argument("--go", help="go binary whose `go tool trace -d=wire|parsed` to time (default: as demo finds it)")
    p.add_argument("--go-legacy", default=default_go("LIVETRACE_TEST_GO_1_21", "1.21.13"), help="a Go 1.21 binary")
    p.add_argument("--go-parsed", default=default_go("LIVETRACE_TEST_GO_1_27", "1.27.3"), help="a Go 1.27 binary")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", type=Path, default=Path(os.devnull), help="where the dumps go (default: /dev/null)")
    p.add_argument("--only", nargs="+", choices=["modern", "legacy"], default=["modern", "legacy"])
    p.add_argument("--twin", action="store_true", help="also time ours on the pure-Python twin (one run; slow)")
    args = p.parse_args()
    if "legacy" in args.only and not args.go_legacy:
        p.error("the legacy rows need a Go 1.21 toolchain: --go-legacy PATH")
    with ExitStack() as stack:
        modern = legacy = None
        if "modern" in args.only:
            modern = stack.enter_context(demo_trace(args.trace, find_go(args.go)))
        if "legacy" in args.only:
            legacy = stack.enter_context(demo_trace(args.legacy_trace, Path(args.go_legacy)))
        for path, go in ((modern, find_go(args.go)), (legacy, args.go_legacy)):
            if path is not None:
                print(f"{path.stat().st_size / 1e6:.1f} MB trace {path} (go: {go_version(Path(go))})")
        print(f"best of {args.runs}, whole commands, output into {args.out}; target: ours >= {TARGET:.0f}x Go's")
        print(f"{'row':<30} {'ours s':>8} {'cpu':>7} {'go s':>8} {'cpu':>7} {'ratio':>7} {'cpu ratio':>9}")
        for name, mine, gos in rows(args, modern, legacy):
            t_ours, c_ours = timed(mine, args.out, args.runs)
            t_go, c_go = timed(gos, args.out, args.runs)
            ratio, cpu_ratio = t_go / t_ours, c_go / max(c_ours, 1e-3)
            verdict = "ok" if ratio >= TARGET else "below target"
            times = f"{t_ours:8.3f} {c_ours:7.2f} {t_go:8.3f} {c_go:7.2f}"
            print(f"{name:<30} {times} {ratio:6.2f}x {cpu_ratio:8.2f}x  {verdict}")
            if args.twin:
                t_twin, c_twin = timed(mine, args.out, 1, twin=True)
                times = f"{t_twin:8.3f} {c_twin:7.2f} {'':>8} {'':>7}"
                print(f"{'  the same, pure-Python twin':<30} {times} {t_go / t_twin:6.2f}x")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
