"""What `livetrace agent` costs, per policy: its own CPU and memory for one
traced process, and the traced service's throughput with and without it.

    .venv/bin/python bench/agent.py [--go PATH] [--seconds 30] [--rounds 1]
                                    [--policies continuous,flight] [--before DIR] [--pace 1]
                                    [--warmup 12]

Starts the demo service (its full load) under a name of its own, and in
interleaved rounds runs, for --seconds each:

  untraced     no agent
  go-trace     no livetrace at all: Go's own /debug/pprof/trace read by a plain HTTP client and
               thrown away, the runtime tracer's own cost (the floor for any consumer)
  tracer       no agent: `livetrace record` of the whole trace to a file, the runtime
               tracer's own cost and reading its frames (the floor for continuous and flight)
  decode       no agent: a session (one job, as the agent's) with one batch subscription, its
               batches dropped: what decoding every event costs live
  subscribe    no agent: a session with the agent's summary subscriptions (summarized batches,
               spans with marks), their items dropped: the session's part of the agent's cost
  continuous   the agent, the demo's whole trace: a summary per generation, spans over thresholds
  sampled      the agent, a 5 s window every 30 s
  flight       the agent, the flight recorder (10 s kept, a trigger that rarely fires)
  flight-bare  the same without summaries (summaries = false): the trigger's decoding only
  flight-rss   the same with a trigger on the process's RSS (which never fires): nothing decoded

Each agent runs --warmup seconds before it is measured (its first rows
flushed: every 5 s by default). (--policies: only those, and untraced; with
--before DIR each policy again with the livetrace package of DIR, an older
checkout: before and after in the same sitting, interleaved), measuring the demo's work (its /stats
counter) over the run, the agent's CPU time (all its threads) and peak
resident memory, and the trace events of the summaries it made in the run:
so CPU-seconds per million events, which other work on the machine disturbs
less than the throughput. The demo's rate drifts between rounds by more than
these costs: each run's throughput is held to the untraced run of its own
round, and the table shows the median of those ratios. The agent writes to a lake in a temporary
directory; it runs on the same machine, so its CPU is part of what the demo
competes with. The budget is set out of the way: this measures what each
policy costs, not how the budget cuts it. --pace lightens the demo's load
(its pauses stretched): it then no longer takes all the CPU it can get, and
its ops/s stop showing the agent's cost, which its CPU per event still says.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import duckdb
import psutil
import trio

from livetrace._agent.policies import summaries
from livetrace._agent.sinks import lake_glob
from livetrace._go.demo import DemoProcess, run_demo
from livetrace._go.toolchain import build_demo, find_go
from livetrace._session.connect import connect
from livetrace._session.subscribers import Subscription

POLICIES = {
    "continuous": 'policy = "continuous"\nspans_over = { gc = "1ms", stw = "1ms", runnable = "5ms" }\n',
    "sampled": 'policy = "sampled"\nwindow = "5s"\nevery = "30s"\n',
    "flight": 'policy = "flight"\nkeep = "10s"\ntriggers = ["stw>500ms"]\n',
    "flight-bare": 'policy = "flight"\nkeep = "10s"\ntriggers = ["stw>500ms"]\nsummaries = false\n',
    "flight-rss": 'policy = "flight"\nkeep = "10s"\ntriggers = ["rss>64GiB"]\nsummaries = false\n',
}
# Of no summaries: their CPU per million events is taken at the events a second of the rounds that count them.
UNCOUNTED = ("flight-bare", "flight-rss")


SESSIONS = ("decode", "subscribe")
# Go's own trace endpoint, read and thrown away (argv: its URL).
GO_TRACE_READER = """
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1]) as r:
    while r.read(1 << 20):
        pass
