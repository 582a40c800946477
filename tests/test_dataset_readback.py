"""Every table of an exported dataset (``livetrace export --to parquet``)
reads back in DuckDB, Polars and pyarrow with every column's values as
``livetrace.tables`` gives them: the writer's per-column encodings
(livetrace/_dataset.py: dictionaries, deltas) and its
statistics must never change a value that a reader sees."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import livetrace
from livetrace._cli.main import main
from livetrace._dataset import write_parquet
from livetrace._tables.schema import TABLE_NAMES

from .conftest import ROOT

pytestmark = pytest.mark.once  # the same files whichever core decodes

CORPUS = ROOT / "tests" / "corpus"
TRACES = [CORPUS / "runtime" / "go126-generations.trace", CORPUS / "legacy" / "go-testdata" / "http_1_19_good"]


def plain(table: pa.Table) -> pa.Table:
    """The values as every reader can give them: names as strings (DuckDB
    and Polars read a dictionary as its values), no metadata."""
    fields = [pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type) for f in table.schema]
    return table.cast(pa.schema(fields))


def only_file(root: Path, table: str) -> Path:
    [path] = root.glob(f"{table}/*/*/*.parquet")
    return path


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_every_column_reads_back_as_written(tmp_path: Path, trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ds"
    assert main(["export", str(trace), "--to", "parquet", "-o", str(out)]) == 0, capsys.readouterr().err
    want = livetrace.tables(trace)
    for name in TABLE_NAMES:
        expected = want[name]
        path = only_file(out, name)
        back = pq.read_table(path)
        assert back.schema.equals(expected.schema), name  # pyarrow: the very types (dictionaries stay so)
        expected = plain(expected)
        assert plain(back).equals(expected), name  # (a dictionary's order may differ: its values do not)
        if not expected.num_rows:
            continue
        columns = ", ".join(f'"{c}"' for c in expected.column_names)
        got = duckdb.connect().sql(f"SELECT {columns} FROM read_parquet('{path}', hive_partitioning = false)")
        assert got.to_arrow_table().cast(expected.schema).equals(expected), name
        frame = pl.read_parquet(path, hive_partitioning=False)
        assert frame.to_arrow().cast(expected.schema).equals(expected), name


def test_no_encoding_older_readers_lack(tmp_path: Path) -> None:
    """Integers as byte streams (Parquet 2.11) would be smaller and cheaper
    to write, but Spark 3.5 and DuckDB before 2026 cannot read them: no
    column of an exported dataset is written so, and the extremes of each
    type, and nulls, read back exactly in the columns that were."""
    n = 4099  # not a multiple of any page's or batch's count
    signed = [None if i % 97 == 0 else (-1) ** i * (1 << (i % 63)) - (i % 2) for i in range(n)]
    signed[1:3] = [-(2**63), 2**63 - 1]
    unsigned = [(1 << (i % 65)) - 1 for i in range(n)]
    unsigned[1] = 2**64 - 1
    batch = pa.record_batch(
        {
            "start": pa.array(signed, pa.int64()),
            "duration": pa.array([abs(v or 0) % 2**40 for v in signed], pa.int64()),
            "arg0": pa.array(unsigned, pa.uint64()),
            "extra1": pa.array([(v or 0) % 2**64 for v in signed], pa.uint64()),
            "value": pa.array([v if v is None else v % 2**31 for v in signed], pa.int32()),
        }
    )
    path = tmp_path / "b.parquet"
    write_parquet(path, batch.schema, [batch])
    meta = pq.ParquetFile(path).metadata.row_group(0)
    for i in range(meta.num_columns):
        assert "BYTE_STREAM_SPLIT" not in meta.column(i).encodings, meta.column(i)
    want = pa.Table.from_batches([batch])
    assert pq.read_table(path).equals(want)
    assert duckdb.connect().sql(f"SELECT * FROM read_parquet('{path}')").to_arrow_table().cast(want.schema).equals(want)
    assert pl.read_parquet(path).to_arrow().cast(want.schema).equals(want)


def test_bounds_for_the_columns_queries_filter_on(tmp_path: Path) -> None:
    """Times and ids keep a row group's min and max (a reader skips on
    them); the events' arguments and the flags, which no query skips on,
    carry none."""
    n = 100
    batch = pa.record_batch(
        {
            "time": pa.array(range(100, 100 + n), pa.int64()),
            "goroutine": pa.array(range(n), pa.int64()),
            "start": pa.array(range(n, 0, -1), pa.int64()),
            "arg0": pa.array(range(n), pa.uint64()),
            "clipped_end": pa.array([i % 2 == 0 for i in range(n)]),
        }
    )
    path = tmp_path / "s.parquet"
    write_parquet(path, batch.schema, [batch])
    group = pq.ParquetFile(path).metadata.row_group(0)
    bounds = {}
    for i in range(group.num_columns):
        stats = group.column(i).statistics
        bounds[group.column(i).path_in_schema] = (stats.min, stats.max) if stats and stats.has_min_max else None
    assert bounds == {"time": (100, 199), "goroutine": (0, 99), "start": (1, 100), "arg0": None, "clipped_end": None}


def test_a_querys_columns_of_other_types_under_our_names(tmp_path: Path) -> None:
    """``livetrace sql -o FILE.parquet`` writes a query's result through the
    same writer: a column that has a table's name and another type (a
    small integer, a timestamp in seconds, a float, a date, a string) is
    written and read back as it was."""
    import datetime as dt

    batch = pa.record_batch(
        {
            "start": pa.array([3, -1, None, 127], pa.int8()),
            "duration": pa.array([0.5, None, 2.25, -1.0], pa.float64()),
            "time": pa.array([0, 1, 2, None], pa.timestamp("s")),
            "end": pa.array([dt.date(2026, 11, 27)] * 4, pa.date32()),
            "arg0": pa.array(["a", "b", None, "a"]),
            "value": pa.array([1, 2, 3, 2**31 - 1], pa.uint32()),
        }
    )
    path = tmp_path / "q.parquet"
    write_parquet(path, batch.schema, [batch])
    want = pa.Table.from_batches([batch])
    assert pq.read_table(path).cast(want.schema).equals(want)  # (seconds come back as ms: Parquet has no seconds)
    assert duckdb.connect().sql(f"SELECT * FROM read_parquet('{path}')").to_arrow_table().cast(want.schema).equals(want)
    assert pl.read_parquet(path).to_arrow().cast(want.schema).equals(want)
