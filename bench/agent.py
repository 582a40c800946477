"""What `livetrace agent` costs, per policy: its own CPU and memory for one
traced process, and the traced service's throughput with and without it.

    .venv/bin/python bench/agent.py [--go PATH] [--seconds 30] [--rounds 1]

Starts the demo service (its full load) under a name of its own, and in
interleaved rounds runs, for --seconds each:

  untraced     no agent
  continuous   the agent, the demo's whole trace: a summary per generation, spans over thresholds
  sampled      the agent, a 5 s window every 30 s
  flight       the agent, the flight recorder (10 s kept, a trigger that rarely fires)

measuring the demo's work (its /stats counter) over the run, and the agent's
CPU time (all its threads) and peak resident memory. The agent writes to a
lake in a temporary directory; it runs on the same machine, so its CPU is
part of what the demo competes with. The budget is set out of the way: this
measures what each policy costs, not how the budget cuts it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil
import trio

from livetrace._go.demo import DemoProcess, run_demo
from livetrace._go.toolchain import build_demo, find_go

POLICIES = {
    "continuous": 'policy = "continuous"\nspans_over = { gc = "1ms", stw = "1ms", runnable = "5ms" }\n',
    "sampled": 'policy = "sampled"\nwindow = "5s"\nevery = "30s"\n',
    "flight": 'policy = "flight"\nkeep = "10s"\ntriggers = ["stw>500ms"]\n',
}


def ops(demo: DemoProcess) -> int:
    with urllib.request.urlopen(f"{demo.http}/stats", timeout=60) as r:
        counts: dict[str, int] = json.load(r)
    return counts["ops"]


def config(where: Path, name: str, policy: str) -> Path:
    path = where / f"{policy}.toml"
    path.write_text(
        f'[agent]\nstate_dir = "{where / policy}"\n'
        '[agent.budget]\ncpu_per_process = 1.0\nmemory = "8GiB"\n'
        f'[[target]]\nservice = "bench"\nexecutable = "{name}"\n{POLICIES[policy]}'
    )
    return path


async def one(demo: DemoProcess, where: Path, name: str, policy: str, seconds: float) -> dict[str, float]:
    agent = None
    if policy != "untraced":
        agent = subprocess.Popen(
            [sys.executable, "-m", "livetrace", "agent", str(config(where, name, policy))],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        await trio.sleep(3)  # started, scanned, attached
    proc = psutil.Process(agent.pid) if agent else None
    cpu0 = sum(proc.cpu_times()[:2]) if proc else 0.0
    before, t0 = ops(demo), time.monotonic()
    peak = 0
    while time.monotonic() - t0 < seconds:
        await trio.sleep(0.5)
        if proc:
            peak = max(peak, proc.memory_info().rss)
    after, t1 = ops(demo), time.monotonic()
    cpu = (sum(proc.cpu_times()[:2]) - cpu0) / (t1 - t0) if proc else 0.0
    if agent:
        agent.terminate()
        agent.wait(60)
    return {"ops_per_s": (after - before) / (t1 - t0), "agent_cpu": cpu, "agent_rss_mib": peak / (1 << 20)}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--go", help="the go binary to build the demo with")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-agent-") as tmp:
        where = Path(tmp)
        name = "bench-agent-demo"
        exe = where / name
        shutil.copy2(build_demo(Path(args.go) if args.go else find_go(), where / "build"), exe)
        results: dict[str, list[dict[str, float]]] = {}
        async with run_demo(exe) as demo:
            order = ["untraced", *POLICIES]
            for r in range(args.rounds):
                for policy in order if r % 2 == 0 else reversed(order):
                    res = await one(demo, where, name, policy, args.seconds)
                    results.setdefault(policy, []).append(res)
                    print(f"round {r + 1} {policy:10} {json.dumps({k: round(v, 3) for k, v in res.items()})}")
        base = statistics.median(x["ops_per_s"] for x in results["untraced"])
        print(f"\n{'policy':10} {'ops/s':>12} {'vs untraced':>12} {'agent CPU':>10} {'agent RSS':>10}")
        for policy, runs in results.items():
            o = statistics.median(x["ops_per_s"] for x in runs)
            cpu = statistics.median(x["agent_cpu"] for x in runs)
            rss = max(x["agent_rss_mib"] for x in runs)
            print(f"{policy:10} {o:12,.0f} {o / base - 1:+12.1%} {cpu:10.1%} {rss:8.0f} MiB")


if __name__ == "__main__":
    trio.run(main)
