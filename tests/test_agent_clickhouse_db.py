"""The agent's ClickHouse sink and ``livetrace sql --clickhouse`` read one
URL the same way: the database it names (or ``livetrace``) is where the
sink writes and where the query looks."""

from __future__ import annotations

from pathlib import Path

import pytest

from livetrace._agent.sinks import ClickHouseSink, clickhouse_database
from tests.test_agent_sql import QUERY, fill, sql

pytestmark = [pytest.mark.once, pytest.mark.usefixtures("agent_umask")]


@pytest.mark.parametrize(
    ("url", "database"),
    [
        ("clickhouse://ch.internal:8123/metrics", "metrics"),
        ("clickhouses://user:secret@ch.internal:8443/metrics/", "metrics"),
        ("clickhouse://ch.internal:8123", "livetrace"),
        ("clickhouse://ch.internal:8123/", "livetrace"),
        ("chdb:///var/lib/ch", "livetrace"),  # the path is the engine's directory, not a database
        ("chdb:///var/lib/ch?database=metrics", "metrics"),
        ("chdb://memory/metrics", "metrics"),
    ],
)
def test_the_database_a_url_names(url: str, database: str) -> None:
    assert clickhouse_database(url) == database
    assert ClickHouseSink(url).database == database


@pytest.mark.slow  # ClickHouse's engine takes seconds to start
def test_sql_reads_the_database_the_sink_wrote(tmp_path: Path) -> None:
    url = f"chdb://{tmp_path / 'ch'}?database=metrics"
    sink = ClickHouseSink(url)
    fill(tmp_path, [sink])
    sink.close()
    done = sql("--clickhouse", url, "-c", QUERY, "--format", "csv")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == ['"api",2,6,12000000', '"db",1,3,1000000']
    tables = sql(
        "--clickhouse", url, "-c", "SELECT name FROM system.tables WHERE database = 'livetrace'", "--format", "csv"
    )
    assert tables.returncode == 0 and tables.stdout.splitlines()[1:] == [], tables.stdout  # nothing elsewhere
