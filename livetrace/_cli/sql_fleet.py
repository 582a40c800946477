"""``livetrace sql --lake DIR|URI`` and ``--clickhouse URL``: the agent's tables
and the fleet's views (``_agent.fleet``), queried where they are: DuckDB
over the lake's files, or ClickHouse itself (its results written by the
same writers as DuckDB's)."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

import duckdb

from livetrace._agent.fleet import FLEET_VIEWS, clickhouse_client, lake_connection
from livetrace._agent.rows import TABLES
from livetrace._agent.store import local_path
from livetrace._cli.common import EXIT_ERROR, EXIT_OK, say
from livetrace._cli.sql_output import write_result
from livetrace._cli.sql_prompt import Settings, Shell, prompt
from livetrace._errors import OutputPathError


def statements(text: str) -> list[str]:
    """``text``'s statements, split at the semicolons outside quotes."""
    out: list[str] = []
    quote = ""
    start = 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch == ";":
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [s.strip() for s in out if s.strip()]


def lake_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    local = local_path(args.lake)
    if local is not None and not local.is_dir():
        say(
            err,
            f"error: {local} is not a directory: give --lake the lake (livetrace agent's state_dir/lake, or its URI)",
        )
        return EXIT_ERROR
    try:
        con = lake_connection(args.lake if local is None else local)
    except OutputPathError as e:
        say(err, f"error: {e}")
        return EXIT_ERROR
    interactive = args.query is None and sys.stdin.isatty()
    shell = Shell(
        con,
        Settings(args.format, args.max_rows, args.output),
        sys.stdout if interactive else out,
        err,
        [*TABLES, *FLEET_VIEWS],
    )
    if interactive:
        return prompt(shell)
    for text in args.query if args.query is not None else [sys.stdin.read()]:
        if not shell.run(text):
            return EXIT_ERROR
    return EXIT_OK


def clickhouse_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.query is None and sys.stdin.isatty():
        say(err, "error: --clickhouse runs the statements of -c, or of standard input (no prompt)")
        return EXIT_ERROR
    import clickhouse_connect.driver.exceptions as ch_errors

    try:
        client = clickhouse_client(args.clickhouse)
    except (ch_errors.ClickHouseError, OSError) as e:
        say(err, f"error: cannot reach ClickHouse: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
        return EXIT_ERROR
    duck = duckdb.connect()  # only to write the results, as DuckDB's are written
    try:
        texts = args.query if args.query is not None else [sys.stdin.read()]
        todo = [s for text in texts for s in statements(text)]
        for i, sql in enumerate(todo):
            try:
                result = client.query_arrow(sql)
            except ch_errors.ClickHouseError as e:
                say(err, f"error: {str(e).strip().splitlines()[0]}")
                return EXIT_ERROR
            if args.output is not None and i < len(todo) - 1:
                continue
            left = write_result(duck, duck.from_arrow(result), args.format, out, args.output, args.max_rows)
            if left:
                say(err, f"{left:,} more rows not shown (--max-rows; or --format csv for every row)")
    finally:
        client.close()
    return EXIT_OK
