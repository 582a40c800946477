"""The Parquet writer's encodings (livetrace/_dataset.py): the trace times
in order (``time``, ``wall_time``, ``start``, ``end``) as deltas, each
cheaper to write and smaller, and DuckDB, Polars and pyarrow read them back
as they were; other columns (and a column of those names that is not
a number) as before. A dictionary column is written as a dictionary even
where its dictionary repeats a value, and the id columns as dictionaries."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from livetrace._dataset import ParquetFile, write_parquet

pytestmark = pytest.mark.once  # files: no decoder runs

N = 5000


def written(path: Path, batch: pa.RecordBatch) -> dict[str, tuple[str, ...]]:
    """``batch`` written as livetrace writes its tables: each column's encodings."""
    write_parquet(path, batch.schema, [batch])
    meta = pq.ParquetFile(path).metadata.row_group(0)
    return {meta.column(i).path_in_schema: meta.column(i).encodings for i in range(meta.num_columns)}


def read_back(path: Path, want: pa.Table) -> pa.Table:
    """pyarrow and Polars read ``want`` back; what DuckDB reads (its types its own)."""
    assert pq.read_table(path).equals(want)
    assert pl.read_parquet(path).to_arrow().cast(want.schema).equals(want)
    return duckdb.connect().sql(f"SELECT * FROM read_parquet('{path}')").to_arrow_table()


def test_times_are_deltas_and_every_reader_reads_them_back(tmp_path: Path) -> None:
    times = [1_000_000_007 + 37 * i + (i % 5) for i in range(N)]
    batch = pa.record_batch(
        {
            "time": pa.array(times, pa.int64()),
            "wall_time": pa.array([t + 1_800_000_000_000_000_000 if t % 7 else None for t in times], pa.int64()).cast(
                pa.timestamp("ns", tz="UTC")
            ),
            "start": pa.array([t - 500 for t in times], pa.int64()),
            "end": pa.array(times, pa.int64()),
            "goroutine": pa.array([i % 13 for i in range(N)], pa.int64()),
        }
    )
    path = tmp_path / "t.parquet"
    encodings = written(path, batch)
    for name in ("time", "wall_time", "start", "end"):
        assert "DELTA_BINARY_PACKED" in encodings[name], (name, encodings[name])
    assert "DELTA_BINARY_PACKED" not in encodings["goroutine"]

    want = pa.Table.from_batches([batch])
    back = read_back(path, want)
    assert back.column("time").to_pylist() == times and back.column("end").to_pylist() == times
    assert (
        back.column("wall_time").cast(pa.int64()).to_pylist() == want.column("wall_time").cast(pa.int64()).to_pylist()
    )


def test_a_string_called_time_is_not_delta_encoded(tmp_path: Path) -> None:
    batch = pa.record_batch({"time": pa.array([f"t{i % 3}" for i in range(100)], pa.string())})
    path = tmp_path / "s.parquet"
    write_parquet(path, batch.schema, [batch])
    assert pq.read_table(path).column("time").to_pylist() == batch.column("time").to_pylist()
    assert "DELTA_BINARY_PACKED" not in pq.ParquetFile(path).metadata.row_group(0).column(0).encodings


def _names(n: int) -> pa.DictionaryArray:
    """Names by code, as the events' are: "" for every code unused (a
    dictionary that repeats a value), and a null row."""
    names = pa.array(["" if i % 3 else f"ev{i}" for i in range(256)])
    codes = pa.array([None if i == 5 else (i * 7) % 256 for i in range(n)], pa.int32())
    return pa.DictionaryArray.from_arrays(codes, names)


