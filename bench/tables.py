"""Traces as tables: how fast, and in how much memory; against what a user
does without livetrace. One run, no timed test.

    .venv/bin/python bench/tables.py --xexp DIR [--trace FILE] [--trace-mb 64] [--set-gb 1] [--runs 3]

1. A trace to Arrow tables (``livetrace.tables``): events per second (wall
   clock, and CPU time: user and system, every thread), best
   of --runs, and the first run on a line of its own (target: 20M events/s);
   in a process as a program that calls the API has it (pyarrow's own
   memory pool), then as the CLI sets its process up (pyarrow's buffers
   from malloc, freed memory kept: livetrace/_host.py), which every other
   step has.
2. A trace to a Parquet dataset (what ``export --to parquet`` writes):
   events per second (target: 10M events/s); and the same units built
   and not written (``iter_tables``), so that the writer's share is the
   difference.
3. A set of traces of about --set-gb GB (the trace, linked under as many
   names as it takes: each is a capture of its own) exported to one
   Parquet dataset, then every prepared view answered over it in DuckDB,
   reading the dataset (target: each in under 2 s).
4. The baseline: golang.org/x/exp/trace's reader into CSV (bench/xexp_csv,
   built here against the x/exp checkout given as --xexp: a clone of
   https://go.googlesource.com/exp; only its trace/ is used, as a module of
   its own, offline), the CSV loaded into DuckDB, and one question asked
   (blocked time by reason, from the state transitions with a window
   function); against livetrace's tables and the same question over
   ``goroutine_states``.

Each step runs in a child process of its own, so that its peak resident
memory (``ru_maxrss``, from wait4) is its alone. Without --trace it records
the demo service (Go 1.26, 4 workers) until the file holds --trace-mb MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from livetrace._host import ARROW_POOL_VARIABLE, keep_freed_memory

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
AS_CLI = "LIVETRACE_BENCH_AS_CLI"  # a step's process set up as the CLI's

BLOCKED_BY_REASON_X = """
    WITH t AS (SELECT goroutine, time, to_state, reason,
                      lead(time) OVER (PARTITION BY goroutine ORDER BY time) AS next
               FROM transitions)
    SELECT reason, count(*) AS n, sum(next - time) AS ns FROM t
    WHERE to_state = 'Waiting' AND next IS NOT NULL GROUP BY ALL ORDER BY ns DESC
"""
BLOCKED_BY_REASON = """
    SELECT reason, count(*) AS n, sum(duration) AS ns FROM goroutine_states
    WHERE state = 'blocked' AND NOT clipped_end GROUP BY ALL ORDER BY ns DESC
