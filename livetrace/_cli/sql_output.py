"""``livetrace sql``'s results: a terminal table (rich), CSV, JSON lines or a
Parquet file, each streamed from DuckDB's Arrow batches (a result is never
held whole, except the rows a terminal table shows).

A trace's strings are the traced service's choice: a table escapes them
(``shown``), and CSV and JSON lines on a terminal go through the
terminal-safe writer; on a pipe or in a file they are the values as they
are (JSON escapes control characters itself)."""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import duckdb
import pyarrow as pa
import pyarrow.csv as pa_csv
from rich import box
from rich.console import Console
from rich.table import Table

from livetrace._dataset import ParquetFile
from livetrace._outfile import write_output
from livetrace._protocol.text import shown

FORMATS = ("table", "csv", "jsonl", "parquet")
BATCH_ROWS = 64 * 1024
CELL_CHARS = 120  # characters of one value a terminal table shows
MIN_COLUMN = 12  # a column narrowed to fit a terminal keeps at least this much (or its name's length)
PIPE_WIDTH = 100_000
RESULT = "livetrace_result"  # the name a result is scanned under, on a cursor of its own


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_NESTED = frozenset({"list", "struct", "map", "array", "union"})


def _reader(con: duckdb.DuckDBPyConnection, rel: duckdb.DuckDBPyRelation, select: str) -> pa.RecordBatchReader:
    """The result of ``select`` over the relation's rows (``RESULT``): the
    relation streams on ``con`` and is read, as it streams, on a cursor."""
    cur = con.cursor()
    cur.register(RESULT, rel.to_arrow_reader(BATCH_ROWS))
    return cur.sql(select).to_arrow_reader(BATCH_ROWS)


def _csv_pieces(con: duckdb.DuckDBPyConnection, rel: duckdb.DuckDBPyRelation) -> Iterator[bytes]:
    """CSV, a header then the rows; a list or struct as its JSON text."""
    columns = ", ".join(
        f"to_json({_quote(n)})::VARCHAR AS {_quote(n)}" if t.id in _NESTED else _quote(n)
        for n, t in zip(rel.columns, rel.types, strict=True)
    )
    reader = _reader(con, rel, f"SELECT {columns} FROM {RESULT}")
    header = True
    for batch in reader:
        sink = pa.BufferOutputStream()
        pa_csv.write_csv(batch, sink, pa_csv.WriteOptions(include_header=header))
        header = False
        yield sink.getvalue().to_pybytes()
    if header:  # no rows: the header still says what the columns were
        sink = pa.BufferOutputStream()
        pa_csv.write_csv(reader.schema.empty_table(), sink)
        yield sink.getvalue().to_pybytes()


def _jsonl_pieces(con: duckdb.DuckDBPyConnection, rel: duckdb.DuckDBPyRelation) -> Iterator[bytes]:
    """One JSON object a row, DuckDB's own JSON (to_json)."""
    reader = _reader(con, rel, f"SELECT to_json(r)::VARCHAR AS j FROM {RESULT} r")
    for batch in reader:
        lines = batch.column(0).to_pylist()
        if lines:
            yield ("\n".join(lines) + "\n").encode()


def _is_terminal(out: TextIO) -> bool:
    """Whether ``out`` writes to a terminal (the writers that wrap stdout have its descriptor)."""
    try:
        return os.isatty(out.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False


def _cell(value: object) -> str:
    if value is None:
        return "NULL"
    return shown(str(value), CELL_CHARS)


def _table(rel: duckdb.DuckDBPyRelation, out: TextIO, max_rows: int) -> int:
    """The first max_rows rows as a table; how many rows were left out."""
    reader = rel.to_arrow_reader(min(BATCH_ROWS, max_rows + 1))
    t = Table(box=box.SIMPLE_HEAD, show_edge=False)
    for field in reader.schema:
        numeric = pa.types.is_integer(field.type) or pa.types.is_floating(field.type) or pa.types.is_decimal(field.type)
        name = shown(field.name, CELL_CHARS)
        t.add_column(
            name,
            justify="right" if numeric else "left",
            no_wrap=True,
            overflow="ellipsis",
            min_width=min(len(name), MIN_COLUMN),
        )
    shown_rows = more = 0
    for batch in reader:
        take = min(batch.num_rows, max_rows - shown_rows)
        for row in batch.slice(0, take).to_pylist():
            t.add_row(*(_cell(v) for v in row.values()))
        shown_rows += take
        more += batch.num_rows - take
    # A terminal's width (a value too wide for it ends in an ellipsis); a pipe's rows whole.
    width = shutil.get_terminal_size().columns if _is_terminal(out) else PIPE_WIDTH
    console = Console(file=out, width=width, highlight=False, soft_wrap=False, emoji=False, markup=False)
    console.print(t)
    return more


def write_result(
    con: duckdb.DuckDBPyConnection,
    rel: duckdb.DuckDBPyRelation,
    fmt: str,
    out: TextIO,
    output: Path | None,
    max_rows: int,
) -> int:
    """Write a query's result to ``output`` (a file; None: ``out``); for a
    table, how many rows it left out (0 otherwise)."""
    if fmt == "table":
        return _table(rel, out, max_rows)
    if fmt == "parquet":
        assert output is not None, "the parser wants -o FILE for parquet"
        reader = rel.to_arrow_reader(BATCH_ROWS)
        with ParquetFile(output, reader.schema) as pq_out:
            for batch in reader:
                pq_out.write(batch)
            pq_out.commit()
        return 0
    pieces = _csv_pieces(con, rel) if fmt == "csv" else _jsonl_pieces(con, rel)
    if output is None:
        out.writelines(piece.decode("utf-8", "surrogateescape") for piece in pieces)
        out.flush()
    else:
        write_output(output, pieces)
    return 0
