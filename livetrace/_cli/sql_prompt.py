"""Running ``livetrace sql``'s statements: from ``-c``, from standard input,
or typed at a prompt (readline's editing and history where Python has it).

A statement's error is one line with DuckDB's message; at the prompt the
next statement is asked for, elsewhere the command ends with it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import duckdb

from livetrace._cli.exits import say
from livetrace._cli.sql_output import FORMATS, write_result

PROMPT, MORE = "sql> ", "...> "
HISTORY_LINES = 1000

HELP = """\
End a statement with ; (it may span lines). Ctrl-C drops what was typed; Ctrl-D leaves.
  .tables            the tables and the prepared views
  .schema NAME       a table's or view's columns
  .format FORMAT     table, csv or jsonl (now: {fmt})
  .rows N            rows a table shows (now: {rows})
  .help              this
  .quit              leave (also .exit)
docs/sql.md has the tables' columns and a cookbook of queries."""


def tables_query(tables: Collection[str]) -> str:
    """The tables and views by name, the traces' tables (Arrow tables,
    which DuckDB lists as views) called tables."""
    names = ", ".join("'" + name.replace("'", "''") + "'" for name in tables) or "NULL"
    return f"""
        SELECT name, kind FROM (
            SELECT table_name AS name, 'table' AS kind FROM duckdb_tables() WHERE NOT internal
            UNION ALL
            SELECT view_name, CASE WHEN view_name IN ({names}) THEN 'table' ELSE 'view' END
            FROM duckdb_views() WHERE NOT internal)
        ORDER BY kind, name
    """


def error_line(e: duckdb.Error) -> str:
    """DuckDB's message on one line: its first paragraph (the rest is the
    statement again, with a caret under the place)."""
    first = str(e).strip().split("\n\n", 1)[0]
    return " ".join(part.strip() for part in first.splitlines())


@dataclass
class Settings:
    fmt: str
    max_rows: int
    output: Path | None = None


class Shell:
    """Runs statements on a connection and writes their results."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        settings: Settings,
        out: TextIO,
        err: TextIO,
        tables: Collection[str] = (),
    ) -> None:
        self.con = con
        self.tables = tables
        self.settings = settings
        self.out = out
        self.err = err

    def run(self, text: str) -> bool:
        """Every statement of ``text``, each result written (with ``-o``,
        only the last one's: the file holds one result); False at the
        first error, said in one line."""
        try:
            statements = self.con.extract_statements(text)
        except duckdb.Error as e:
            say(self.err, f"error: {error_line(e)}")
            return False
        for i, statement in enumerate(statements):
            last = i == len(statements) - 1
            try:
                rel = self.con.sql(statement.query)
                if rel is None or (self.settings.output is not None and not last):
                    continue
                left = write_result(
                    self.con, rel, self.settings.fmt, self.out, self.settings.output, self.settings.max_rows
                )
            except duckdb.Error as e:
                say(self.err, f"error: {error_line(e)}")
                return False
            if left:
                say(self.err, f"{left:,} more rows not shown (--max-rows; or --format csv for every row)")
        return True

    def command(self, line: str) -> bool:
        """A dot command; False to leave."""
        name, _, rest = line.strip().partition(" ")
        rest = rest.strip()
        if name in (".quit", ".exit"):
            return False
        if name == ".help":
            print(HELP.format(fmt=self.settings.fmt, rows=self.settings.max_rows), file=self.out)
        elif name == ".tables":
            self._table(tables_query(self.tables))
        elif name == ".schema" and rest:
            self._table(f"DESCRIBE {rest}")
        elif name == ".format" and rest in FORMATS and rest != "parquet":
            self.settings.fmt = rest
        elif name == ".rows" and rest.isdigit():
            self.settings.max_rows = int(rest)
        else:
            say(self.err, f"error: not a command: {line.strip()} (.help lists them)")
        return True

    def _table(self, query: str) -> None:
        try:
            write_result(self.con, self.con.sql(query), "table", self.out, None, 10_000)
        except duckdb.Error as e:
            say(self.err, f"error: {error_line(e)}")


def history_path() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "livetrace" / "sql_history"


@contextlib.contextmanager
def _history(path: Path) -> Iterator[None]:
    try:
        import readline
    except ImportError:  # no readline (Windows): plain input()
        yield
        return
    with contextlib.suppress(OSError):
        readline.read_history_file(path)
    readline.set_history_length(HISTORY_LINES)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(path)


def prompt(shell: Shell, history: Path | None = None) -> int:
    """Read statements at a prompt until Ctrl-D or .quit; exit status 0."""
    print("livetrace sql: DuckDB over the traces. .tables lists them, .help the commands.", file=shell.out)
    lines: list[str] = []
    with _history(history or history_path()):
        while True:
            try:
                line = input(MORE if lines else PROMPT)
            except EOFError:
                print(file=shell.out)
                return 0
            except KeyboardInterrupt:
                print(file=shell.out)
                lines.clear()
                continue
            if not lines and line.strip().startswith("."):
                if not shell.command(line):
                    return 0
                continue
            if not lines and not line.strip():
                continue
            lines.append(line)
            if line.rstrip().endswith(";"):
                text = "\n".join(lines)
                lines.clear()
                try:
                    shell.run(text)
                except KeyboardInterrupt:
                    shell.con.interrupt()
                    say(shell.err, "interrupted")
