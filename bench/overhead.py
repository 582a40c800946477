"""What livetrace costs the traced service, against tracing to a local file.

    .venv/bin/python bench/overhead.py [--go PATH] [--rounds 6] [--window 5] [--consumer record|tail]
                                       [--generation-mb MB]

Starts the demo service (4 workers of each kind: its full load) and, in
interleaved rounds (the order alternating from round to round), measures
the work it gets done (its /stats counter) over a window while it is traced:

  file       runtime/trace into a local file (the demo's /debug/trace-to-file)
  livetrace  a livetrace session, with the consumer running as well: `record`
             (the trace to a file, as `file` does) or `tail` (decoding every
             event and writing JSON lines into a pipe read as fast as it can)
  untraced   for reference
  livetrace, MB MiB generations
             with --generation-mb: `record`, with the helper closing a
             generation at every MB of trace (--generation-mb), against
             `livetrace` as it runs by default (a generation a second
             here, as the demo's 4 MB or so never reach the default
             8 MiB): what smaller generations cost

and prints every round and the ratio of medians livetrace / file. The
consumer runs on the same machine, so its CPU is part of what is measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

import trio

import livetrace
from livetrace._go.demo import DemoProcess, run_demo
from livetrace._go.toolchain import build_demo, find_go

WARMUP = 0.5  # seconds of tracing before the window opens


def get(url: str) -> dict[str, int]:
    with urllib.request.urlopen(url, timeout=600) as r:
        counts: dict[str, int] = json.load(r)
        return counts


async def ops(demo: DemoProcess) -> int:
    return (await trio.to_thread.run_sync(get, f"{demo.http}/stats"))["ops"]


async def window(demo: DemoProcess, seconds: float) -> float:
    """ops/s over the window."""
    before, t0 = await ops(demo), trio.current_time()
    await trio.sleep(seconds)
    after, t1 = await ops(demo), trio.current_time()
    return (after - before) / (t1 - t0)


async def traced_to_file(demo: DemoProcess, seconds: float) -> float:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            trio.to_thread.run_sync, get, f"{demo.http}/debug/trace-to-file?seconds={seconds + 2 * WARMUP}"
        )
        await trio.sleep(WARMUP)
        return await window(demo, seconds)


async def traced_live(
    demo: DemoProcess, seconds: float, consumer: str, tmp: Path, generation_bytes: int | None = None
) -> float:
    if consumer == "tail":
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
                str(seconds + 2 * WARMUP),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

        def drain() -> None:
            while proc.stdout.read1(1 << 20):  # type: ignore[union-attr]  # stdout=PIPE: never None
                pass

        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.to_thread.run_sync, drain)
            await trio.sleep(WARMUP + 0.3)  # the tail process starts up too
            rate = await window(demo, seconds)
        proc.wait()
        return rate
    async with livetrace.connect(
        demo.trace_address, duration=seconds + 2 * WARMUP, generation_bytes=generation_bytes
    ) as session:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(livetrace.record, session, tmp / "live.trace")
            await trio.sleep(WARMUP)
            return await window(demo, seconds)


async def main(args: argparse.Namespace) -> None:
    exe = build_demo(find_go(args.go))
    results: dict[str, list[float]] = {"untraced": [], "file": [], "livetrace": []}
    split = f"livetrace, {args.generation_mb:g} MiB generations"
    if args.generation_mb:
        results[split] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with run_demo(exe, args=["-workers", "4"]) as demo:
            await trio.sleep(1)
            for r in range(args.rounds):
                order = list(results)
                if r % 2:
                    order.reverse()
                for mode in order:
                    if mode == "untraced":
                        rate = await window(demo, args.window)
                    elif mode == "file":
                        rate = await traced_to_file(demo, args.window)
                    elif mode == "livetrace":
                        rate = await traced_live(demo, args.window, args.consumer, Path(tmp))
                    else:
                        size = int(args.generation_mb * (1 << 20))
                        rate = await traced_live(demo, args.window, "record", Path(tmp), size)
                    results[mode].append(rate)
                    await trio.sleep(1)  # let the last session's ends settle
                print(f"round {r + 1}: " + ", ".join(f"{m} {results[m][-1]:,.0f} ops/s" for m in results), flush=True)
    med = {m: statistics.median(v) for m, v in results.items()}
    print(f"demo {demo.go_version}, 4 workers, {args.rounds} rounds of {args.window:g} s, consumer: {args.consumer}")
    print("median ops/s: " + ", ".join(f"{m} {v:,.0f}" for m, v in med.items()))
    print(
        f"livetrace / tracing to a file: {med['livetrace'] / med['file']:.3f} (target >= 0.97); "
        f"file / untraced: {med['file'] / med['untraced']:.3f}"
    )
    if args.generation_mb:
        print(f"{split} / livetrace: {med[split] / med['livetrace']:.3f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--go")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--window", type=float, default=5.0)
    p.add_argument("--consumer", choices=["record", "tail"], default="record")
    p.add_argument("--generation-mb", type=float, default=0, metavar="MB")
    trio.run(main, p.parse_args())
