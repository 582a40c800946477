"""The lake's closed days compacted (livetrace/_agent/compact.py): a
partition's small files become one, with every row once; an entry sent
again after its day was compacted is not stored twice; a file the sink
writes while a partition is merged is kept; a compaction that fails leaves
the partition as it was."""

from __future__ import annotations

import datetime as dt
import io
import os
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import duckdb
import pytest
import trio

from livetrace._agent.agent import Agent
from livetrace._agent.compact import STAGING, compact_lake, compact_partition
from livetrace._agent.config import load_config
from livetrace._agent.fleet import lake_connection
from livetrace._agent.policies import to_table
from livetrace._agent.rows import TABLES
from livetrace._agent.sinks import LakeSink
from livetrace._agent.spool import Spool
from livetrace._cli.main import main

from .test_agent_sql import summary

pytestmark = [pytest.mark.once, pytest.mark.usefixtures("agent_umask")]

TODAY = dt.datetime.now(dt.UTC).date()
DAY = 86_400 * 1_000_000  # µs, the rows' time


def send(tmp_path: Path, sink: LakeSink, gens: range, days_ago: int) -> list[tuple[str, Any]]:
    """An entry per generation, into the lake; the entries' keys and tables."""
    spool = Spool(tmp_path / "spool", 1 << 24, "h1")
    sent = []
    for gen in gens:
        row = summary("api", 1000 + gen, gen)
        row["time"] -= days_ago * DAY
        entry = spool.put("summaries", to_table("summaries", [row]))
        assert entry is not None
        table = spool.read(entry)
        sink.send("summaries", table, entry.key)
        sent.append((entry.key, table))
    return sent


def partition(lake: Path, days_ago: int) -> Path:
    return lake / "summaries" / "service=api" / f"date={TODAY - dt.timedelta(days=days_ago)}"


def generations(lake: Path) -> list[tuple[str, int]]:
    con: duckdb.DuckDBPyConnection = lake_connection(lake)
    rows = con.execute("SELECT CAST(date AS VARCHAR), first_generation FROM summaries ORDER BY 1, 2").fetchall()
    return [(d, g) for d, g in rows]


def test_a_closed_days_files_become_one_and_today_is_left(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    sink = LakeSink(str(lake))
    send(tmp_path, sink, range(1, 6), days_ago=1)
    send(tmp_path, sink, range(6, 8), days_ago=0)
    before = generations(lake)
    assert len(os.listdir(partition(lake, 1))) == 5

    done = compact_lake(lake, TABLES)
    assert (done.partitions, done.files, done.rows, done.skipped) == (1, 5, 5, [])
    (merged,) = os.listdir(partition(lake, 1))
    assert merged.startswith("compacted-") and merged.endswith(".parquet")
    assert os.stat(partition(lake, 1) / merged).st_mode & 0o777 == 0o600
    assert len(os.listdir(partition(lake, 0))) == 2  # today's day is not over
    assert generations(lake) == before
    assert not list((lake / STAGING).iterdir())
    assert compact_lake(lake, TABLES).partitions == 0  # one file already


def test_an_entry_sent_again_after_compaction_is_stored_once_and_a_late_one_is_merged_next(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    sink = LakeSink(str(lake))
    sent = send(tmp_path, sink, range(1, 4), days_ago=1)
    compact_lake(lake, TABLES)
    before = generations(lake)
    key, table = sent[1]
    sink.send("summaries", table, key)  # a resend, as after a restart with the spool's entry unacknowledged
    assert generations(lake) == before
    send(tmp_path, sink, range(9, 10), days_ago=1)  # a late row of that day
    assert len(os.listdir(partition(lake, 1))) == 2
    assert compact_lake(lake, TABLES).files == 2
    assert len(os.listdir(partition(lake, 1))) == 1
    assert generations(lake) == sorted([*before, (before[0][0], 9)])
    sink.send("summaries", table, key)  # its key is in the newer compacted file too
    assert len(generations(lake)) == 4


def test_a_file_written_during_the_merge_is_kept(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    sink = LakeSink(str(lake))
    send(tmp_path, sink, range(1, 4), days_ago=1)

    def late() -> None:
        send(tmp_path, sink, range(7, 8), days_ago=1)

    files, rows = compact_partition(lake, partition(lake, 1), late)
    assert (files, rows) == (3, 3)
    names = sorted(os.listdir(partition(lake, 1)))
    assert len(names) == 2 and names[1].startswith("compacted-")  # the late file, moved in, and the merge
    assert [g for _, g in generations(lake)] == [1, 2, 3, 7]


def test_a_compaction_that_fails_leaves_the_partition_as_it_was(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    sink = LakeSink(str(lake))
    send(tmp_path, sink, range(1, 4), days_ago=1)
    names = sorted(os.listdir(partition(lake, 1)))

    def fail() -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        compact_partition(lake, partition(lake, 1), fail)
    assert sorted(os.listdir(partition(lake, 1))) == names
    assert not list((lake / STAGING).iterdir())
    assert [g for _, g in generations(lake)] == [1, 2, 3]


def test_the_command_compacts_and_says_what_it_did(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = tmp_path / "agent.toml"
    config.write_text(f'[agent]\nstate_dir = "{state}"\n\n[[target]]\npolicy = "continuous"\n')
    os.makedirs(state, mode=0o700)
    lake = state / "lake"
    send(tmp_path, LakeSink(str(lake)), range(1, 4), days_ago=2)
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["agent", str(config), "--compact"]) == 0
    assert "1 partition of closed days compacted, 3 files into 1, 3 rows" in out.getvalue()
    assert len(os.listdir(partition(lake, 2))) == 1


@pytest.mark.slow  # the agent runs for 1.5 s of real time
def test_a_running_agent_compacts_at_start_and_records_it(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = tmp_path / "agent.toml"
    # a target no process matches: the agent only ships its own records
    config.write_text(
        f'[agent]\nstate_dir = "{state}"\n\n[[target]]\nexecutable = "no-such-program-here"\npolicy = "continuous"\n'
    )
    os.makedirs(state, mode=0o700)
    lake = state / "lake"
    send(tmp_path, LakeSink(str(lake)), range(1, 4), days_ago=1)
    agent = Agent(load_config(config), io.StringIO())
    trio.run(lambda: agent.run(duration=1.5))
    assert len(os.listdir(partition(lake, 1))) == 1
    con = lake_connection(lake)
    logged = con.execute("SELECT count, detail FROM agent_log WHERE event = 'lake_compacted'").fetchall()
    assert logged == [(3, "1 partition of closed days: 3 files into 1, 3 rows")]
