"""Names a peer chose (a service's, an executable's) as file and directory
names (``_outfile.plain_name``): one plain name each, whatever the text,
never longer than a file system takes, and read back by the lake's readers
as the text it was (cut, for a very long one, with a hash that keeps two
long names apart)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from livetrace._agent.sinks import LakeSink
from livetrace._dataset import ParquetDataset, partition_dirs
from livetrace._outfile import PLAIN_NAME_BYTES, plain_name
from tests.test_agent_spool import log_rows

pytestmark = pytest.mark.once  # names and files: no decoder runs

LONG_CJK = "服务" * 50  # 100 characters, 300 bytes of UTF-8, 900 percent-encoded


@pytest.mark.parametrize(
    "name", [".", "..", "../../etc/x", ".hidden", "a/b", "x\x00y", "\udcff\udcfe", "~", "a~0123456789abcdef", ""]
)
def test_a_hostile_name_is_one_plain_name(name: str) -> None:
    plain = plain_name(name)
    assert "/" not in plain and "\x00" not in plain and not plain.startswith(".")
    assert (plain.isascii() and plain not in ("", ".", "..")) or name == ""
    assert "~" not in plain  # the mark of a name cut: never in one whole


@pytest.mark.parametrize(
    "name", [LONG_CJK, "a" * 1000, "\U0001f600" * 100, "." + "é" * 200], ids=["cjk", "ascii", "astral", "dot"]
)
def test_a_long_name_is_cut_between_characters_and_keeps_a_hash(name: str) -> None:
    plain = plain_name(name)
    assert len(plain.encode()) <= PLAIN_NAME_BYTES
    kept, _, digest = plain.rpartition("~")
    assert len(digest) == 16 and name.startswith(unquote(kept, errors="strict"))
    assert plain_name(name[:-1] + "x") != plain  # alike to the cut, still two names
    assert plain_name(name, 60) != plain and len(plain_name(name, 60)) <= 60


def test_a_partition_of_a_long_cjk_service_is_a_directory_and_reads_back(tmp_path: Path) -> None:
    other = LONG_CJK[:-1] + "器"
    with ParquetDataset(tmp_path / "ds", schema_version="1") as d:
        for service in (LONG_CJK, other):
            d.write("events", [("service", service), ("date", "2026-11-27")], "c", pa.record_batch({"n": [1]}))
    dirs = list((tmp_path / "ds" / "events").iterdir())
    assert len(dirs) == 2 and all(len(p.name.encode()) <= 255 for p in dirs)
    read = ds.dataset(tmp_path / "ds" / "events", format="parquet", partitioning="hive").to_table()
    services = sorted(read.column("service").to_pylist())
    assert len(set(services)) == 2 and all(s.startswith(LONG_CJK[:20]) for s in services)
    glob = str(tmp_path / "ds" / "events" / "**" / "*.parquet")
    assert sorted(r[0] for r in duckdb.execute(f"select service from read_parquet('{glob}')").fetchall()) == services
    assert partition_dirs([("service", "api")]) == ["service=api"]


def test_the_lake_takes_rows_of_a_long_cjk_service(tmp_path: Path) -> None:
    rows = log_rows(1).set_column(3, "service", pa.array([LONG_CJK], pa.string()))
    LakeSink(str(tmp_path / "lake")).send("agent_log", rows, "00000000000000000001-000001")
    assert len(list((tmp_path / "lake").rglob("*.parquet"))) == 1
