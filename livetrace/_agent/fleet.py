"""SQL over the fleet: the agent's tables, and prepared views over them
that read the same in DuckDB (over the Parquet lake) and in ClickHouse.

The views are written once, in the SQL both engines take (``GROUP BY ALL``,
``date_trunc``, ``now() - INTERVAL 1 HOUR``), over the tables by their bare
names: DuckDB's connection has a view per lake table, ClickHouse's client
works in the agent's database, where the views are made next to the tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from livetrace._agent.rows import TABLES
from livetrace._agent.sinks import lake_glob, open_clickhouse
from livetrace._agent.store import Store, local_path

__all__ = ["FLEET_VIEWS", "SLOW_SERVICES_AND_DUMPS", "clickhouse_client", "clickhouse_views", "lake_connection"]

FLEET_VIEWS: dict[str, str] = {
    # Scheduler latency (runnable to running) per service and hour: how long goroutines waited to run.
    "fleet_sched_latency": """
        SELECT service, host, date_trunc('hour', time) AS hour, count(*) AS summaries,
               sum(sched_count) AS runnable_spans, max(sched_p99_ns) AS worst_sched_p99_ns,
               max(sched_max_ns) AS longest_sched_ns
        FROM summaries GROUP BY ALL""",
    # GC cycles and stop-the-world pauses per service and hour.
    "fleet_gc_pauses": """
        SELECT service, host, date_trunc('hour', time) AS hour, sum(gc_count) AS gc_cycles,
               max(gc_p99_ns) AS worst_gc_p99_ns, sum(stw_count) AS stw_pauses, max(stw_p99_ns) AS worst_stw_p99_ns,
               max(stw_max_ns) AS longest_stw_ns, max(heap_bytes) AS largest_heap_bytes
        FROM summaries GROUP BY ALL""",
    # Every trace file kept: flight dumps (with what fired them) and sampled windows.
    "fleet_captures": """
        SELECT time, service, host, pid, go_version, source, trigger, path, bytes, cut FROM captures""",
    # What the agents lost or cut: rows dropped from a full spool, budget cuts, sinks down, data shed by
    # a helper or missed by a summarizer that fell behind, sessions cut off, windows skipped (the tracer
    # someone else's).
    "fleet_losses": """
        SELECT time, host, service, event, count, detail FROM agent_log
        WHERE event IN ('spool_dropped', 'budget_cut', 'budget_sampling', 'sink_down', 'generations_shed',
                        'batches_lost', 'cut_off', 'window_skipped')""",
}


# The question docs/fleet.md opens with: which services had a scheduler latency p99 over 10 ms in the
# last hour, and the flight dumps taken then.
SLOW_SERVICES_AND_DUMPS = """
    WITH slow AS (
        SELECT service, max(sched_p99_ns) AS worst_sched_p99_ns FROM summaries
        WHERE time > now() - INTERVAL 1 HOUR GROUP BY service HAVING max(sched_p99_ns) > {threshold_ns}
    )
    SELECT slow.service, slow.worst_sched_p99_ns, captures.time, captures.trigger, captures.path
    FROM slow JOIN captures ON captures.service = slow.service
    WHERE captures.source = 'flight dump' AND captures.time > now() - INTERVAL 1 HOUR
    ORDER BY slow.service, captures.time, captures.path"""


def lake_connection(
    root: str | Path, con: duckdb.DuckDBPyConnection | None = None, store: Store | None = None
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the lake's tables (those it has) and the fleet's views. The lake is a
    directory (a path, a ``file://`` URI), or on a filesystem pyarrow opens from a URI (``store``, else
    opened from ``root``), whose files DuckDB scans through pyarrow's datasets."""
    con = con if con is not None else duckdb.connect()
    local = local_path(str(root)) if store is None else None
    if local is None:
        _register_store(con, store if store is not None else Store.open(str(root)))
    for table in TABLES:
        if local is not None and any((local / table).rglob("*.parquet")):
            source = (
                f"read_parquet('{_quoted(lake_glob(local, table))}', hive_partitioning = true, union_by_name = true)"
            )
            con.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM {source}")
    have = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    for name, sql in FLEET_VIEWS.items():
        if _tables_of(sql) <= have:
            con.execute(f"CREATE OR REPLACE VIEW {name} AS {sql}")
    return con


def _register_store(con: duckdb.DuckDBPyConnection, store: Store) -> None:
    """The lake's tables on a pyarrow filesystem, as DuckDB relations of pyarrow datasets (Hive
    partitions; the hidden files of writes in progress left out)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    for table in TABLES:
        files = store.files(table, ".parquet")
        if files:
            # As DuckDB reads the local lake's partitions: the service a string, the day a date.
            partitioning = ds.partitioning(pa.schema([("service", pa.string()), ("date", pa.date32())]), flavor="hive")
            data = ds.dataset(
                files,
                filesystem=store.fs,
                format="parquet",
                partitioning=partitioning,
                partition_base_dir=store.path(table),
            )
            con.register(f"_lake_{table}", data)
            con.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM _lake_{table}")


def clickhouse_views(database: str) -> list[str]:
    return [f"CREATE OR REPLACE VIEW {database}.{name} AS {sql}" for name, sql in FLEET_VIEWS.items()]


def clickhouse_client(url: str) -> Any:
    """A clickhouse-connect client in the database the agent's sink writes
    for the same URL (``sinks.clickhouse_database``), its tables and views
    made if missing."""
    client, database = open_clickhouse(url)
    try:
        for statement in clickhouse_views(database):  # in the database: the views' bare table names are its
            client.command(statement)
    except BaseException:
        client.close()
        raise
    return client


def _tables_of(sql: str) -> set[str]:
    words = sql.split()
    return {words[i + 1] for i, w in enumerate(words[:-1]) if w.upper() == "FROM"}


def _quoted(text: str) -> str:
    return text.replace("'", "''")