"""


# ---- the steps, each run in a child: python bench/tables.py --step NAME ARGS... (prints one JSON line)


def cpu_seconds() -> float:
    """This process's CPU time, every thread's (pyarrow's too), user and
    system: on a shared machine a steadier measure than the wall clock."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def step_tables(trace: str, runs: str) -> dict[str, Any]:
    import livetrace
    import livetrace._tables.read  # (its imports, pyarrow among them, are not the step's)

    best, cpu, events, first = float("inf"), float("inf"), 0, None
    for _ in range(int(runs)):
        t, c = time.perf_counter(), cpu_seconds()
        tables = livetrace.tables(trace)
        took = (time.perf_counter() - t, cpu_seconds() - c)
        first = first or took
        best, cpu = min(best, took[0]), min(cpu, took[1])
        events = tables["events"].num_rows
        del tables
    return {"seconds": best, "cpu": cpu, "events": events, "first": first}


def step_parquet(out: str, runs: str, *traces: str) -> dict[str, Any]:
    from livetrace._cli.export_parquet import export_file
    from livetrace._dataset import ParquetDataset
    from livetrace._tables.schema import SCHEMA_VERSION

    best, cpu, events, first = float("inf"), float("inf"), 0, None
    for _ in range(int(runs)):
        shutil.rmtree(out, ignore_errors=True)
        t, c = time.perf_counter(), cpu_seconds()
        events = rows = 0
        with ParquetDataset(Path(out), schema_version=str(SCHEMA_VERSION)) as ds:
            for path in traces:  # what `livetrace export PATH... --to parquet -o OUT` does
                e, r = export_file(ds, Path(path), "demo")
                events, rows = events + e, rows + r
        took = (time.perf_counter() - t, cpu_seconds() - c)
        first = first or took
        best, cpu = min(best, took[0]), min(cpu, took[1])
    size = sum(p.stat().st_size for p in Path(out).rglob("*.parquet"))
    return {"seconds": best, "cpu": cpu, "events": events, "rows": rows, "bytes": size, "first": first}


def step_units(trace: str, runs: str) -> dict[str, Any]:
    """The units the Parquet export writes, built and dropped: the export's
    CPU less this is the writer's."""
    from livetrace._tables.read import iter_tables

    best, cpu, first = float("inf"), float("inf"), None
    for _ in range(int(runs)):
        t, c = time.perf_counter(), cpu_seconds()
        for _unit in iter_tables([Path(trace)]):
            pass
        took = (time.perf_counter() - t, cpu_seconds() - c)
        first = first or took
        best, cpu = min(best, took[0]), min(cpu, took[1])
    return {"seconds": best, "cpu": cpu, "first": first}


def step_views(dataset: str) -> dict[str, Any]:
    from livetrace._cli.sql import dataset_connection  # what `livetrace sql DATASET` reads
    from livetrace._tables.views import VIEWS

    con = dataset_connection([Path(dataset)])
    times = {}
    for view in VIEWS:
        t = time.perf_counter()
        rows = con.sql(f"SELECT * FROM {view}").to_arrow_table().num_rows
        times[view] = (time.perf_counter() - t, rows)
    events = con.sql("SELECT count(*) FROM events").fetchall()[0][0]
    return {"views": times, "events": events}


def step_xexp(binary: str, trace: str, work: str) -> dict[str, Any]:
    import duckdb

    t = time.perf_counter()
    subprocess.run([binary, trace, work], check=True)
    t_csv = time.perf_counter() - t
    size = sum(p.stat().st_size for p in Path(work).glob("*.csv"))
    con = duckdb.connect()
    t = time.perf_counter()
    con.execute(f"CREATE TABLE events AS FROM read_csv('{work}/events.csv')")
    con.execute(f"CREATE TABLE transitions AS FROM read_csv('{work}/transitions.csv')")
    t_load = time.perf_counter() - t
    t = time.perf_counter()
    answer = con.sql(BLOCKED_BY_REASON_X).fetchall()
    t_query = time.perf_counter() - t
    events = con.sql("SELECT count(*) FROM events").fetchall()[0][0]
    return {"csv": t_csv, "load": t_load, "query": t_query, "events": events, "csv_bytes": size, "groups": len(answer)}


def step_livetrace_question(trace: str) -> dict[str, Any]:
    import livetrace

    t = time.perf_counter()
    con = livetrace.sql(trace)
    t_load = time.perf_counter() - t
    t = time.perf_counter()
    answer = con.sql(BLOCKED_BY_REASON).fetchall()
    t_query = time.perf_counter() - t
    return {"load": t_load, "query": t_query, "groups": len(answer)}


STEPS = {
    "tables": step_tables,
    "parquet": step_parquet,
    "units": step_units,
    "views": step_views,
    "xexp": step_xexp,
    "question": step_livetrace_question,
}


def child(name: str, *args: str, as_cli: bool = True) -> tuple[dict[str, Any], float]:
    """Run a step in a child process: its result and its peak RSS in MB.
    ``as_cli``: with the process settings the CLI makes (pyarrow's buffers
    from malloc, freed memory kept: livetrace/_host.py), where a program
    that calls the API has pyarrow's and glibc's own."""
    env = dict(os.environ)
    env.pop(ARROW_POOL_VARIABLE, None)
    if as_cli:
        env[ARROW_POOL_VARIABLE] = "system"
        env[AS_CLI] = "1"
    p = subprocess.Popen([sys.executable, __file__, "--step", name, *args], stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout is not None
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"step {name} failed ({p.returncode})")
    return json.loads(out), usage.ru_maxrss / 1024


# ---- the run


def _first(r: dict[str, Any], events: int) -> str:
    """The step's first run, on its own line: a process's later runs reuse
    the memory the first one freed, where a first run (a user's one call)
    faults every page of its tables in afresh."""
    seconds, cpu = r["first"]
    return f"{'  its first run':<48} {seconds:8.3f} {events / seconds:12,.0f} {'':>8} {cpu:8.3f} {events / cpu:13,.0f}"


def build_xexp(xexp: Path, go: Path, out: Path) -> Path:
    """bench/xexp_csv built against x/exp's trace package, offline: its
    trace/ tree as a module golang.org/x/exp of its own (x/exp's other
    requirements are not needed by it, and not fetched)."""
    from livetrace._go.toolchain import go_env

    module = out / "xexp"
    shutil.copytree(xexp / "trace", module / "trace", ignore=shutil.ignore_patterns("testdata", "*_test.go"))
    wants = [line for line in (xexp / "go.mod").read_text().splitlines() if line.startswith("go ")]
    (module / "go.mod").write_text("module golang.org/x/exp\n\n" + (wants[0] if wants else "go 1.23") + "\n")
    shutil.copytree(BENCH / "xexp_csv", module / "cmd" / "xexp_csv")
    binary = out / "xexp_csv"
    subprocess.run([str(go), "build", "-o", str(binary), "./cmd/xexp_csv"], cwd=module, env=go_env(), check=True)
    return binary


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trace", type=Path)
    p.add_argument("--trace-mb", type=float, default=64, help="without --trace: record the demo until this big")
    p.add_argument(
        "--set-gb",
        type=float,
        default=1.0,
        help="the set of traces the views are timed over (0: only the trace's own figures)",
    )
    p.add_argument("--go", help="go binary (default: as livetrace demo finds it)")
    p.add_argument("--xexp", type=Path, help="a checkout of golang.org/x/exp, for the baseline")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--work", type=Path, help="where the datasets go (default: a temporary directory)")
    p.add_argument("--step", help=argparse.SUPPRESS)
    args, rest = p.parse_known_args()
    if args.step:
        if os.environ.get(AS_CLI):
            keep_freed_memory()
        print(json.dumps(STEPS[args.step](*rest)))
        return

    from livetrace._go.toolchain import find_go, go_version

    go = find_go(args.go)
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        work = Path(tmp)
        given = args.trace
        if given is None:
            import trio
            from _common import record_demo

            given = work / "demo.trace"
            trio.run(record_demo, go, given, int(args.trace_mb * 1e6))
        trace = given
        mb = trace.stat().st_size / 1e6
        print(f"trace: {trace.name}, {mb:.1f} MB; go: {go_version(go)}; runs: best of {args.runs}")
        print(f"{'step':<48} {'seconds':>8} {'events/s':>12} {'peak MB':>8} {'CPU s':>8} {'events/CPU s':>13}")

        for label, as_cli in (("trace -> Arrow tables (livetrace.tables)", False), ("  as the CLI runs it", True)):
            r, rss = child("tables", str(trace), str(args.runs), as_cli=as_cli)
            events = r["events"]
            print(
                f"{label:<48} {r['seconds']:8.3f} {events / r['seconds']:12,.0f} {rss:8.0f}"
                f" {r['cpu']:8.3f} {events / r['cpu']:13,.0f}"
            )
            print(_first(r, events))
        r, rss = child("parquet", str(work / "one"), str(args.runs), str(trace))
        print(
            f"{'trace -> Parquet dataset':<48} {r['seconds']:8.3f} {events / r['seconds']:12,.0f} {rss:8.0f}"
            f" {r['cpu']:8.3f} {events / r['cpu']:13,.0f}   ({r['bytes'] / 1e6:.1f} MB of Parquet, {r['rows']:,} rows)"
        )
        print(_first(r, events))
        r, rss = child("units", str(trace), str(args.runs))
        print(
            f"{'  its units built, not written (iter_tables)':<48} {r['seconds']:8.3f} {events / r['seconds']:12,.0f}"
            f" {rss:8.0f} {r['cpu']:8.3f} {events / r['cpu']:13,.0f}"
        )
        if args.set_gb <= 0:  # the trace's own figures only
            return

        copies = max(1, round(args.set_gb * 1e9 / trace.stat().st_size))
        linked = work / "set"
        linked.mkdir()
        names = []
        for i in range(copies):
            name = linked / f"t{i:04d}.trace"
            os.link(trace, name)
            names.append(str(name))
        r, rss = child("parquet", str(work / "set-ds"), "1", *names)
        print(
            f"{f'{copies} traces, {copies * mb / 1e3:.2f} GB -> Parquet':<48} {r['seconds']:8.3f} "
            f"{r['events'] / r['seconds']:12,.0f} {rss:8.0f}   ({r['bytes'] / 1e9:.2f} GB of Parquet)"
        )
        r, rss = child("views", str(work / "set-ds"))
        print(
            f"prepared views over that dataset ({r['events']:,} events; DuckDB reading the Parquet), peak {rss:.0f} MB:"
        )
        for view, (seconds, rows) in r["views"].items():
            print(f"  {view:<22} {seconds:8.3f} s  {rows:>12,} rows  {'ok' if seconds < 2 else 'OVER 2 s'}")
        shutil.rmtree(work / "set-ds")

        if args.xexp is not None:
            binary = build_xexp(args.xexp, go, work)
            (work / "csv").mkdir()
            x, rss_x = child("xexp", str(binary), str(trace), str(work / "csv"))
            q, rss_q = child("question", str(trace))
            print(f"baseline: golang.org/x/exp/trace -> CSV ({x['csv_bytes'] / 1e6:.0f} MB) -> DuckDB, one question")
            print(f"  {'x/exp reader -> CSV':<46} {x['csv']:8.3f} {x['events'] / x['csv']:12,.0f}")
            print(f"  {'CSV -> DuckDB tables':<46} {x['load']:8.3f}")
            print(f"  {'blocked time by reason (window function)':<46} {x['query']:8.3f}")
            total_x = x["csv"] + x["load"] + x["query"]
            print(f"  {'together':<46} {total_x:8.3f} {x['events'] / total_x:12,.0f} {rss_x:8.0f}")
            print("livetrace: the trace -> tables in DuckDB, the same question over goroutine_states")
            print(f"  {'livetrace.sql(trace)':<46} {q['load']:8.3f} {events / q['load']:12,.0f}")
            print(f"  {'blocked time by reason':<46} {q['query']:8.3f}")
            total = q["load"] + q["query"]
            print(f"  {'together':<46} {total:8.3f} {events / total:12,.0f} {rss_q:8.0f}")
            print(f"livetrace answers {total_x / total:.1f}x sooner (x/exp events {x['events']:,}, ours {events:,})")


if __name__ == "__main__":
    main()