"""


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


async def one(
    demo: DemoProcess, where: Path, name: str, policy: str, seconds: float, tree: str | None, warmup: float
) -> dict[str, float]:
    env = None if tree is None else {**os.environ, "PYTHONPATH": tree}
    # `python -m` puts its working directory first on the path: run in the tree whose livetrace is meant, or a
    # checkout given by --before loses to the one the bench was started in.
    cwd = tree or str(Path(__file__).resolve().parent.parent)
    agent = None
    if policy == "tracer":
        agent = subprocess.Popen(
            [sys.executable, "-m", "livetrace", "record", demo.trace_address, "-o", str(where / "tracer.trace")],
            env=env,
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        await trio.sleep(3)
    elif policy == "go-trace":
        url = f"{demo.http}/debug/pprof/trace?seconds={math.ceil(seconds + 10)}"
        agent = subprocess.Popen([sys.executable, "-c", GO_TRACE_READER, url])
        await trio.sleep(3)
    elif policy in SESSIONS:
        agent = subprocess.Popen(
            [sys.executable, __file__, "--consume", policy, demo.trace_address, str(where / "events")],
            env=env,
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        await trio.sleep(3)
    elif policy != "untraced":
        agent = subprocess.Popen(
            [sys.executable, "-m", "livetrace", "agent", str(config(where, name, policy))],
            env=env,
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # Started, scanned, attached, and its first rows made: pyarrow's first table imports pandas (a third of
        # a second of CPU, once), which in a sampled agent's first window weighed as much as the window.
        await trio.sleep(warmup)
    proc = psutil.Process(agent.pid) if agent else None
    cpu0 = sum(proc.cpu_times()[:2]) if proc else 0.0
    decoded0 = decoded(where)
    before, t0, wall0 = ops(demo), time.monotonic(), time.time()
    peak = 0
    while time.monotonic() - t0 < seconds:
        await trio.sleep(0.5)
        if proc:
            peak = max(peak, proc.memory_info().rss)
    after, t1, wall1 = ops(demo), time.monotonic(), time.time()
    cpu = (sum(proc.cpu_times()[:2]) - cpu0) / (t1 - t0) if proc else 0.0
    events = decoded(where) - decoded0 if policy in SESSIONS else 0
    if agent:
        agent.terminate()
        agent.wait(60)
        if policy in POLICIES:
            events = summarized(where / policy / "lake", wall0, wall1)
        (where / "tracer.trace").unlink(missing_ok=True)
        (where / "events").unlink(missing_ok=True)
    per_m = cpu * (t1 - t0) / (events / 1e6) if events else math.nan
    return {
        "ops_per_s": (after - before) / (t1 - t0),
        "agent_cpu": cpu,
        "agent_rss_mib": peak / (1 << 20),
        "events_per_s": events / (t1 - t0),
        "cpu_s_per_m_events": per_m,
    }


def decoded(where: Path) -> int:
    """The events a --consume session has decoded so far (0 if none runs)."""
    try:
        return int((where / "events").read_text() or 0)
    except (OSError, ValueError):
        return 0


async def consume(mode: str, address: str, out: Path) -> None:
    """A session as the agent's (one job), its items dropped, its decoded events written to ``out``."""
    async with connect(address, client_name="bench-agent", jobs=1) as session:
        if mode == "decode":
            subs = [session.subscribe(what="batches", lossless=True, buffer=64)]
        else:
            feed = summaries(session)
            subs = [feed.events, feed.spans]

        async def drain(sub: Subscription) -> None:
            async with sub:
                async for _ in sub:
                    pass

        async def count() -> None:
            while True:
                tmp = out.with_suffix(".part")
                tmp.write_text(str(session.counters.events))
                tmp.replace(out)
                await trio.sleep(0.2)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(count)
            for sub in subs:
                nursery.start_soon(drain, sub)


