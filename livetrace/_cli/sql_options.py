"""``livetrace sql``'s options and help: argparse only, so that the parser
is built without importing pyarrow, DuckDB or the session layer."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from livetrace._cli.options import session_arguments

SQL_EXAMPLES = """\
examples:
  livetrace sql service.trace                                   a prompt: .tables, .schema NAME, .help
  livetrace sql service.trace -c 'SELECT * FROM sched_latency LIMIT 10'
  livetrace sql captures/ -c 'SELECT capture, count(*) FROM events GROUP BY ALL'   every .trace in captures/
  livetrace sql 'week/*.trace' -c 'SELECT * FROM gc_pauses ORDER BY duration DESC LIMIT 20'
  livetrace sql dataset/ -c 'SELECT * FROM sched_latency'       what export --to parquet wrote: read as needed
  livetrace sql pid:4242 --duration 10 -c 'SELECT * FROM blocking LIMIT 20'        a live service
  livetrace sql http://127.0.0.1:6060 -d 5 -c 'SELECT * FROM goroutine_leaks' --format jsonl
  livetrace sql svc.trace -c 'SELECT * FROM goroutine_states WHERE duration > 5e6' -o slow.parquet
  livetrace sql --one-session 'top*.trace' -c 'SELECT * FROM sched_latency'    a recording's segment files
  echo 'SELECT count(*) FROM events;' | livetrace sql svc.trace --format csv

tables: captures, events, goroutine_states, goroutine_units, blocked_units, sched_units, pprof_units,
pprof_interval_units, proc_states, spans, gc_spans, tasks, regions, logs, counters, cpu_samples,
stacks, frames (times in ns; every row but stacks' and frames' has its capture).
prepared views: sched_latency, blocking, gc_pauses, slowest_regions, slowest_tasks,
goroutine_leaks, goroutines, stack_frames, pprof (go tool trace -pprof's sums per stack).
docs/sql.md has every column and a cookbook of questions and their queries.

the fleet (livetrace agent's tables: docs/fleet.md):
  livetrace sql --lake /var/lib/livetrace-agent/lake -c 'SELECT * FROM fleet_sched_latency ORDER BY hour DESC'
  livetrace sql --clickhouse clickhouse://reader@ch:8123 -c 'SELECT * FROM fleet_captures LIMIT 20'"""

OUTPUT_SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet"}


def _rows(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of rows, 1 or more")
    return value


def add_sql_parser(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser(
        "sql",
        help="query traces (files, directories, live services) with SQL, in DuckDB",
        description="Load the traces of every SOURCE as tables (docs/sql.md) into DuckDB, in-process, and "
        "run SQL over them: the statements of -c, or those read from standard input, or, in a terminal "
        "without -c, those typed at a prompt. A SOURCE is a trace file of any Go version (1.5 to 1.27), a "
        "directory (its .trace files, at any depth), a glob in quotes, a Parquet dataset that `livetrace export "
        "--to parquet` wrote (its files read as each query needs them: a set of traces too big to hold), or a "
        "live service's address "
        "(pid:N, a name, unix:, tcp:, tls:, http://), traced for --duration (or until Ctrl-C) before the "
        "queries run. Every row names its capture (a trace, a live session, a pprof window, a legacy "
        "segment): one query spans them all.",
        epilog=SQL_EXAMPLES,
        formatter_class=formatter,
    )
    session_arguments(p, files=True, sources=True, no_sources=True)
    fleet = p.add_mutually_exclusive_group()
    fleet.add_argument(
        "--lake",
        metavar="DIR|URI",
        help="instead of SOURCEs, the Parquet lake `livetrace agent` writes (a directory, or a filesystem URI "
        "such as s3://BUCKET/PREFIX): its tables (summaries, spans, captures, agent_log) and the fleet's views "
        "(docs/fleet.md)",
    )
    fleet.add_argument(
        "--clickhouse",
        metavar="URL",
        help="instead of SOURCEs, the agent's tables in ClickHouse (clickhouse://USER:PASSWORD@HOST:8123, or an "
        "embedded chdb:///DIR), with the same views; the statements of -c or standard input run there",
    )
    p.add_argument(
        "-c",
        "--query",
        action="append",
        metavar="SQL",
        help="the statements to run (several, separated by ;, or -c again), each result written in turn; "
        "without it, statements are read from standard input, or at a prompt in a terminal",
    )
    p.add_argument(
        "--format",
        choices=["table", "csv", "jsonl", "parquet"],
        help="how results are written: a terminal table (default), CSV (a header line), JSON lines, or "
        "Parquet (needs -o); with -o, the default follows its suffix (.csv, .jsonl, .parquet)",
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="FILE",
        help="write the (last) result to FILE, whole or not at all, instead of standard output",
    )
    p.add_argument(
        "--max-rows",
        type=_rows,
        default=100,
        metavar="N",
        help="rows a terminal table shows (default 100; the count left out is said on standard error)",
    )
    p.add_argument(
        "--one-session",
        action="store_true",
        help="the trace files are one live session's, such as the files of a recording (`--record trace.out` "
        "writes a file per legacy segment: trace.out, trace.2.out, ...), read in that order: their captures "
        "share captures.session, and the goroutines view names a goroutine a segment leaves unnamed by the "
        "name an earlier one gave it (docs/sql.md); without it, each file is a session of its own",
    )
    p.add_argument(
        "--record",
        type=Path,
        metavar="FILE",
        help="also write the live session's trace to FILE (as `livetrace record`), to query again later",
    )


def resolve_format(args: argparse.Namespace) -> str:
    """Set ``args.format`` (given, else from -o's suffix, else table); the
    error, in words, where the format and -o do not go together ("" if none)."""
    if args.format is None:
        args.format = OUTPUT_SUFFIXES.get(args.output.suffix.lower(), "") if args.output is not None else "table"
        if not args.format:
            return f"say how to write {args.output}: --format csv, jsonl or parquet"
    if args.format == "parquet" and args.output is None:
        return "--format parquet writes a file: give -o FILE"
    if args.format == "table" and args.output is not None:
        return "a table is for the terminal: give -o FILE with --format csv, jsonl or parquet"
    return ""
