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

    from livetrace._tables.read import OnError, Sources


def tables(
    source: Sources,
    *,
    duration: float | None = None,
    one_session: bool = False,
    compiled: bool | None = None,
    on_error: OnError | None = None,
) -> dict[str, pa.Table]:
    """Every table of the traces in ``source`` (a path, bytes, a binary
    file, or a sequence of paths), of any Go version: table name ->
    ``pyarrow.Table``. docs/sql.md lists the tables and their columns.
    With ``duration`` (seconds), ``source`` is a live service's address (as
    :func:`connect` takes it), traced that long; not from inside trio.
    ``one_session``: the files are one session's, in order (a recording's
    files: ``trace.out``, ``trace.2.out``, ...), where each is its own
    else (``captures.session``). ``compiled`` as for :func:`decode`. A malformed trace raises
    :class:`TraceFormatError`, unless ``on_error``: then a trace malformed or cut short keeps the
    generations it had whole before the problem (as ``go tool trace`` reads it), ``on_error(name,
    error, kept)`` is told (``kept``: whether anything was), and the next file goes on. Without
    pyarrow, :class:`MissingDependencyError`."""
    need("pyarrow")
    if duration is not None:
        from livetrace._tables.live import live_tables

        return live_tables(str(source), duration, compiled=compiled)
    from livetrace._tables.read import tables as read_tables

    return read_tables(source, one_session=one_session, compiled=compiled, on_error=on_error)


def iter_tables(
    source: Sources, *, one_session: bool = False, compiled: bool | None = None, on_error: OnError | None = None
) -> Iterator[dict[str, pa.RecordBatch]]:
    """The tables of :func:`tables` a unit (a generation, a legacy
    segment) at a time, in bounded memory: per unit, table name ->
    ``pyarrow.RecordBatch`` of that unit's rows (``on_error`` as there)."""
    need("pyarrow")
    from livetrace._tables.read import iter_tables as read_units

    return read_units(source, one_session=one_session, compiled=compiled, on_error=on_error)


def sql(
    source: Sources, *, duration: float | None = None, one_session: bool = False, compiled: bool | None = None
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the tables of ``source`` (as
    for :func:`tables`, a live address with ``duration``) registered (as
    Arrow tables: no copy) and the prepared views created (docs/sql.md)."""
    need("pyarrow")
    need("duckdb")
    from livetrace._tables.sql import connect

    return connect(tables(source, duration=duration, one_session=one_session, compiled=compiled))
