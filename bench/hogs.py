"""Issue 27's check on a busy small machine: the demo at full load, two CPU
hogs beside it, and `tail --spans`, `top` and `profile` against it. Do
they lose nothing, and how far behind are they?

    .venv/bin/python bench/hogs.py [--go PATH] [--seconds 10] [--workers 4] [--hogs 2] [--jobs N] [--pipe]

Each view runs for --seconds, one after the other, with the hogs (busy
processes, one a core) running throughout. `tail --spans --format jsonl`
writes into /dev/null (--pipe: a pipe `cat` reads) and says itself how far behind the service its lines
were written (its summary); `top --format json` prints a snapshot a
generation, and the line says how long it took past --seconds and what
it lost (generations shed, batches lost); `profile --kind sched` writes
its profile, and the line says how long it took and what it holds. One run, figures printed; timing
is a benchmark, never a test.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from livetrace._go.demo import run_demo
from livetrace._go.toolchain import build_demo, find_go
from livetrace._views.pprof_file import read_profile

LT = [sys.executable, "-m", "livetrace"]


def _hog() -> None:
    while True:
        pass


def _run(cmd: list[str], stdout: int, pipe: bool = False) -> tuple[subprocess.CompletedProcess[bytes], float]:
    """The view, its output into stdout, or with pipe into `cat > /dev/null` (a reader as fast as a pipe allows)."""
    t = time.monotonic()
    if pipe:
        cat = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        done = subprocess.run(cmd, stdout=cat.stdin, stderr=subprocess.PIPE, check=False, timeout=600)
        assert cat.stdin is not None
        cat.stdin.close()
        cat.wait()
    else:
        done = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, check=False, timeout=600)
    return done, time.monotonic() - t


async def main(a: argparse.Namespace) -> None:
    exe = build_demo(find_go(a.go))
    jobs = ["--jobs", str(a.jobs)] if a.jobs else []
    hogs = [multiprocessing.Process(target=_hog, daemon=True) for _ in range(a.hogs)]
    async with run_demo(exe, args=["-workers", str(a.workers)]) as demo:
        for h in hogs:
            h.start()
        try:
            how = f" --jobs {a.jobs}" if a.jobs else ""
            print(f"demo -workers {a.workers}, {a.hogs} hogs, {a.seconds:g} s a view{how}")
            cmd = [*LT, "tail", demo.trace_address, "--spans", "--format", "jsonl", "--duration", str(a.seconds), *jobs]
            done, wall = await trio.to_thread.run_sync(_run, cmd, subprocess.DEVNULL, a.pipe)
            err = done.stderr.decode(errors="replace")
            behind = re.search(r"behind the service by (.*)", err)
            gaps = re.search(r"(\d+) gaps?\b", err)
            print(
                f"tail --spans: rc {done.returncode}, {wall:.1f} s wall for {a.seconds:g} s; "
                f"gaps {gaps[1] if gaps else '?'}; written behind by {behind[1] if behind else '?'}"
            )
            cmd = [*LT, "top", demo.trace_address, "--format", "json", "--duration", str(a.seconds), *jobs]
            done, wall = await trio.to_thread.run_sync(_run, cmd, subprocess.PIPE)
            snaps = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
            lost = {k: sum(s.get(k) or 0 for s in snaps) for k in ("shed_generations", "lost_batches")}
            print(
                f"top: rc {done.returncode}, {wall:.1f} s wall for {a.seconds:g} s; {len(snaps)} snapshots, "
                f"{sum(s.get('events', 0) for s in snaps):,} events; lost {lost}"
            )
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "sched.pb.gz"
                cmd = [*LT, "profile", demo.trace_address, "--kind", "sched", "-o", str(out)]
                done, wall = await trio.to_thread.run_sync(
                    _run, [*cmd, "--duration", str(a.seconds), *jobs], subprocess.DEVNULL
                )
                prof = read_profile(out.read_bytes()) if out.exists() else None
                held = (
                    "no profile"
                    if prof is None
                    else (
                        f"{len(prof.sample):,} stacks, {sum(x.value[0] for x in prof.sample):,} intervals, "
                        f"{sum(x.value[1] for x in prof.sample) / 1e9:.1f} s waited"
                    )
                )
                print(f"profile: rc {done.returncode}, {wall:.1f} s wall for {a.seconds:g} s; {held}")
        finally:
            for h in hogs:
                h.kill()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--go", help="the go binary to build the demo with")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--hogs", type=int, default=2)
    p.add_argument("--jobs", type=int, help="passed on to each view (default: theirs)")
    p.add_argument("--pipe", action="store_true", help="tail's lines into a pipe that cat reads, not /dev/null")
    trio.run(main, p.parse_args())
