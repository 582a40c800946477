"""The fleet's tables through SQL: ``livetrace sql --lake`` and
``--clickhouse`` (an embedded chdb://) with the same views, ClickHouse's DDL,
and a resend that ClickHouse stores once."""

from __future__ import annotations

import io
import time
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from livetrace._agent.policies import to_table
from livetrace._agent.sinks import ClickHouseSink, LakeSink, clickhouse_ddl
from livetrace._agent.spool import Spool
from livetrace._cli.main import main
from livetrace._cli.sql_fleet import statements

pytestmark = [pytest.mark.once, pytest.mark.usefixtures("agent_umask")]


def summary(service: str, p99: int, gen: int) -> dict[str, Any]:
    zero = {
        f"{k}_{s}": 0 for k in ("gc", "stw", "sched", "mark_assist") for s in ("count", "p50_ns", "p99_ns", "max_ns")
    }
    return {
        **zero,
        "key": "",
        "time": time.time_ns() // 1000,
        "host": "h1",
        "service": service,
        "pid": 7,
        "go_version": "go1.26.6",
        "policy": "continuous",
        "labels": "{}",
        "first_generation": gen,
        "last_generation": gen,
        "start_ns": 0,
        "end_ns": 1,
        "events": 10,
        "heap_bytes": None,
        "heap_goal_bytes": None,
        "gomaxprocs": 4,
        "shed_generations": 0,
        "lost_batches": 0,
        "gaps": 0,
        "top_json": "{}",
        "sched_p99_ns": p99,
        "sched_count": 3,
    }


def fill(tmp_path: Path, sinks: list[Any]) -> None:
    spool = Spool(tmp_path / "spool", 1 << 20, "h1")
    rows = [summary("api", 12_000_000, 1), summary("api", 3_000_000, 2), summary("db", 1_000_000, 1)]
    entry = spool.put("summaries", to_table("summaries", rows))
    assert entry is not None
    table = spool.read(entry)
    for sink in sinks:
        sink.send("summaries", table, entry.key)
        sink.send("summaries", table, entry.key)  # a resend, as after a restart: stored once


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def sql(*args: str) -> Done:
    """livetrace sql, in this process (its imports are paid once)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["sql", *args])
    return Done(code, out.getvalue(), err.getvalue())


QUERY = "SELECT service, summaries, runnable_spans, worst_sched_p99_ns FROM fleet_sched_latency ORDER BY service"


@pytest.mark.slow  # ClickHouse's engine takes seconds to start
def test_the_lake_and_clickhouse_answer_the_same(tmp_path: Path) -> None:
    ch = ClickHouseSink(f"chdb://{tmp_path / 'ch'}")
    fill(tmp_path, [LakeSink(str(tmp_path / "lake")), ch])
    ch.close()
    on_lake = sql("--lake", str(tmp_path / "lake"), "-c", QUERY, "--format", "csv")
    on_ch = sql("--clickhouse", f"chdb://{tmp_path / 'ch'}", "-c", QUERY, "--format", "csv")
    assert on_lake.returncode == on_ch.returncode == 0, on_lake.stderr + on_ch.stderr
    rows = on_lake.stdout.splitlines()
    assert rows[1:] == ['"api",2,6,12000000', '"db",1,3,1000000']
    assert on_ch.stdout.splitlines()[1:] == rows[1:]


def test_sql_says_what_it_needs_in_one_line(tmp_path: Path) -> None:
    nothing = sql("-c", "SELECT 1")
    assert nothing.returncode == 2 and nothing.stderr.strip().endswith("or --lake / --clickhouse")
    both = sql("x.trace", "--lake", str(tmp_path), "-c", "SELECT 1")
    assert both.returncode == 2 and "give them without a SOURCE" in both.stderr
    missing = sql("--lake", str(tmp_path / "none"), "-c", "SELECT 1")
    assert missing.returncode == 2 and "is not a directory" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


def test_statements_split_outside_quotes() -> None:
    assert statements("SELECT ';' AS a; SELECT `x;y` ;\n SELECT 3;") == ["SELECT ';' AS a", "SELECT `x;y`", "SELECT 3"]


def test_the_ddl_is_mergetree_by_day_with_ttls_and_deduplicated_inserts() -> None:
    ddl = clickhouse_ddl("lt")
    assert ddl[0] == "CREATE DATABASE IF NOT EXISTS lt"
    summaries = next(s for s in ddl if "lt.summaries" in s)
    for clause in (
        "ENGINE = MergeTree",
        "PARTITION BY toDate(time)",
        "ORDER BY (service, host, time)",
        "TTL toDateTime(time) + INTERVAL 90 DAY",
        "non_replicated_deduplication_window",
        "key String,",
        "time DateTime64(6, 'UTC')",
        "heap_bytes Nullable(Int64)",
    ):
        assert clause in summaries