def summarized(lake: Path, start: float, end: float) -> int:
    """The events of the summaries the agent made between ``start`` and ``end`` (wall clock, s)."""
    files = lake_glob(lake, "summaries")
    if not list(lake.glob("summaries/**/*.parquet")):
        return 0
    got = duckdb.execute(
        f"SELECT coalesce(sum(events), 0) FROM read_parquet('{files}', hive_partitioning = true) "
        f"WHERE epoch_us(time) BETWEEN {int(start * 1e6)} AND {int(end * 1e6)}"
    ).fetchall()
    return int(got[0][0])


async def main() -> None:
    if sys.argv[1:2] == ["--consume"]:
        await consume(sys.argv[2], sys.argv[3], Path(sys.argv[4]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--go", help="the go binary to build the demo with")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument(
        "--policies", default=",".join(["go-trace", "tracer", *SESSIONS, *POLICIES]), help="which to run (and untraced)"
    )
    ap.add_argument("--pace", type=float, default=1.0, help="the demo's -pace: 10 is a tenth of its load")
    ap.add_argument("--before", help="a livetrace checkout whose agent runs each policy too, for comparison")
    ap.add_argument("--warmup", type=float, default=12.0, help="seconds an agent runs before it is measured")
    args = ap.parse_args()
    plan: list[tuple[str, str, str | None]] = [("untraced", "untraced", None)]
    for policy in args.policies.split(","):
        plan.append((policy, policy, None))
        if args.before and policy in POLICIES and policy not in UNCOUNTED:  # options newer than most checkouts
            plan.append((f"{policy} before", policy, str(Path(args.before).resolve())))
    with tempfile.TemporaryDirectory(prefix="bench-agent-") as tmp:
        where = Path(tmp)
        name = "bench-agent-demo"
        exe = where / name
        shutil.copy2(build_demo(Path(args.go) if args.go else find_go(), where / "build"), exe)
        results: dict[str, list[dict[str, float]]] = {}
        async with run_demo(exe, args=["-pace", str(args.pace)]) as demo:
            for r in range(args.rounds):
                for label, policy, tree in plan if r % 2 == 0 else reversed(plan):
                    res = await one(demo, where, name, policy, args.seconds, tree, args.warmup)
                    res["round"] = r
                    results.setdefault(label, []).append(res)
                    print(f"round {r + 1} {label:17} {json.dumps({k: round(v, 3) for k, v in res.items()})}")
        # The demo's own rate drifts by more than the costs measured (5-10% over a few minutes): each run is
        # held to the untraced run of its own round, and the median of those ratios is shown.
        base = {x["round"]: x["ops_per_s"] for x in results["untraced"]}
        counted = [x["events_per_s"] for label, runs in results.items() for x in runs if x["events_per_s"]]
        head = f"{'policy':17} {'ops/s':>12} {'vs untraced':>12} {'agent CPU':>10} {'agent RSS':>10}"
        print(f"\n{head} {'events/s':>10} {'CPU-s/M events':>15}")
        for policy, runs in results.items():
            o = statistics.median(x["ops_per_s"] for x in runs)
            cpu = statistics.median(x["agent_cpu"] for x in runs)
            rss = max(x["agent_rss_mib"] for x in runs)
            ev = statistics.median(x["events_per_s"] for x in runs)
            per_m = statistics.median(x["cpu_s_per_m_events"] for x in runs)
            vs = statistics.median(x["ops_per_s"] / base[x["round"]] - 1 for x in runs)
            line = f"{policy:17} {o:12,.0f} {vs:+12.1%} {cpu:10.1%} {rss:8.0f} MiB"
            if policy.split()[0] in UNCOUNTED and counted:
                ev = statistics.median(counted)
                print(f"{line} {ev:9,.0f}* {cpu / (ev / 1e6):15.3f}")
                continue
            print(f"{line} {ev:10,.0f} {per_m:15.3f}")
        if any(p.split()[0] in UNCOUNTED for p in results):
            print("* no summaries: the events a second of the rounds that count them (the same demo)")


if __name__ == "__main__":
    trio.run(main)
