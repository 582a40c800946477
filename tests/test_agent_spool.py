"""The agent's spool and shipper, on real files: rows wait on disk while a
sink is down and go in order when it is back; past the cap the oldest are
dropped and counted; a new spool (a restarted agent) finds what the last
one held; a resend stores nothing twice."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from livetrace._agent.policies import to_table
from livetrace._agent.ship import Shipper
from livetrace._agent.sinks import LakeSink, lake_glob
from livetrace._agent.spool import Spool

pytestmark = [pytest.mark.once, pytest.mark.usefixtures("agent_umask")]


def log_rows(*counts: int) -> pa.Table:
    rows: list[dict[str, Any]] = [
        {
            "key": "",
            "time": 1_790_000_000_000_000 + c,
            "host": "h",
            "service": "svc/a=b",
            "pid": 1,
            "go_version": "go1.26.6",
            "policy": "continuous",
            "labels": "{}",
            "event": "test",
            "count": c,
            "detail": "",
        }
        for c in counts
    ]
    return to_table("agent_log", rows)


def lake_counts(root: Path) -> list[int]:
    query = f"select count from read_parquet('{lake_glob(root, 'agent_log')}', hive_partitioning=true) order by key"
    return [r[0] for r in duckdb.connect().execute(query).fetchall()]


def test_entries_are_private_ordered_and_found_again(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool", 1 << 20, "h")
    first = spool.put("agent_log", log_rows(1, 2))
    second = spool.put("agent_log", log_rows(3))
    assert first is not None and second is not None and first.key < second.key
    assert stat.S_IMODE(os.stat(tmp_path / "spool").st_mode) == 0o700
    for p in (tmp_path / "spool").iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o600
    (tmp_path / "spool" / f".{first.name}.0123.part").write_bytes(b"half")  # a write cut short
    again = Spool(tmp_path / "spool", 1 << 20, "h")
    assert again.entries() == [first, second]
    assert sorted(p.name for p in (tmp_path / "spool").iterdir()) == [first.name, second.name]
    rows = again.read(first)
    assert rows is not None and rows.column("key").to_pylist() == [f"h:{first.key}:000000", f"h:{first.key}:000001"]
    third = again.put("agent_log", log_rows(4))
    assert third is not None and third.key > second.key  # keys stay unique and ordered across restarts


def test_past_the_cap_the_oldest_are_dropped_and_counted(tmp_path: Path) -> None:
    one = Spool(tmp_path / "probe", 1 << 20, "h").put("agent_log", log_rows(0))
    assert one is not None
    spool = Spool(tmp_path / "spool", one.size * 3 + one.size // 2, "h")
    for i in range(5):
        spool.put("agent_log", log_rows(i))
    assert [e.rows for e in spool.entries()] == [1, 1, 1]
    assert spool.dropped == {"agent_log": 2}
    kept = [spool.read(e) for e in spool.entries()]
    assert [t.column("count")[0].as_py() for t in kept if t is not None] == [2, 3, 4]
    assert spool.unrecorded() == {"agent_log": 2}
    spool.recorded(spool.unrecorded())
    assert not spool.unrecorded() and spool.dropped == {"agent_log": 2}


async def test_a_sink_down_keeps_the_rows_and_gets_them_in_order_when_back(tmp_path: Path) -> None:
    notes: list[tuple[str, str]] = []
    spool = Spool(tmp_path / "spool", 1 << 20, "h")
    lake = tmp_path / "lake"
    lake.write_text("not a directory: the lake's disk is not there")
    shipper = Shipper(spool, [LakeSink(str(lake))], lambda event, n, detail: notes.append((event, detail)))
    for i in range(3):
        spool.put("agent_log", log_rows(i))
        assert await shipper.flush() == i + 1  # kept
    assert [n[0] for n in notes] == ["sink_down"] and str(lake) in notes[0][1]
    lake.unlink()
    spool.put("agent_log", log_rows(3))
    assert await shipper.flush() == 0
    assert [n[0] for n in notes] == ["sink_down", "sink_back"]
    assert lake_counts(lake) == [0, 1, 2, 3]
    for p in lake.rglob("*"):
        assert stat.S_IMODE(p.stat().st_mode) == (0o700 if p.is_dir() else 0o600)
    assert [p.name for p in (lake / "agent_log").iterdir()] == ["service=svc%2Fa%3Db"]


async def test_an_entry_sent_twice_is_stored_once(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool", 1 << 20, "h")
    lake = tmp_path / "lake"
    entry = spool.put("agent_log", log_rows(7, 8))
    assert entry is not None
    rows = spool.read(entry)
    sink = LakeSink(str(lake))
    sink.send("agent_log", rows, entry.key)
    # The agent was killed before it removed the entry: the next one sends it again.
    assert await Shipper(Spool(tmp_path / "spool", 1 << 20, "h"), [sink], lambda *a: None).flush() == 0
    assert lake_counts(lake) == [7, 8]
