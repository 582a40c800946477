"""``livetrace sql`` and ``export --to parquet`` against the demo service,
live, built with Go 1.26 (a modern trace, a file per generation) and 1.21
(a legacy trace: whole, or in segments), as a user runs them; each session
recorded alongside (--record), and what the command saw compared with the
tables of the recording, which tests/test_tables.py checks against Go."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
import trio

import livetrace
from livetrace._tables.schema import SCHEMA_VERSION, TABLE_NAMES

from .conftest import cli, demo
from .test_flight_dumps import tmpfs

pytestmark = [pytest.mark.slow, pytest.mark.once]

VERSIONS = ["1.26", "1.21"]
COUNTS = ", ".join(f"(SELECT count(*) FROM {t}) AS {t}" for t in TABLE_NAMES)


async def finish(p: subprocess.Popen[str], seconds: float = 120) -> tuple[str, str]:
    deadline = time.monotonic() + seconds
    while p.poll() is None and time.monotonic() < deadline:
        await trio.sleep(0.1)
    out, err = p.communicate(timeout=10)
    assert p.returncode == 0, err
    return out, err


def recorded(directory: Path, stem: str) -> list[Path]:
    """A recording's files: FILE, then FILE.2, FILE.3 (a legacy session's segments)."""
    return sorted(directory.glob(f"{stem}*.trace"))


@pytest.mark.parametrize("version", VERSIONS)
async def test_live_sql_sees_what_was_recorded(tmp_path: Path, version: str) -> None:
    rec = tmp_path / "live.trace"
    async with demo(version, args=["-workers", "1"]) as d:
        p = cli(
            "sql", d.trace_address, "--duration", "2", "--record", str(rec), "--format", "csv",
            "-c", f"SELECT {COUNTS}",
            "-c", "SELECT source, service, pid, go_version FROM captures",
            "-c", "SELECT count(*) AS groups FROM sched_latency",
        )  # fmt: skip
        out, err = await finish(p)
    counts_line, _, rest = out.split("\n", 2)[1], None, out.split("\n", 2)[2]
    got = dict(zip(TABLE_NAMES, map(int, counts_line.split(",")), strict=True))
    want = livetrace.tables(recorded(tmp_path, "live"))
    assert got == {t: want[t].num_rows for t in TABLE_NAMES}
    assert got["events"] > 1000 and got["goroutine_states"] and got["captures"] == 1
    capture = rest.splitlines()[1].split(",")
    assert (
        capture[0] == '"helper"' and capture[1].startswith('"livetrace-demo') and capture[3].startswith(f'"go{version}')
    )
    assert int(rest.splitlines()[3]) > 0  # sched_latency has goroutine groups
    assert "livetrace: reading " in err and "recorded " in err


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_live_parquet_dataset_reads_back_as_the_recording(tmp_path: Path, version: str) -> None:
    out, rec = tmp_path / "ds", tmp_path / "live.trace"
    async with demo(version, args=["-workers", "1"]) as d:
        # Go 1.21: segments of 1 s, each a capture (and a file of the recording) of its own.
        p = cli(
            "export", d.trace_address, "--duration", "3", "--to", "parquet", "-o", str(out), "--record", str(rec),
            "--segment", "1",
        )  # fmt: skip
        _, err = await finish(p)
    assert "livetrace: exporting " in err and f"wrote {out}: " in err
    want = livetrace.tables(recorded(tmp_path, "live"))
    got = {t: duckdb.execute(f"SELECT count(*) FROM '{out}/{t}/**/*.parquet'").fetchall()[0][0] for t in TABLE_NAMES}
    assert got == {t: want[t].num_rows for t in TABLE_NAMES}
    files = sorted(out.glob("events/service=livetrace-demo*/date=*/*.parquet"))
    assert len(files) >= 2  # rolling: a file per generation (segment)
    assert all(pq.read_schema(f).metadata[b"livetrace.schema_version"] == str(SCHEMA_VERSION).encode() for f in files)
    assert not [f for f in out.rglob("*") if f.name.startswith(".")]  # no temporary file left
    same_q = "SELECT state, count(*), sum(duration) FROM {} GROUP BY ALL ORDER BY 1"
    from_files = livetrace.sql(recorded(tmp_path, "live")).execute(same_q.format("goroutine_states")).fetchall()
    assert duckdb.execute(same_q.format(f"'{out}/goroutine_states/**/*.parquet'")).fetchall() == from_files


async def test_live_sql_over_pprof_windows(tmp_path: Path) -> None:
    """A service with net/http/pprof only: each /debug/pprof/trace window is a capture of its own."""
    rec = tmp_path / "win.trace"
    async with demo("1.26", args=["-workers", "1"]) as d:
        p = cli(
            "sql", d.http, "--duration", "2", "--record", str(rec), "--format", "csv",
            "-c", f"SELECT {COUNTS}",
            "-c", "SELECT DISTINCT source FROM captures",
        )  # fmt: skip
        out, _ = await finish(p)
    lines = out.splitlines()
    got = dict(zip(TABLE_NAMES, map(int, lines[1].split(",")), strict=True))
    want = livetrace.tables(recorded(tmp_path, "win"))
    assert got == {t: want[t].num_rows for t in TABLE_NAMES} and got["events"] > 0
    assert lines[2:] == ['"source"', '"pprof window"']


async def test_a_live_export_onto_a_full_disk_stops_with_one_line_and_no_partial_file(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "3m") as disk:
        out = disk / "ds"
        async with demo("1.26", args=["-workers", "1"]) as d:
            p = cli("export", d.trace_address, "--duration", "20", "--to", "parquet", "-o", str(out))
            deadline = time.monotonic() + 120
            while p.poll() is None and time.monotonic() < deadline:
                await trio.sleep(0.1)
            _, err = p.communicate(timeout=10)
        assert p.returncode == 2, err
        last = err.splitlines()[-1]
        assert re.fullmatch(
            rf"livetrace: error: cannot write {re.escape(str(out))}/\w+/service=[^/]+/date=[\d-]+/[^/]+\.parquet: "
            r"No space left on device: the disk is full; nothing was saved there",
            last,
        ), err
        left = [f for f in out.rglob("*") if f.is_file()]
        assert not [f for f in left if f.name.startswith(".")]  # no temporary file left behind
        for f in left:  # and every file there is whole
            assert pq.read_metadata(f).num_rows >= 0
