"""``livetrace export --to parquet`` of trace files: a Hive-partitioned
dataset whose every table reads back in DuckDB, Polars and pyarrow with the
rows of ``livetrace.tables``; written again, it is replaced, not doubled; a
bad trace leaves nothing. And the live path's units (live_tables.py) are
iter_tables' units, checked here on the items a file decodes to: the live
export itself is tests/test_sql_live.py's."""

from __future__ import annotations

import io
import itertools
import shutil
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import livetrace
from livetrace._cli.live_tables import LiveUnits
from livetrace._cli.main import main
from livetrace._files import decode_pieces
from livetrace._protocol.frames import SessionInfo
from livetrace._tables.schema import SCHEMA_VERSION, TABLE_NAMES

from .conftest import ROOT
from .test_tables import SMALL, ids

pytestmark = pytest.mark.once

LEGACY = ROOT / "tests" / "corpus" / "legacy" / "go-testdata"
TRACES = [LEGACY / "user_task_region_1_21_good", LEGACY / "http_1_19_good"]


def export(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["export", *args])
    return code, capsys.readouterr().err


def counts(root: Path) -> dict[str, int]:
    return {
        t: duckdb.execute(f"SELECT count(*) FROM read_parquet('{root}/{t}/**/*.parquet')").fetchall()[0][0]
        for t in TABLE_NAMES
    }


@pytest.fixture
def traces(tmp_path: Path) -> Path:
    d = tmp_path / "in"
    d.mkdir()
    for t in TRACES:
        shutil.copy(t, d / (t.name + ".trace"))
    return d


def test_a_directory_of_traces_as_a_dataset(tmp_path: Path, traces: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ds"
    code, err = export(capsys, str(traces), "--to", "parquet", "-o", str(out), "--service", "api")
    assert code == 0, err
    want = livetrace.tables(sorted(traces.iterdir()))
    assert counts(out) == {t: want[t].num_rows for t in TABLE_NAMES}
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert len(files) == len(TABLE_NAMES) * len(TRACES)  # a file per table per trace, nothing else
    assert {p.parts[0] for p in files} == set(TABLE_NAMES) and {p.parts[1] for p in files} == {"service=api"}
    assert all(p.parts[2].startswith("date=") and p.suffix == ".parquet" for p in files)
    assert err.endswith(f"livetrace: wrote {out}: {len(files)} files, {sum(counts(out).values()):,} rows\n")
    meta = pq.read_schema(out / files[0]).metadata
    assert meta[b"livetrace.schema_version"] == str(SCHEMA_VERSION).encode()

    # pyarrow and Polars read it as it is, partitions and all.
    events = ds.dataset(out / "events", format="parquet", partitioning="hive").to_table()
    assert events.num_rows == want["events"].num_rows and set(events.column("service").to_pylist()) == {"api"}
    frame = pl.read_parquet(out / "goroutine_states")
    assert frame.height == want["goroutine_states"].num_rows and "date" in frame.columns
    # The same question, asked of the dataset and of the tables, has the same answer.
    q = "SELECT reason, count(*) AS n, sum(duration) AS d FROM {} WHERE state = 'blocked' GROUP BY ALL ORDER BY 1"
    con = livetrace.sql(sorted(traces.iterdir()))
    assert (
        duckdb.execute(q.format(f"read_parquet('{out}/goroutine_states/**/*.parquet')")).fetchall()
        == con.execute(q.format("goroutine_states")).fetchall()
    )

    # Exported again: the same files, replaced whole, not rows twice.
    assert export(capsys, str(traces), "--to", "parquet", "-o", str(out), "--service", "api")[0] == 0
    assert counts(out) == {t: want[t].num_rows for t in TABLE_NAMES}


def test_a_bad_trace_leaves_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "cut.trace"
    bad.write_bytes(TRACES[1].read_bytes()[:5000])
    out = tmp_path / "ds"
    code, err = export(capsys, str(bad), "--to", "parquet", "-o", str(out))
    assert code == 1 and err.startswith("livetrace: error: ") and err.count("\n") == 1
    assert [p for p in out.rglob("*") if p.is_file()] == []


def test_parquet_wants_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = export(capsys, str(TRACES[0]), "--to", "parquet", "-o", "-")
    assert (code, err) == (2, "livetrace: error: --to parquet writes a directory of files: give -o DIR, not -\n")
    code, err = export(capsys, str(TRACES[0]), "--to", "perfetto", "-o", str(tmp_path / "x"), "--service", "a")
    assert (code, err) == (2, "livetrace: error: --service, --record and --segment are --to parquet's\n")


def _info() -> SessionInfo:
    return SessionInfo(
        protocol=1, helper="test", go_version="go1.21.13", goos="linux", goarch="amd64", pid=42,
        executable="/srv/api", gomaxprocs=4, start_unix_ns=1_700_000_000_000_000_000, queue_bytes=0, session=1,
    )  # fmt: skip


@pytest.mark.parametrize(("name", "data"), SMALL, ids=ids)
def test_live_units_are_iter_tables_units(name: str, data: bytes) -> None:
    units = LiveUnits("unix:/run/api.sock", _info())
    live = [
        units.build(p)
        for item in itertools.chain(decode_pieces([data]), [None])
        for p in (units.close() if item is None else units.feed(item))
    ]
    files = list(livetrace.iter_tables(io.BytesIO(data)))
    assert len(live) == len(files)
    for got, want in zip(live, files, strict=True):
        for table in TABLE_NAMES:
            if table == "captures":
                continue
            g, w = got[table], want[table]
            if "capture" in g.schema.names:  # the one column that differs: whose capture
                g, w = g.drop_columns(["capture"]), w.drop_columns(["capture"])
            assert g.to_pylist() == w.to_pylist(), (name, table)  # (a dictionary's order may differ)
    [row] = pa.Table.from_batches([u["captures"] for u in live if u["captures"].num_rows]).to_pylist()
    [file_row] = livetrace.tables(data)["captures"].to_pylist()
    assert (row["source"], row["service"], row["pid"], row["host"], row["go_version"]) == (
        "helper", "api", 42, row["host"], "go1.21.13"
    )  # fmt: skip
    assert {k: row[k] for k in ("events", "start_time", "end_time")} == {
        k: file_row[k] for k in ("events", "start_time", "end_time")
    }
