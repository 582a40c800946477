"""The Parquet dataset writer (livetrace/_dataset.py): Hive partitions that
DuckDB, Polars and pyarrow read as they are, the schema's version in every
file, files that appear whole or not at all (a crash mid-write, a full
disk), and partition directories that are never followed through a link."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from livetrace._dataset import ParquetDataset, ParquetFile, write_parquet
from livetrace._errors import OutputPathError, OutputWriteError

from .test_flight_dumps import fill, tmpfs

pytestmark = pytest.mark.once  # files and directories: no decoder runs

DAY = [("service", "api"), ("date", "2026-11-27")]
NEXT_DAY = [("service", "api"), ("date", "2026-11-28")]


def rows(n: int, start: int = 0) -> pa.RecordBatch:
    return pa.record_batch({"ts": pa.array(range(start, start + n), pa.int64()), "name": [f"g{i}" for i in range(n)]})


def visible(root: Path) -> list[str]:
    """The files a reader lists: everything but hidden names."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


def everything(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_partitions_metadata_and_three_readers(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    with ParquetDataset(root, schema_version="7") as d:
        d.write("events", DAY, "c1", rows(3))
        d.write("events", NEXT_DAY, "c1", rows(2, 100))
        d.write("tasks", DAY, "c1", pa.record_batch({"id": [1]}))
    assert visible(root) == [
        "events/service=api/date=2026-11-27/c1.parquet",
        "events/service=api/date=2026-11-28/c1.parquet",
        "tasks/service=api/date=2026-11-27/c1.parquet",
    ]
    assert everything(root) == visible(root)  # no temporary file left
    meta = pq.read_schema(root / visible(root)[0]).metadata
    assert meta[b"livetrace.schema_version"] == b"7" and meta[b"livetrace.table"] == b"events"

    glob = str(root / "events" / "**" / "*.parquet")
    got = duckdb.execute(f"select date::varchar, service, count(*) from read_parquet('{glob}') group by all order by 1")
    assert got.fetchall() == [("2026-11-27", "api", 3), ("2026-11-28", "api", 2)]
    assert duckdb.execute(
        f"select distinct value::varchar from parquet_kv_metadata('{glob}') where key = 'livetrace.schema_version'"
    ).fetchall() == [("7",)]
    table = ds.dataset(root / "events", format="parquet", partitioning="hive").to_table()
    assert sorted(table.column("ts").to_pylist()) == [0, 1, 2, 100, 101] and set(
        table.column("service").to_pylist()
    ) == {"api"}
    frame = pl.read_parquet(root / "events")
    assert frame.height == 5 and frame.filter(pl.col("date") == pl.lit("2026-11-28").str.to_date()).height == 2


def test_a_peer_chosen_value_stays_one_directory_and_reads_back(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    with ParquetDataset(root, schema_version="1") as d:
        d.write("events", [("service", "../../etc/x y"), ("date", "")], "c", rows(1))
    assert visible(root) == ["events/service=%2E.%2F..%2Fetc%2Fx%20y/date=__HIVE_DEFAULT_PARTITION__/c.parquet"]
    glob = str(root / "events" / "**" / "*.parquet")
    assert duckdb.execute(f"select service, date from read_parquet('{glob}')").fetchall() == [("../../etc/x y", None)]


def test_a_file_is_invisible_until_committed_and_replaces_whole(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    with ParquetDataset(root, schema_version="1") as d:
        d.write("events", DAY, "c", rows(5))
        out = d.open("events", DAY, "c", rows(1).schema)
        out.write(rows(2, 10))
        [temp] = [p for p in everything(root) if p not in visible(root)]
        assert Path(temp).name.startswith(".c.parquet.") and temp.endswith(".part")
        glob = str(root / "events" / "**" / "*.parquet")
        assert duckdb.execute(f"select count(*) from read_parquet('{glob}')").fetchall() == [
            (5,)
        ]  # the old file, whole
        out.write(rows(1, 20))
        path = out.commit()
    assert path == root / "events/service=api/date=2026-11-27/c.parquet"
    assert pq.read_table(path).column("ts").to_pylist() == [10, 11, 20]
    assert everything(root) == visible(root)


def test_row_groups_bound_what_is_held(tmp_path: Path) -> None:
    path = tmp_path / "x.parquet"
    with ParquetFile(path, rows(1).schema, row_group_rows=1000) as out:
        for i in range(5):
            out.write(rows(2500, i * 2500))
        out.commit()
    meta = pq.ParquetFile(path).metadata
    assert meta.num_rows == 12_500 and max(meta.row_group(i).num_rows for i in range(meta.num_row_groups)) == 1000


def test_a_crash_mid_write_leaves_no_visible_partial_file(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    with ParquetDataset(root, schema_version="1") as d:
        d.write("events", DAY, "done", rows(4))
    pid = os.fork()
    if pid == 0:  # the writer, killed with a row group on disk and no footer
        try:
            with ParquetDataset(root, schema_version="1") as d:
                blobs = pa.record_batch({"blob": [os.urandom(1 << 16) for _ in range(48)]})  # past the buffer
                out = d.open("events", DAY, "crashed", blobs.schema)
                out.write(blobs)
                os.kill(os.getpid(), signal.SIGKILL)
        finally:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert visible(root) == ["events/service=api/date=2026-11-27/done.parquet"]
    [partial] = [p for p in everything(root) if p not in visible(root)]
    assert os.path.getsize(root / partial) > 0  # it did write, under its hidden name only
    glob = str(root / "events" / "**" / "*.parquet")
    assert duckdb.execute(f"select count(*) from read_parquet('{glob}')").fetchall() == [(4,)]
    assert ds.dataset(root / "events", format="parquet", partitioning="hive").count_rows() == 4
    assert pl.scan_parquet(glob).collect().height == 4


def test_a_full_disk_is_a_typed_error_naming_the_file_and_leaves_nothing(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "1m") as disk:
        with ParquetDataset(disk / "ds", schema_version="1") as d:
            d.write("events", DAY, "kept", rows(10))
            filler = fill(disk)
            big = pa.record_batch({"blob": [os.urandom(64 * 1024) for _ in range(64)]})
            with pytest.raises(OutputWriteError) as caught:
                d.write("events", DAY, "big", big)
        want = disk / "ds/events/service=api/date=2026-11-27/big.parquet"
        assert caught.value.path == want
        assert (
            str(caught.value)
            == f"cannot write {want}: No space left on device: the disk is full; nothing was saved there"
        )
        filler.unlink()
        assert everything(disk / "ds") == ["events/service=api/date=2026-11-27/kept.parquet"]


def test_a_link_in_a_partitions_place_is_not_followed(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "ds", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "events").mkdir(parents=True)
    (root / "events" / "service=api").symlink_to(elsewhere)
    with (
        ParquetDataset(root, schema_version="1") as d,
        pytest.raises(OutputPathError, match=r"service=api: it is not a directory"),
    ):
        d.write("events", DAY, "c", rows(1))
    assert list(elsewhere.iterdir()) == []


def test_a_single_file(tmp_path: Path) -> None:
    path = tmp_path / "q.parquet"
    assert write_parquet(path, rows(1).schema, [rows(3), rows(2)]) == 5
    assert pq.read_table(path).num_rows == 5 and [p.name for p in tmp_path.iterdir()] == ["q.parquet"]