def test_a_dictionary_that_repeats_a_value_is_still_written_as_a_dictionary(tmp_path: Path) -> None:
    """pyarrow's writer fell back to plain strings (slower, and the column
    bigger) for such a dictionary; the values read back are the same."""
    batch = pa.record_batch({"event": _names(N)})
    path = tmp_path / "d.parquet"
    write_parquet(path, batch.schema, [batch])
    assert "RLE_DICTIONARY" in pq.ParquetFile(path).metadata.row_group(0).column(0).encodings
    want = batch.column("event").cast(pa.string()).to_pylist()
    assert pq.read_table(path).column("event").cast(pa.string()).to_pylist() == want
    back = duckdb.connect().sql(f"SELECT event FROM read_parquet('{path}')").fetchall()
    assert [r[0] for r in back] == want


def test_a_tables_chunks_each_keep_their_values(tmp_path: Path) -> None:
    first = _names(300)
    second = pa.DictionaryArray.from_arrays(pa.array([1, 0, 1, 2], pa.int32()), pa.array(["b", "a", "b"]))
    table = pa.table({"event": pa.chunked_array([first, second])})
    path = tmp_path / "t.parquet"
    with ParquetFile(path, table.schema) as out:
        out.write(table)
        out.commit()
    want = table.column("event").cast(pa.string()).to_pylist()
    assert pq.read_table(path).column("event").cast(pa.string()).to_pylist() == want


def test_bounds_for_numbers_and_times_not_for_names(tmp_path: Path) -> None:
    """A row group's min and max are kept where a reader can skip on them
    (times, ids), not for the dictionary-encoded names."""
    batch = pa.record_batch({"time": pa.array(range(100, 200), pa.int64()), "event": _names(100)})
    path = tmp_path / "s.parquet"
    write_parquet(path, batch.schema, [batch])
    group = pq.ParquetFile(path).metadata.row_group(0)
    stats = group.column(0).statistics
    assert stats is not None and (stats.min, stats.max) == (100, 199)
    names = group.column(1).statistics
    assert names is None or not names.has_min_max


def test_a_narrow_dictionarys_type_is_kept(tmp_path: Path) -> None:
    """A query's result may index its dictionary with int8 (DuckDB's enums):
    the distinct values keep that index type, as the file's schema says."""
    names = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 1, None], pa.int8()), pa.array(["a", "b", "a"]))
    batch = pa.record_batch({"state": names})
    path = tmp_path / "n.parquet"
    write_parquet(path, batch.schema, [batch])
    assert pq.read_table(path).column("state").to_pylist() == ["a", "b", "a", "b", None]
    table = pa.table({"state": pa.chunked_array([names, names])})  # a query's result: a table of chunks
    with ParquetFile(tmp_path / "t.parquet", table.schema) as out:
        out.write(table)
        out.commit()
    assert pq.read_table(tmp_path / "t.parquet").column("state").to_pylist() == ["a", "b", "a", "b", None] * 2


# The id columns of few distinct values (capture, generation, goroutine, P, M, stacks) are
# dictionary-encoded: cheaper to write than plain values and zstd, and smaller; other numbers
# (arguments) stay plain.
def test_ids_are_dictionary_encoded_and_every_reader_reads_them_back(tmp_path: Path) -> None:
    batch = pa.record_batch(
        {
            "capture": pa.array([-(2**63)] * N, pa.int64()),
            "generation": pa.array([11] * N, pa.int64()),
            "goroutine": pa.array([i % 13 - 1 for i in range(N)], pa.int64()),
            "stack_id": pa.array([None if i % 4 else 2**62 + i % 7 for i in range(N)], pa.int64()),
            "arg0": pa.array([i * 2**40 for i in range(N)], pa.uint64()),
        }
    )
    path = tmp_path / "ids.parquet"
    encodings = written(path, batch)
    for name in ("capture", "generation", "goroutine", "stack_id"):
        assert "RLE_DICTIONARY" in encodings[name], (name, encodings[name])
    assert "RLE_DICTIONARY" not in encodings["arg0"]

    want = pa.Table.from_batches([batch])
    assert read_back(path, want).cast(want.schema).equals(want)
