"""How many events a second `livetrace tail` can sustain into a pipe, as
text and as JSON lines, against the 2M events/s target.

    .venv/bin/python bench/tail.py [--go PATH] [--go-legacy PATH] [--seconds 10] [--runs 3]
                                   [--formats text,jsonl] [--no-live] [--no-file] [--trace FILE]
                                   [--legacy-trace FILE] [--baseline DIR]

Live: starts the demo service (4 workers of each kind: its full load, about
700k events/s), built with --go (default: as `livetrace demo` finds it,
Go 1.26) and with --go-legacy (a Go 1.21 go binary; tailed with --segment
1), and runs the real `livetrace tail` on it for --seconds into a pipe that
this process reads as fast as it comes. The demo makes fewer events than
tail can print, so the sustainable rate is events printed per CPU-second
of the tail process (user and system, its children included), counted
from its first line (start-up and connecting are not the steady state):
the rate it would keep up with on a core of its own.

File: the same formatting (tail's own Formatter) of every batch of a
recorded trace (the demo of each Go, 8 MB, unless --trace and
--legacy-trace name files): events per CPU-second of formatting alone,
and of decoding and formatting.

With --baseline, the live rows are also timed (runs alternating, on the
same demo) for the `livetrace tail` of another source tree, such as a
checkout of an older commit with its core built in place.

Best of --runs (the spread in brackets); the last column is the ratio to
the 2M events/s target.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil
import trio
from _common import demo_trace  # bench/, the script's directory

import livetrace
from livetrace._cli.tail import Formatter, View
from livetrace._files import decode_batches
from livetrace._go.demo import run_demo
from livetrace._go.toolchain import build_demo, find_go, go_version
from livetrace._trace.model.batch import EventBatch

TARGET = 2_000_000  # events per CPU-second


@dataclass
class Live:
    events: int  # lines printed
    steady_events: int  # of those, after the first read
    cpu: float  # the tail process's CPU seconds, all of it
    steady_cpu: float  # from its first line on
    seconds: float
    shed: int  # generations the helper shed because tail fell behind

    @property
    def rate(self) -> float:
        return self.steady_events / self.steady_cpu if self.steady_cpu > 0 else 0.0


def cpu_seconds(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system + t.children_user + t.children_system


async def tail_once(address: str, fmt: str, seconds: float, segment: float, tree: Path | None) -> Live:
    """One `livetrace tail` of the running demo into a pipe read here (that
    of the livetrace source tree given, if one is)."""
    cmd = [sys.executable, "-m", "livetrace", "tail", address, "--format", fmt, "--duration", str(seconds)]
    cmd += ["--segment", str(segment)]
    tree = tree or Path(livetrace.__file__).resolve().parent.parent
    # In the tree, and with it on the path: `-m` puts the working directory first.
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tree)
    assert proc.stdout is not None and proc.stderr is not None
    ps = psutil.Process(proc.pid)

    def read() -> tuple[int, int, float]:
        """Lines in all, lines after the first read, CPU at the first read."""
        n, first, cpu0 = 0, 0, 0.0
        while data := proc.stdout.read1(1 << 20):  # type: ignore[union-attr]  # stdout=PIPE: never None
            if not n:
                cpu0 = cpu_seconds(ps)
                first = data.count(b"\n")
            n += data.count(b"\n")
        return n, n - first, cpu0

    start = time.monotonic()
    lines, steady, cpu0 = await trio.to_thread.run_sync(read)
    err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.monotonic() - start
    if proc.returncode:
        raise SystemExit(f"tail failed ({proc.returncode}): {err[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    shed = re.search(r"(\d+) generations shed", err)
    return Live(lines, steady, cpu, cpu - cpu0, elapsed, int(shed.group(1)) if shed else 0)


async def live_rows(
    go: Path, segment: float, formats: Sequence[str], seconds: float, runs: int, baseline: Path | None
) -> None:
    exe = build_demo(go)
    trees: list[tuple[str, Path | None]] = [("", None)] + ([(" (baseline)", baseline)] if baseline else [])
    async with run_demo(exe, args=["-workers", "4"]) as demo:
        print(f"\nlive: demo {demo.go_version}, 4 workers, tail --duration {seconds:g} --segment {segment:g}")
        print(f"  {'format':<17} {'events':>11} {'offered/s':>10} {'CPU s':>7} {'events/CPU-s':>13}  (spread)  target")
        for fmt in formats:
            results: dict[str, list[Live]] = {label: [] for label, _ in trees}
            for _ in range(runs):
                for label, tree in trees:
                    results[label].append(await tail_once(demo.trace_address, fmt, seconds, segment, tree))
            for label, rs in results.items():
                best = max(rs, key=lambda r: r.rate)
                spread = f"{min(r.rate for r in rs) / 1e6:.2f}-{max(r.rate for r in rs) / 1e6:.2f}M"
                shed = f"; {best.shed} generations shed" if best.shed else ""
                print(
                    f"  {fmt + label:<17} {best.events:>11,} {best.events / seconds:>10,.0f} {best.cpu:>7.2f} "
                    f"{best.rate:>13,.0f}  ({spread})  {best.rate / TARGET:.2f}x{shed}"
                )


def format_file(path: Path, fmt: str) -> tuple[int, float, float]:
    """(events, CPU s to format them, CPU s to decode and format them) with
    tail's own Formatter, every batch of the file."""
    t = time.process_time()
    batches = [b for b in decode_batches(path) if isinstance(b, EventBatch)]
    decoded = time.process_time() - t
    formatter = Formatter(View(fmt, None, False, False))
    t0 = batches[0].times[0] if batches else 0
    t = time.process_time()
    for b in batches:
        formatter.pieces(b, t0, False)
    formatted = time.process_time() - t
    return sum(map(len, batches)), formatted, decoded + formatted


