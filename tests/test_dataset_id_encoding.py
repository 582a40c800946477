"""The Parquet writer (livetrace/_dataset.py) dictionary-encodes the id
columns of few distinct values (capture, generation, goroutine, P, M,
stacks): cheaper to write than plain values and zstd, and smaller; DuckDB,
Polars and pyarrow read them back as the integers they were. Other numbers
(arguments) stay plain."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from livetrace._dataset import write_parquet

pytestmark = pytest.mark.once  # files: no decoder runs

N = 5000


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
    write_parquet(path, batch.schema, [batch])
    meta = pq.ParquetFile(path).metadata.row_group(0)
    encodings = {meta.column(i).path_in_schema: meta.column(i).encodings for i in range(meta.num_columns)}
    for name in ("capture", "generation", "goroutine", "stack_id"):
        assert "RLE_DICTIONARY" in encodings[name], (name, encodings[name])
    assert "RLE_DICTIONARY" not in encodings["arg0"]

    want = pa.Table.from_batches([batch])
    assert pq.read_table(path).equals(want)
    assert pl.read_parquet(path).to_arrow().cast(want.schema).equals(want)
    back = duckdb.connect().sql(f"SELECT * FROM read_parquet('{path}')").to_arrow_table()
    assert back.cast(want.schema).equals(want)
