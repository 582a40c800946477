"""Where spooled rows go: the Parquet lake (the default) and ClickHouse.

A sink's :meth:`send` is blocking (the shipper runs it in a worker thread)
and idempotent by the entry's key: sent twice, an entry is stored once. A
sink that cannot take an entry raises :class:`SinkDown`, and the shipper
keeps the entry, and every later one, for that sink until it is back.

- :class:`LakeSink`: ``ROOT/TABLE/service=S/date=YYYY-MM-DD/KEY.parquet``
  (Hive partitions; ``service`` and ``date`` live in the path, not in the
  file), through ``_dataset.ParquetDataset``: each file written whole under
  a temporary name and renamed, never through a link (0600 in 0700
  directories under the agent's umask). Its name is the entry's key, so a
  resend replaces the file with the same rows.
- :class:`ClickHouseSink`: clickhouse-connect, to a server
  (``clickhouse://``) or to ClickHouse's engine in this process
  (``chdb://``); the tables are made on first use (:func:`clickhouse_ddl`),
  and each insert carries the entry's key as its deduplication token.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from livetrace._agent.compact import compacted_keys
from livetrace._agent.config import redacted
from livetrace._agent.rows import SCHEMA_VERSION, SCHEMAS, TIME
from livetrace._agent.store import Store, local_path
from livetrace._dataset import (
    COMPRESSION,
    COMPRESSION_LEVEL,
    SUFFIX,
    ParquetDataset,
    Partition,
    partition_dirs,
    with_version,
)
from livetrace._errors import LivetraceError

__all__ = ["ClickHouseSink", "LakeSink", "Sink", "SinkDown", "clickhouse_database", "clickhouse_ddl", "open_clickhouse"]

PARTITIONS = ["service", "date"]


class SinkDown(LivetraceError):
    """A sink did not take an entry; it is kept, and sent again later."""


class Sink(Protocol):
    name: str

    def send(self, table: str, rows: pa.Table, key: str) -> None: ...

    def close(self) -> None: ...


class LakeSink:
    """The lake in a local directory (a path, or a ``file://`` URI), or on a
    filesystem pyarrow opens from a URI (``store.py``): the same files."""

    def __init__(self, root: str, store: Store | None = None) -> None:
        self.name = f"lake {root}"
        local = local_path(root) if store is None else None
        self.root = local
        self.store = store if store is not None or local is not None else Store.open(root)

    def send(self, table: str, rows: pa.Table, key: str) -> None:
        rows = rows.append_column("date", pc.strftime(rows.column(TIME), format="%Y-%m-%d"))
        try:
            if self.root is not None:
                today = dt.datetime.now(dt.UTC).date().isoformat()
                with ParquetDataset(self.root, schema_version=SCHEMA_VERSION) as lake:
                    for partition, part in _partitions(rows):
                        if (dict(partition)["date"] or today) < today and key in compacted_keys(
                            self.root.joinpath(table, *partition_dirs(partition))
                        ):
                            continue  # sent again after its day was compacted (only a day over is): stored already
                        lake.write(table, partition, key, part)
            else:
                assert self.store is not None
                for partition, part in _partitions(rows):
                    where = "/".join([table, *partition_dirs(partition), key + SUFFIX])
                    self.store.put(where, _parquet_bytes(table, part))
        except (OSError, LivetraceError) as e:
            raise SinkDown(f"{self.name}: {e}") from e

    def close(self) -> None:
        pass


def _partitions(rows: pa.Table) -> Iterator[tuple[Partition, pa.Table]]:
    """The rows by service and day: each partition's, without those columns (they are in the path)."""
    for service in pc.unique(rows.column("service")).to_pylist():
        of_service = rows.filter(pc.equal(rows.column("service"), service))
        for date in pc.unique(of_service.column("date")).to_pylist():
            part = of_service.filter(pc.equal(of_service.column("date"), date))
            yield [("service", service), ("date", date)], part.drop_columns(PARTITIONS)


def _parquet_bytes(table: str, rows: pa.Table) -> bytes:
    """One lake file's bytes, as ``_dataset`` writes the local lake's."""
    out = pa.BufferOutputStream()
    schema = with_version(rows.schema, SCHEMA_VERSION, table)
    pq.write_table(
        rows.replace_schema_metadata(schema.metadata),
        out,
        compression=COMPRESSION,
        compression_level=COMPRESSION_LEVEL.get(COMPRESSION),
        use_dictionary=[f.name for f in schema if pa.types.is_string(f.type)],
    )
    return bytes(out.getvalue().to_pybytes())


_CH_TYPES = {
    pa.string(): "String",
    pa.int64(): "Int64",
    pa.bool_(): "Bool",
    pa.timestamp("us", tz="UTC"): "DateTime64(6, 'UTC')",
}
# Sort keys for the questions the fleet views ask: by service, then host, then time.
_ORDER = {
    "summaries": ("service", "host", "time"),
    "spans": ("service", "kind", "host", "time"),
    "captures": ("service", "host", "time"),
    "agent_log": ("host", "event", "time"),
}
TTL_DAYS = {"summaries": 90, "spans": 14, "captures": 90, "agent_log": 30}
DEDUP_WINDOW = 10_000  # inserts remembered per table for deduplication


def clickhouse_ddl(database: str) -> list[str]:
    """The statements that make the agent's tables (and database) in
    ClickHouse: MergeTree, a partition per day, a TTL per table, sort keys
    for the fleet's views, and inserts deduplicated by their token."""
    out = [f"CREATE DATABASE IF NOT EXISTS {database}"]
    for table, schema in SCHEMAS.items():
        cols = []
        for f in schema:
            t = _CH_TYPES[f.type]
            cols.append(f"    {f.name} {t if not f.nullable else f'Nullable({t})'}")
        cols_text = ",\n".join(cols)
        out.append(
            f"CREATE TABLE IF NOT EXISTS {database}.{table} (\n{cols_text}\n)\n"
            "ENGINE = MergeTree\n"
            "PARTITION BY toDate(time)\n"
            f"ORDER BY ({', '.join(_ORDER[table])})\n"
            f"TTL toDateTime(time) + INTERVAL {TTL_DAYS[table]} DAY\n"
            f"SETTINGS non_replicated_deduplication_window = {DEDUP_WINDOW}"
        )
    return out


DATABASE = "livetrace"  # the tables' database when the URL names none


def clickhouse_database(url: str) -> str:
    """The database a ClickHouse URL names, as clickhouse-connect reads it
    (``clickhouse://HOST:8123/DB``, ``chdb://memory/DB``, ``chdb:///PATH?database=DB``),
    else ``livetrace``: where the agent's sink writes and ``livetrace sql
    --clickhouse`` reads."""
    parts = urlsplit(url)
    named = parse_qs(parts.query).get("database", [""])[0]
    if not named and (parts.scheme != "chdb" or parts.netloc):  # chdb:///PATH: the path is the engine's directory
        named = unquote(parts.path[1:].split("/")[0])
    return named or DATABASE


def open_clickhouse(url: str) -> tuple[Any, str]:
    """A clickhouse-connect client working in the URL's database
    (:func:`clickhouse_database`), the agent's tables made there if missing;
    and that database. Raises what clickhouse-connect raises."""
    import clickhouse_connect  # only when configured

    database = clickhouse_database(url)
    # A client named to a database that does not exist yet cannot connect: the tables are made from default's.
    setup = clickhouse_connect.get_client(dsn=url, database="default")
    try:
        for statement in clickhouse_ddl(database):
            setup.command(statement)
    finally:
        setup.close()
    return clickhouse_connect.get_client(dsn=url, database=database), database


class ClickHouseSink:
    def __init__(self, url: str) -> None:
        # The URL's password never reaches a message or a record.
        self.name = "clickhouse " + redacted(url)
        self.url = url
        self.database = clickhouse_database(url)
        self._client: Any = None

    def _connect(self) -> Any:
        if self._client is None:
            try:
                self._client, self.database = open_clickhouse(self.url)
            except Exception as e:  # clickhouse-connect's errors, and a server not there: the sink is down
                raise SinkDown(f"{self.name}: {e}") from e
        return self._client

    def send(self, table: str, rows: pa.Table, key: str) -> None:
        client = self._connect()
        try:
            client.insert_arrow(table, rows, database=self.database, settings={"insert_deduplication_token": key})
        except Exception as e:
            self._client = None  # reconnect next time
            raise SinkDown(f"{self.name}: {e}") from e

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def lake_glob(root: str | os.PathLike[str], table: str) -> str:
    """The files of one of the lake's tables, for DuckDB's read_parquet."""
    return str(Path(root) / table / "**" / "*.parquet")
