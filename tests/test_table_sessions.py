"""The captures of one session (a live legacy session's segments, a
net/http/pprof session's windows, a file's traces) say so in
``captures.session``, and the goroutines view names a goroutine a capture
leaves unnamed by what an earlier capture of its session said, as ``top``
does (tests/tabletop.py checks the view against a live top)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import trio

import livetrace
from livetrace._cli.main import main
from livetrace._cli.sql import dataset_connection
from livetrace._tables.live import session_tables

from .conftest import demo
from .test_tables import LEGACY

# Two Go 1.21 traces as two segments of one session: the second began
# after goroutines 1 (main), 3 (bgsweep) and 4 (bgscavenge) did, which ran
# in it without recording a stack; the first names them. (These are every
# Go program's first goroutines, so the two traces agree on them as the
# segments of one process would.)
FIRST, SECOND = LEGACY / "http_1_21_good", LEGACY / "user_task_region_1_21_good"
NAMED = {1: "main.main", 3: "runtime.bgsweep", 4: "runtime.bgscavenge"}
UNNAMED = dict.fromkeys(NAMED, "")
NAMES = "SELECT goroutine, start_function FROM goroutines WHERE capture = ? AND goroutine IN (1, 3, 4) ORDER BY ALL"


def _rows(jsonl: str) -> list[tuple[int, str]]:
    return [(r["trace_index"], r["start_function"]) for r in map(json.loads, jsonl.splitlines())]


def _two_segments(tmp_path: Path) -> Path:
    path = tmp_path / "segments.trace"
    path.write_bytes(FIRST.read_bytes() + SECOND.read_bytes())
    return path


def test_a_goroutine_unnamed_in_a_segment_keeps_the_name_an_earlier_one_gave_it(tmp_path: Path) -> None:
    path = _two_segments(tmp_path)
    captures = livetrace.tables(path)["captures"].to_pylist()
    first, second = captures
    assert first["session"] == second["session"] == first["capture"] != second["capture"]
    assert [c["trace_index"] for c in captures] == [0, 1]
    con = livetrace.sql(path)
    assert dict(con.execute(NAMES, [first["capture"]]).fetchall()) == NAMED
    assert dict(con.execute(NAMES, [second["capture"]]).fetchall()) == NAMED
    # A goroutine neither capture names stays unnamed; its session says nothing of it.
    assert con.execute("SELECT DISTINCT start_function FROM goroutines WHERE goroutine = 2").fetchall() == [("",)]
    # The second alone, and the two as two files (two sessions), leave them unnamed.
    alone = livetrace.sql(SECOND)
    assert (
        dict(alone.execute("SELECT goroutine, start_function FROM goroutines WHERE goroutine IN (1, 3, 4)").fetchall())
        == UNNAMED
    )
    apart = livetrace.sql([FIRST, SECOND])
    sessions = apart.execute("SELECT session FROM captures ORDER BY trace_index, capture").fetchall()
    assert len(set(sessions)) == 2
    last = apart.execute("SELECT capture FROM captures WHERE name = ?", [str(SECOND)]).fetchall()[0][0]
    assert dict(apart.execute(NAMES, [last]).fetchall()) == UNNAMED


def test_files_read_as_one_session_are_its_captures_in_order() -> None:
    """A recording's files (a file per legacy segment): one session's with one_session."""
    tables = livetrace.tables([FIRST, SECOND], one_session=True)
    first, second = tables["captures"].to_pylist()
    assert first["session"] == second["session"] == first["capture"]
    assert (first["trace_index"], second["trace_index"]) == (0, 1)
    # Each file's capture is the one it is read alone.
    assert second["capture"] == livetrace.tables(SECOND)["captures"]["capture"][0].as_py()
    con = livetrace.sql([FIRST, SECOND], one_session=True)
    assert dict(con.execute(NAMES, [second["capture"]]).fetchall()) == NAMED


@pytest.mark.once
def test_sql_reads_a_recordings_files_as_one_session_in_its_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--record rec.trace` writes rec.trace, rec.2.trace, ...: a glob's name
    order puts rec.2.trace first, the recording's order last."""
    (tmp_path / "rec.trace").write_bytes(FIRST.read_bytes())
    (tmp_path / "rec.2.trace").write_bytes(SECOND.read_bytes())
    query = (
        "SELECT c.trace_index, g.start_function FROM goroutines g JOIN captures c USING (capture) "
        "WHERE g.goroutine = 1 ORDER BY ALL"
    )
    pattern = str(tmp_path / "rec*.trace")
    assert main(["sql", "--one-session", pattern, "-c", query, "--format", "jsonl"]) == 0
    assert _rows(capsys.readouterr().out) == [(0, "main.main"), (1, "main.main")]
    assert main(["sql", pattern, "-c", query, "--format", "jsonl"]) == 0
    assert _rows(capsys.readouterr().out) == [(0, ""), (0, "main.main")]
    assert main(["sql", "--one-session", "pid:1", "-c", "SELECT 1"]) != 0
    assert "--one-session reads trace files as one session's: give the files" in capsys.readouterr().err


@pytest.mark.once
def test_a_dataset_written_before_captures_had_a_session_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Schema version 2's captures have no session: each capture is its
    own, and the views answer as they did."""
    path = _two_segments(tmp_path)
    out = tmp_path / "ds"
    assert main(["export", str(path), "--to", "parquet", "-o", str(out)]) == 0, capsys.readouterr().err
    con = dataset_connection([out])
    [(second,)] = con.execute("SELECT capture FROM captures WHERE trace_index = 1").fetchall()
    assert dict(con.execute(NAMES, [second]).fetchall()) == NAMED
    for f in (out / "captures").rglob("*.parquet"):
        t = pq.read_table(f, partitioning=None)
        pq.write_table(t.drop_columns(["session"]), f)
    older = dataset_connection([out])
    assert older.execute("SELECT count(*) FROM captures WHERE session IS NULL").fetchall() == [(2,)]
    assert dict(older.execute(NAMES, [second]).fetchall()) == UNNAMED


@pytest.mark.slow
@pytest.mark.once  # the session's plumbing: the view's rule is checked above
def test_a_live_legacy_sessions_segments_are_one_session() -> None:
    async def run() -> list[dict[str, object]]:
        async with demo("1.21", args=["-workers", "1"]) as d:
            async with livetrace.connect(d.trace_address, duration=2.5, segment=1) as session:
                tables = await session_tables(session)
        return sorted(tables["captures"].to_pylist(), key=lambda c: c["trace_index"])

    captures = trio.run(run)
    assert len(captures) > 1
    assert [c["trace_index"] for c in captures] == list(range(len(captures)))
    assert {c["session"] for c in captures} == {captures[0]["capture"]}
    assert len({c["capture"] for c in captures}) == len(captures)
