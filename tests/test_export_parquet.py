"""``livetrace export --to parquet`` of trace files: a Hive-partitioned
dataset whose every table reads back in DuckDB, Polars and pyarrow with the
rows of ``livetrace.tables``; written again, it is replaced, not doubled; a
bad trace leaves nothing. The live export is tests/test_sql_live.py's."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import livetrace
from livetrace._cli.main import main
from livetrace._tables.schema import SCHEMA_VERSION, TABLE_NAMES

from .conftest import ROOT

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
    # A row group per generation (a unit with events): memory held one unit at a time.
    for t in TRACES:
        units = [u for u in livetrace.iter_tables(t) if u["events"].num_rows]
        [events_file] = out.glob(f"events/service=api/date=*/{t.name}-*.parquet")
        assert pq.ParquetFile(events_file).metadata.num_row_groups == len(units)
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


def test_sql_reads_a_dataset_as_the_traces(tmp_path: Path, traces: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ds"
    assert export(capsys, str(traces), "--to", "parquet", "-o", str(out))[0] == 0
    asked = "SELECT * FROM blocking ORDER BY total_ns DESC, stack_id"
    answers = []
    for source in (str(out), str(traces)):
        assert main(["sql", source, "-c", asked, "-c", "SELECT count(*) AS n FROM stacks", "--format", "csv"]) == 0
        answers.append(capsys.readouterr().out)
    assert answers[0] == answers[1] and answers[0].count("\n") > 3
    assert main(["sql", str(out), str(TRACES[0]), "-c", "SELECT 1"]) == 2
    assert capsys.readouterr().err.endswith(
        "a Parquet dataset is queried on its own (or with other datasets), not with traces\n"
    )
    assert export(capsys, str(out), "--to", "parquet", "-o", str(tmp_path / "again")) == (
        2,
        f"livetrace: error: {out} is a Parquet dataset already (livetrace sql reads it as it is)\n",
    )
