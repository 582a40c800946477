"""``livetrace sql`` and ``export --to parquet`` against the demo service,
live, built with Go 1.26 (a modern trace, a file per generation) and 1.21
(a legacy trace: whole, or in segments), as a user runs them; each session
recorded alongside (--record), and what the command saw compared with the
tables of the recording, which tests/test_tables.py checks against Go."""

from __future__ import annotations

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
