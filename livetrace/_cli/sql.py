"""``livetrace sql``: DuckDB, in-process, over the tables of trace files and
live services (docs/sql.md). Every source's rows carry its ``capture``, so
one query spans them all."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import trio

from livetrace._cli.common import EXIT_ERROR, EXIT_INCOMPLETE, EXIT_OK, live_pass, say, units_recorded
from livetrace._cli.sources import Unread, files_read_in_part
from livetrace._cli.sql_inputs import Inputs, expand
from livetrace._outfile import check_output
from livetrace._plural import plural
from livetrace._tables.deps import need

if TYPE_CHECKING:  # the modules themselves load once need() found them
    import duckdb
    import pyarrow as pa


def _merge(parts: list[dict[str, pa.Table]]) -> dict[str, pa.Table]:
    """The sources' tables as one table each. A stack or frame two sources
    both hold (each source's builder emits it once) is kept once: its id
    is stable, so its rows are equal."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(parts) == 1:
        return parts[0]
    merged = {name: pa.concat_tables([p[name] for p in parts]) for name in parts[0]}
    for name, key in (("stacks", "stack_id"), ("frames", "frame_id")):
        table = merged[name]
        rows = pa.table({"k": table.column(key), "i": pa.array(range(table.num_rows), pa.int64())})
        first = rows.group_by("k", use_threads=False).aggregate([("i", "min")]).column("i_min")
        merged[name] = table.take(pc.take(first, pc.sort_indices(first)))  # in the order first seen
    return merged


async def _live_tables(
    args: argparse.Namespace, live: list[str], err: TextIO, **limits: Any
) -> tuple[list[dict[str, pa.Table]], bool]:
    """Each live source's tables, all traced at once for --duration (or until Ctrl-C)."""
    import pyarrow as pa

    from livetrace._nursery import open_nursery
    from livetrace._session.session import Session
    from livetrace._tables.schema import SCHEMAS, TABLE_NAMES

    results: list[dict[str, pa.Table]] = []
    complete = [True]

    async def one(address: str, record: Path | None) -> None:
        parts: dict[str, list[pa.RecordBatch]] = {name: [] for name in TABLE_NAMES}

        async def keep(unit: dict[str, pa.RecordBatch]) -> None:
            for name, batch in unit.items():
                if batch.num_rows:
                    parts[name].append(batch)

        async def collect(session: Session) -> bool:
            await units_recorded(session, keep, record, err)
            return True  # (None: live_pass's sign of an abort)

        ok = await live_pass(address, args.duration, args.token, err, "reading", collect, **limits)
        complete[0] = complete[0] and ok
        results.append({name: pa.Table.from_batches(parts[name], schema=SCHEMAS[name]) for name in TABLE_NAMES})

    async with open_nursery() as nursery:
        for address in live:
            nursery.start_soon(one, address, args.record)
    return results, complete[0]


def dataset_connection(roots: list[Path]) -> duckdb.DuckDBPyConnection:
    """A connection whose tables are views of Parquet datasets' files (what
    export --to parquet wrote), read by DuckDB as a query needs them: a
    set of traces too big to hold. The partitions are columns (service,
    date); a stack or frame that several exports hold is one row."""
    import duckdb

    from livetrace._tables.schema import TABLE_NAMES
    from livetrace._tables.sql import create_views
    from livetrace._tables.views import DERIVED

    con = duckdb.connect(":memory:")
    # What a dataset written before the build made the views' own tables
    # lacks: made from the tables it has, as each query needs it (slower,
    # the same answers).
    derived = [t for t in DERIVED if not all(any((r / t).rglob("*.parquet")) for r in roots)]
    for table in TABLE_NAMES:
        if table in derived:
            continue
        files = ", ".join(_literal(str(root / table / "**" / "*.parquet")) for root in roots)
        scan = f"read_parquet([{files}], hive_partitioning = true, union_by_name = true)"
        key = {"stacks": "stack_id", "frames": "frame_id"}.get(table)
        rows = f"SELECT DISTINCT ON ({key}) * EXCLUDE (service, date) FROM {scan}" if key else f"SELECT * FROM {scan}"
        con.execute(f"CREATE VIEW {table} AS {rows}")
        if table == "captures" and "session" not in {r[0] for r in con.execute("DESCRIBE captures").fetchall()}:
            # Written before captures said their session (schema version 2): unknown, each capture its own.
            con.execute(f"CREATE OR REPLACE VIEW captures AS SELECT *, CAST(NULL AS BIGINT) AS session FROM {scan}")
    for table in derived:
        con.execute(f"CREATE VIEW {table} AS {DERIVED[table]}")
    create_views(con)
    return con


def recording_order(path: Path) -> tuple[str, int]:
    """Where a file comes in its recording: ``--record NAME.EXT`` writes
    NAME.EXT, NAME.2.EXT, ..., NAME.10.EXT, which name order misplaces."""
    stem, dot, number = path.stem.rpartition(".")
    if dot and number.isdigit():
        return str(path.with_name(stem + path.suffix)), int(number)
    return str(path), 1


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def load(
    args: argparse.Namespace, inputs: Inputs, err: TextIO, **limits: Any
) -> tuple[duckdb.DuckDBPyConnection, bool]:
    """A connection over the tables of every input, and whether every input
    was read whole (a live source ended as it should; a file, malformed or
    cut short, keeps the generations before the problem, and says so)."""
    from livetrace._tables.read import tables
    from livetrace._tables.sql import connect

    if inputs.datasets:
        con = dataset_connection(inputs.datasets)
        say(err, f"{plural(len(inputs.datasets), 'Parquet dataset')}, read as the queries ask")
        return con, True
    files = sorted(inputs.files, key=recording_order) if args.one_session else inputs.files
    unread: list[Unread] = []
    parts = [tables(files, one_session=args.one_session, on_error=lambda *f: unread.append(f))] if files else []
    complete = files_read_in_part(unread, len(files), err, "its tables", alone=not inputs.live)
    if inputs.live:
        live, live_complete = trio.run(lambda: _live_tables(args, inputs.live, err, **limits))
        complete = complete and live_complete
        parts.extend(live)
    merged = _merge(parts)
    captures, events = merged["captures"].num_rows, merged["events"].num_rows
    say(err, f"{plural(captures, 'capture')}, {events:,} events")
    return connect(merged), complete


def sql_command(args: argparse.Namespace, out: TextIO, err: TextIO, **limits: Any) -> int:
    """``out``: standard output as the results go there (main's whole_stdout); the prompt's is sys.stdout."""
    need("pyarrow")
    need("duckdb")
    from livetrace._cli.sql_options import resolve_format
    from livetrace._cli.sql_prompt import Settings, Shell, prompt
    from livetrace._tables.schema import TABLE_NAMES

    wrong = resolve_format(args)
    if wrong:
        say(err, f"error: {wrong}")
        return EXIT_ERROR
    if args.lake is not None or args.clickhouse is not None:
        if args.sources:
            say(err, "error: --lake and --clickhouse query the agent's tables: give them without a SOURCE")
            return EXIT_ERROR
        from livetrace._cli.sql_fleet import clickhouse_command, lake_command

        return lake_command(args, out, err) if args.lake is not None else clickhouse_command(args, out, err)
    if not args.sources:
        say(err, "error: give a SOURCE (a trace file, a directory, a glob, a live service), or --lake / --clickhouse")
        return EXIT_ERROR
    if len(args.sources) > 1 and args.record:
        say(err, "error: --record writes one live session's trace: give one live source with it")
        return EXIT_ERROR
    inputs = expand(args.sources)
    if inputs.datasets and (inputs.files or inputs.live or len(inputs.datasets) < len(args.sources)):
        say(err, "error: a Parquet dataset is queried on its own (or with other datasets), not with traces")
        return EXIT_ERROR
    if args.one_session and (inputs.datasets or not inputs.files):
        say(err, "error: --one-session reads trace files as one session's: give the files")
        return EXIT_ERROR
    if args.record and not inputs.live:
        say(err, "error: --record writes a live session's trace: the sources are files")
        return EXIT_ERROR
    if args.output is not None:
        check_output(args.output)
    if args.record is not None:
        check_output(args.record, "record")
    con, complete = load(args, inputs, err, **limits)
    interactive = args.query is None and sys.stdin.isatty()
    out = sys.stdout if interactive else out
    shell = Shell(con, Settings(args.format, args.max_rows, args.output), out, err, TABLE_NAMES)
    if interactive:
        return prompt(shell)
    for text in args.query if args.query is not None else [sys.stdin.read()]:
        if not shell.run(text):
            return EXIT_ERROR
    return EXIT_OK if complete else EXIT_INCOMPLETE
