"""The public face of the tables: :func:`tables`, :func:`iter_tables` and
:func:`sql`. pyarrow and duckdb are imported only when called, so that a
missing one is a :class:`MissingDependencyError` that says what to install."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from livetrace._tables.deps import need

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from livetrace._tables.read import Sources


def tables(source: Sources, *, compiled: bool | None = None) -> dict[str, pa.Table]:
    """Every table of the traces in ``source`` (a path, bytes, a binary
    file, or a sequence of paths), of any Go version: table name ->
    ``pyarrow.Table``. docs/sql.md lists the tables and their columns.
    ``compiled`` as for :func:`decode`. A malformed trace raises
    :class:`TraceFormatError`; without pyarrow, :class:`MissingDependencyError`."""
    need("pyarrow")
    from livetrace._tables.read import tables as read_tables

    return read_tables(source, compiled=compiled)


def iter_tables(source: Sources, *, compiled: bool | None = None) -> Iterator[dict[str, pa.RecordBatch]]:
    """The tables of :func:`tables` a unit (a generation, a legacy
    segment) at a time, in bounded memory: per unit, table name ->
    ``pyarrow.RecordBatch`` of that unit's rows."""
    need("pyarrow")
    from livetrace._tables.read import iter_tables as read_units

    return read_units(source, compiled=compiled)


def sql(source: Sources, *, compiled: bool | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the tables of ``source``
    registered (as Arrow tables: no copy) and the prepared views created
    (docs/sql.md)."""
    need("pyarrow")
    need("duckdb")
    from livetrace._tables.sql import connect

    return connect(tables(source, compiled=compiled))
