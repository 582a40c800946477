"""The prepared views over a Parquet dataset (what ``livetrace export --to
parquet`` wrote), each timed as ``livetrace sql DATASET`` answers it: wall
and CPU seconds (user + sys of this process, DuckDB's threads included),
each view's whole result fetched as an Arrow table. One run, no timed test.

    .venv/bin/python bench/table_views.py DATASET [--against REF] [--runs 1]

--against REF also times the views of livetrace/_tables/views.py at the git
revision REF (over the same dataset, in the same sitting, alternating) and
checks that each gives the same rows as today's (a view that counts rows
together, with an ``intervals`` column, against the old one's rows counted
so). A dataset is made with
``livetrace export TRACES --to parquet -o DATASET`` (bench/tables.py --set-gb
links one trace under many names for a set of a given size).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _views_at(ref: str) -> dict[str, str]:
    text = subprocess.run(
        ["git", "show", f"{ref}:livetrace/_tables/views.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    module = types.ModuleType("views_at_ref")
    exec(compile(text, f"{ref}:views.py", "exec"), module.__dict__)
    views: dict[str, str] = module.VIEWS
    return views


def _connection(dataset: Path, views: dict[str, str]) -> Any:
    from livetrace._cli.sql import dataset_connection

    con = dataset_connection([dataset])
    for name, query in views.items():
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {query}")
    return con


def _time(con: Any, view: str) -> tuple[float, float, Any]:
    cpu, t = _cpu(), time.perf_counter()
    table = con.sql(f"SELECT * FROM {view}").to_arrow_table()
    return time.perf_counter() - t, _cpu() - cpu, table


def _counted(a: Any, b: Any) -> Any:
    """``b``'s rows counted as ``a`` counts them, where ``a`` is ``b`` with
    an ``intervals`` column, a row per distinct row of ``b`` (what
    pprof_intervals became: a row per goroutine, profile, stack and
    duration, where it was a row per interval)."""
    if a.schema.names != [*b.schema.names, "intervals"]:
        return b
    return b.group_by(b.schema.names, use_threads=False).aggregate([([], "count_all")]).rename_columns(a.schema.names)


def _same(a: Any, b: Any) -> bool:
    b = _counted(a, b)
    if a.num_rows != b.num_rows or a.schema.names != b.schema.names:
        return False
    key = [(n, "ascending") for n in a.schema.names if not str(a.schema.field(n).type).startswith("list")]
    return bool(a.sort_by(key).equals(b.cast(a.schema).sort_by(key)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dataset", type=Path)
    p.add_argument("--against", help="a git revision whose views to time too, and compare with")
    p.add_argument("--runs", type=int, default=1, help="best of this many")
    p.add_argument("--views", help="these views only (comma-separated)")
    args = p.parse_args()

    from livetrace._tables.views import VIEWS

    names = args.views.split(",") if args.views else list(VIEWS)
    ours = _connection(args.dataset, VIEWS)
    theirs = _connection(args.dataset, _views_at(args.against)) if args.against else None
    events = ours.sql("SELECT count(*) FROM events").fetchall()[0][0]
    print(f"{args.dataset}: {events:,} events")
    head = f"{'view':<18} {'wall s':>8} {'cpu s':>8} {'rows':>12}"
    print(head + (f"   {args.against + ' wall':>14} {'cpu s':>8}  same" if theirs else ""))
    for view in names:
        best = min((_time(ours, view) for _ in range(args.runs)), key=lambda r: r[0])
        line = f"{view:<18} {best[0]:8.2f} {best[1]:8.2f} {best[2].num_rows:12,}"
        if theirs is not None:
            old = min((_time(theirs, view) for _ in range(args.runs)), key=lambda r: r[0])
            line += f"   {old[0]:14.2f} {old[1]:8.2f}  {'yes' if _same(best[2], old[2]) else 'NO'}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