def file_rows(go: Path, given: Path | None, formats: Sequence[str], runs: int) -> None:
    with demo_trace(given, go) as path:
        what = path.name if given else f"the demo of {go_version(go)}, recorded"
        print(f"\nfile: {what} ({path.stat().st_size / 1e6:.1f} MB)")
        print(f"  {'format':<6} {'events':>11} {'format only/CPU-s':>18}  target  {'decode+format/CPU-s':>20}  target")
        for fmt in formats:
            results = [format_file(path, fmt) for _ in range(runs)]
            n = results[0][0]
            fmt_only = n / min(r[1] for r in results)
            whole = n / min(r[2] for r in results)
            print(
                f"  {fmt:<6} {n:>11,} {fmt_only:>18,.0f}  {fmt_only / TARGET:5.2f}x  {whole:>20,.0f}  "
                f"{whole / TARGET:5.2f}x"
            )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--go", help="go binary for the modern demo (default: as livetrace demo finds it)")
    p.add_argument("--go-legacy", help="a Go 1.21 go binary for the legacy demo (default: none)")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--formats", default="text,jsonl")
    p.add_argument("--no-live", action="store_true")
    p.add_argument("--no-file", action="store_true")
    p.add_argument("--trace", type=Path, help="a modern trace for the file rows (default: record the demo)")
    p.add_argument("--legacy-trace", type=Path, help="a legacy trace for the file rows (default: record the demo)")
    p.add_argument("--baseline", type=Path, help="also time the live tail of this livetrace source tree")
    args = p.parse_args()
    formats = args.formats.split(",")
    gos = [(find_go(args.go), 1.0, args.trace)]
    if args.go_legacy:
        gos.append((find_go(args.go_legacy), 1.0, args.legacy_trace))
    print(f"target: {TARGET:,} events per CPU-second of tail; best of {args.runs}")
    for go, segment, trace in gos:
        if not args.no_live:
            trio.run(live_rows, go, segment, formats, args.seconds, args.runs, args.baseline)
        if not args.no_file:
            file_rows(go, trace, formats, args.runs)


if __name__ == "__main__":
    main()
