"""A DuckDB connection over the tables: each registered as an Arrow table
(DuckDB scans it in place, no copy), and the prepared views created."""

from __future__ import annotations

from collections.abc import Mapping

import duckdb
import pyarrow as pa

from livetrace._tables.views import VIEWS


def connect(
    tables: Mapping[str, pa.Table], connection: duckdb.DuckDBPyConnection | None = None
) -> duckdb.DuckDBPyConnection:
    """``connection`` (a new in-memory database if None) with every table
    registered under its name and every prepared view created."""
    con = connection if connection is not None else duckdb.connect(":memory:")
    for name, table in tables.items():
        con.register(name, table)
    create_views(con)
    return con


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """The prepared views, over tables (or views) of the tables' names."""
    for name, query in VIEWS.items():
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {query}")
