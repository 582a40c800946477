"""Parquet files of Arrow record batches, and Hive-partitioned datasets of them.

``livetrace export --to parquet`` and ``livetrace sql -o FILE`` write
through here, and every file goes through :class:`livetrace._outfile.AtomicFile`:
written under a hidden temporary name beside its final one, then renamed
into place whole, so that a reader (DuckDB, Polars, pyarrow, Spark) never
sees a partial file, and a crash leaves none under a ``.parquet`` name.
A dataset is a directory per table, and in it a directory per partition
value, ``key=value`` (Hive's layout: ``events/service=api/date=2026-11-27/``);
those directories are made and opened relative to the dataset's own
directory, never followed through a link, as ``_outfile`` opens its
directory.

A file holds its rows in row groups of at most ``row_group_rows``, each
written as its batch comes, so memory is bounded by a row group, not by the
trace. The schema's version, and the table's name, are in the file's
key-value metadata (``livetrace.schema_version``, ``livetrace.table``).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from livetrace._errors import OutputPathError
from livetrace._outfile import AtomicFile, open_dir, plain_name, write_error

SCHEMA_VERSION_KEY = b"livetrace.schema_version"
TABLE_KEY = b"livetrace.table"
SUFFIX = ".parquet"
ROW_GROUP_ROWS = 1 << 20
COMPRESSION = "zstd"
# zstd's fastest level: a third faster to write than its default (3), the files a few percent bigger.
COMPRESSION_LEVEL = {"zstd": 1}
# Hive's name for a partition whose value is missing or empty (Spark and pyarrow read it as null).
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
# Rows encoded per call into the writer (pyarrow's default: 1024): fewer calls, 5 % less writing time.
WRITE_BATCH_ROWS = 1 << 16
# Sorted, or nearly: the columns _encoded_columns writes as deltas.
_DELTA = frozenset({"time", "wall_time", "start", "end"})
# Arguments: no query skips a row group on them, so no min and max (_statistics_columns).
_NO_BOUNDS = frozenset({"arg0", "arg1", "arg2", "arg3", "extra0", "extra1"})
# The id columns _dictionary_columns encodes.
_IDS = frozenset(
    {
        "capture",
        "generation",
        "goroutine",
        "proc",
        "thread",
        "resource_id",
        "waker_goroutine",
        "creator",
        "stack_id",
        "new_stack_id",
        "start_stack_id",
        "end_stack_id",
        "create_stack_id",
        "own_stack_id",
    }
)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

Partition = Sequence[tuple[str, str | None]]
Data = TypeVar("Data", pa.RecordBatch, pa.Table)


def partition_dirs(partition: Partition) -> list[str]:
    """The directory names of a partition, ``key=value`` each, the value
    percent-encoded as Hive does (so a ``/`` or a ``..`` in a service's
    name stays one plain name), and at most 255 bytes, which every file
    system takes (``_outfile.plain_name``: a value cut keeps a hash of it)."""
    return [f"{key}={plain_name(value) if value else NULL_PARTITION}" for key, value in partition]


def _dictionary_columns(schema: pa.Schema) -> list[str]:
    """The columns worth Parquet's dictionary encoding: strings (names,
    kinds, states repeat), and the ids of few distinct values (_IDS):
    captures, generations, goroutines, Ps, Ms, stacks, each one repeated
    over many rows, where plain values and zstd took up to five times the
    writing time and more space (a generation's number, one value, 0.9 MB
    for 2.5 M rows), and a query that filters on one (a waker, a span's
    goroutine) is answered from the dictionary (DuckDB: a tenth of the CPU
    of a scan of byte streams). Other numbers (times, arguments) rarely
    repeat, and encoding them took a third of the writing time for nothing."""
    return [
        f.name
        for f in schema
        if pa.types.is_dictionary(f.type)
        or pa.types.is_string(f.type)
        or (f.name in _IDS and pa.types.is_integer(f.type))
    ]


def _statistics_columns(schema: pa.Schema) -> list[str]:
    """The columns whose min and max go in each row group: the ids and
    times a query filters on, not the dictionary-encoded names (kinds,
    states, reasons), which every row group holds all of, nor the flags,
    nor the events' arguments (_NO_BOUNDS), on which no query skips a row
    group; working those out took a tenth of the writing time."""
    return [
        f.name
        for f in schema
        if not pa.types.is_dictionary(f.type) and not pa.types.is_boolean(f.type) and f.name not in _NO_BOUNDS
    ]


def _is_number(f: pa.Field) -> bool:
    return bool(pa.types.is_integer(f.type) or pa.types.is_timestamp(f.type))


def _encoded_columns(schema: pa.Schema) -> dict[str, str]:
    """Times (sorted in ``events``, close to it in the spans' tables) as
    deltas: smaller before compression, so a tenth less time writing and
    smaller files. Every reader named above reads Parquet's delta encoding.
    Not byte streams (``BYTE_STREAM_SPLIT``), though they wrote the
    numbers in no order in a third to a half of the time (docs/sql.md, "A
    fifth pass"): for integers they are Parquet 2.11 (2024), which Spark
    3.5's reader and DuckDB's before 2026 cannot read, and a dataset is
    for any of them."""
    return {f.name: "DELTA_BINARY_PACKED" for f in schema if f.name in _DELTA and _is_number(f)}


def _distinct(array: pa.DictionaryArray) -> pa.DictionaryArray:
    """The same values over a dictionary of distinct values."""
    values = pc.unique(array.dictionary)
    if len(values) == len(array.dictionary):
        return array
    at = pc.cast(pc.index_in(array.dictionary, value_set=values), array.type.index_type)  # fewer: it fits
    return pa.DictionaryArray.from_arrays(pc.take(at, array.indices), values)


def distinct_dictionaries(data: Data) -> Data:
    """``data`` with each dictionary column over distinct values (the same
    values): Parquet's writer takes a dictionary as it is only where its
    values are distinct, and a dictionary that repeats one (the events'
    names by wire code, "" for every code unused) made its column three
    times slower to write and three times bigger."""
    columns = []
    for column in data.columns:
        if isinstance(column, pa.ChunkedArray) and pa.types.is_dictionary(column.type):
            column = pa.chunked_array([_distinct(c) for c in column.chunks], column.type)
        elif isinstance(column, pa.DictionaryArray):
            column = _distinct(column)
        columns.append(column)
    if isinstance(data, pa.RecordBatch):
        return pa.record_batch(columns, schema=data.schema)
    return pa.table(columns, schema=data.schema)


def with_version(schema: pa.Schema, version: str, table: str | None = None) -> pa.Schema:
    """The schema with livetrace's keys added to its metadata."""
    extra = {SCHEMA_VERSION_KEY: version.encode()}
    if table is not None:
        extra[TABLE_KEY] = table.encode()
    return schema.with_metadata({**(schema.metadata or {}), **extra})


class ParquetFile:
    """One Parquet file being written: :meth:`write` batches as they come
    (each becomes one or more row groups), then :meth:`commit` puts it in
    place, or :meth:`discard` (also on leaving a ``with`` block without a
    commit) leaves nothing. Any failure to write is an
    :class:`OutputWriteError` that names the file, after which nothing of
    it is left."""

    def __init__(
        self,
        path: Path,
        schema: pa.Schema,
        *,
        dir_fd: int | None = None,
        compression: str = COMPRESSION,
        row_group_rows: int = ROW_GROUP_ROWS,
    ) -> None:
        self.path = path
        self.rows = 0
        self._out = AtomicFile(path, hidden=True, dir_fd=dir_fd)
        self._row_group_rows = row_group_rows
        try:
            self._writer = pq.ParquetWriter(
                self._out.file,
                schema,
                compression=compression,
                compression_level=COMPRESSION_LEVEL.get(compression),
                use_dictionary=_dictionary_columns(schema),
                column_encoding=_encoded_columns(schema) or None,
                write_statistics=_statistics_columns(schema),
                write_batch_size=WRITE_BATCH_ROWS,
            )
        except BaseException:
            self._out.discard()
            raise

    def write(self, data: pa.RecordBatch | pa.Table) -> None:
        with self._or_discard():
            data = distinct_dictionaries(data)
            if isinstance(data, pa.RecordBatch):
                self._writer.write_batch(data, row_group_size=self._row_group_rows)
            else:
                self._writer.write_table(data, row_group_size=self._row_group_rows)
        self.rows += data.num_rows

    def commit(self) -> Path:
        with self._or_discard():
            self._writer.close()  # the footer
            return self._out.commit()

    @contextmanager
    def _or_discard(self) -> Iterator[None]:
        """A step that fails leaves no file behind; an OSError (a full disk)
        becomes the error that names the file."""
        try:
            yield
        except OSError as e:
            self.discard()
            raise write_error(self.path, e) from None
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        try:
            if self._writer.is_open:
                self._writer.close()
        except OSError:
            pass  # a full disk's footer: the file goes anyway
        finally:
            self._out.discard()

    def __enter__(self) -> ParquetFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.discard()


def write_parquet(
    path: Path, schema: pa.Schema, batches: Iterable[pa.RecordBatch], *, dir_fd: int | None = None
) -> int:
    """A whole Parquet file at ``path`` from the batches, as they come; the rows written."""
    with ParquetFile(path, schema, dir_fd=dir_fd) as out:
        for batch in batches:
            out.write(batch)
        out.commit()
        return out.rows


def _open_root(root: Path) -> int:
    """The dataset's directory, made if missing (its parent must exist),
    and opened once as _outfile opens a file's directory."""
    try:
        os.mkdir(root)
    except FileExistsError:
        pass
    except OSError as e:
        raise OutputPathError(f"cannot make the directory {root}: {e.strerror}") from None
    return open_dir(root)  # a link to a directory only if the caller or root made it


class ParquetDataset:
    """A Hive-partitioned dataset under ``root``: ``root/TABLE/k=v/.../NAME.parquet``.

    :meth:`open` starts one file (:class:`ParquetFile`), :meth:`write` writes
    one whole; a file of the same name is replaced whole, so writing the
    same capture again replaces its files rather than adding rows twice.
    Close it (or use it as a context manager) to let go of its directories."""

    def __init__(
        self,
        root: Path,
        *,
        schema_version: str,
        compression: str = COMPRESSION,
        row_group_rows: int = ROW_GROUP_ROWS,
    ) -> None:
        self.root = root
        self.schema_version = schema_version
        self._compression = compression
        self._row_group_rows = row_group_rows
        self._dirs: dict[tuple[str, ...], int] = {(): _open_root(root)}
        self.files: list[Path] = []

    def _dir(self, parts: tuple[str, ...]) -> int:
        """The directory root/parts..., made where missing, each step opened
        relative to the one before and never through a link."""
        fd = self._dirs.get(parts)
        if fd is not None:
            return fd
        parent = self._dir(parts[:-1])
        where = self.root.joinpath(*parts)
        try:
            os.mkdir(parts[-1], 0o777, dir_fd=parent)
        except FileExistsError:
            pass
        except OSError as e:
            raise OutputPathError(f"cannot make the directory {where}: {e.strerror}") from None
        try:
            fd = os.open(parts[-1], _DIR_FLAGS, dir_fd=parent)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                raise OutputPathError(
                    f"cannot write in {where}: it is not a directory (a symbolic link, or a file); remove it"
                ) from None
            raise OutputPathError(f"cannot write in {where}: {e.strerror}") from None
        self._dirs[parts] = fd
        return fd

    def path(self, table: str, partition: Partition, name: str) -> Path:
        return self.root.joinpath(table, *partition_dirs(partition), name + SUFFIX)

    def open(self, table: str, partition: Partition, name: str, schema: pa.Schema) -> ParquetFile:
        """A new file of ``table`` in ``partition``, called ``name`` (a plain
        name of ours: no ``/``), with the schema's version added."""
        assert "/" not in name and not name.startswith("."), name
        fd = self._dir((table, *partition_dirs(partition)))
        return ParquetFile(
            self.path(table, partition, name),
            with_version(schema, self.schema_version, table),
            dir_fd=fd,
            compression=self._compression,
            row_group_rows=self._row_group_rows,
        )

    def write(self, table: str, partition: Partition, name: str, data: pa.RecordBatch | pa.Table) -> Path:
        """One whole file of ``data``; its path."""
        with self.open(table, partition, name, data.schema) as out:
            out.write(data)
            path = out.commit()
        self.files.append(path)
        return path

    def committed(self, path: Path) -> None:
        """Count a file put in place through :meth:`open`."""
        self.files.append(path)

    def close(self) -> None:
        for fd in self._dirs.values():
            os.close(fd)
        self._dirs.clear()

    def __enter__(self) -> ParquetDataset:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
