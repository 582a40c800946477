"""``livetrace export --to parquet -o DIR``: the tables (docs/sql.md) of
trace files, or of a live service, as a Hive-partitioned Parquet dataset
(livetrace/_dataset.py): ``DIR/TABLE/service=NAME/date=YYYY-MM-DD/NAME.parquet``.

From files: one file per table per trace file, a row group per generation
(a legacy segment), written as they decode, so memory holds a generation
and not the trace. Live: one file per table per generation as each ends
(rolling), named after the session and numbered, and each table's first
file even when empty, so that every table reads from the start."""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import os
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, TextIO

import trio

from livetrace._cli.common import EXIT_ERROR, EXIT_INCOMPLETE, EXIT_OK, live_pass, say, units_recorded
from livetrace._cli.sources import Unread, files_read_in_part
from livetrace._cli.sql_inputs import expand
from livetrace._host import usable_cores
from livetrace._outfile import plain_name
from livetrace._plural import plural
from livetrace._tables.deps import need

if TYPE_CHECKING:
    import pyarrow as pa

    from livetrace._dataset import ParquetDataset, ParquetFile
    from livetrace._session.session import Session
    from livetrace._tables.read import OnError

LIVE_SEGMENT = 5.0  # seconds
MAX_WRITERS = 8


def writers() -> int:
    """Threads writing a unit's tables: one per core this process may use
    (pyarrow's writer lets go of the GIL while it encodes), up to
    MAX_WRITERS; on one core, one (threads there only take turns)."""
    return max(1, min(MAX_WRITERS, usable_cores()))


def _first_wall(unit: dict[str, pa.RecordBatch]) -> dt.datetime | None:
    import pyarrow.compute as pc

    wall: dt.datetime | None = pc.min(unit["events"].column("wall_time")).as_py()
    return wall


def _day(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).date().isoformat()


class _Writes:
    """Files of a dataset written by a pool of threads, then put in place
    together: a write's failure lets the others end first, and a file not
    committed is removed when this closes."""

    def __init__(self, ds: ParquetDataset, pool: ThreadPoolExecutor) -> None:
        self.ds, self.pool = ds, pool
        self.files: list[ParquetFile] = []
        self._pending: list[Future[None]] = []

    def __enter__(self) -> _Writes:
        return self

    def __exit__(self, *exc: object) -> None:
        wait(self._pending)
        for f in self.files:
            f.discard()  # (after a commit: nothing left to do)

    def open(self, table: str, partition: list[tuple[str, str | None]], name: str, schema: pa.Schema) -> ParquetFile:
        f = self.ds.open(table, partition, name, schema)
        self.files.append(f)
        return f

    def write(self, writes: list[tuple[ParquetFile, pa.RecordBatch]]) -> None:
        """Write each batch into its file, once the writes before are done
        (so that a file gets its row groups in order)."""
        self.settle()
        self._pending = [self.pool.submit(f.write, batch) for f, batch in writes]

    def settle(self) -> None:
        """Wait for the writes; the first failure raises."""
        for done in self._pending:
            done.result()
        self._pending = []

    def commit(self) -> int:
        """Put every file in place once its writes are done: the rows they hold."""
        self.settle()
        for f in self.files:
            self.ds.committed(f.commit())
        return sum(f.rows for f in self.files)


def export_file(
    ds: ParquetDataset, path: Path, service: str | None, on_error: OnError | None = None
) -> tuple[int, int]:
    """One trace file's tables, a file each: (events, rows written);
    ``on_error`` as for ``iter_tables`` (a file cut short keeps what it had
    whole).

    A unit's tables are written by a pool of threads (pyarrow lets go of
    the GIL while it encodes), while the next unit is built: two units are
    held at a time, and each file gets its row groups in order."""
    from livetrace._tables.read import iter_tables
    from livetrace._tables.schema import SCHEMAS

    # Two files of the same name in two directories stay two files.
    where = hashlib.blake2b(str(path.resolve()).encode(), digest_size=4).hexdigest()
    name = f"{plain_name(path.stem, 60) or 'trace'}-{where}"
    files: dict[str, ParquetFile] = {}
    events = 0
    with ThreadPoolExecutor(max_workers=writers()) as pool, _Writes(ds, pool) as writes:
        for unit in iter_tables([path], on_error=on_error):
            if not files:
                when = _first_wall(unit) or dt.datetime.fromtimestamp(os.stat(path).st_mtime, dt.UTC)
                partition = [("service", service), ("date", _day(when))]
                files = {table: writes.open(table, partition, name, SCHEMAS[table]) for table in unit}
            writes.write([(files[t], batch) for t, batch in unit.items() if batch.num_rows])
            events += unit["events"].num_rows
        return events, writes.commit()


async def _export_live(ds: ParquetDataset, args: argparse.Namespace, err: TextIO, **limits: Any) -> tuple[bool, int]:
    rows = 0

    async def collect(session: Session) -> bool:
        nonlocal rows
        info = session.info
        service = args.service or PurePath(info.executable).name
        started = dt.datetime.fromtimestamp(info.start_unix_ns / 1e9, dt.UTC)
        # The trace's start is the helper's, shared by every consumer of it: the session's id keeps the files
        # of two exports of one process apart (a pprof session's is 0, its start its own first window's).
        base = f"{plain_name(service, 40)}-{info.pid}-{started:%Y%m%dT%H%M%SZ}-s{info.session}"
        seq = 0

        def write(unit: dict[str, pa.RecordBatch]) -> None:
            """A generation's files, each table's in a thread of the pool;
            put in place once every one is whole."""
            nonlocal seq, rows
            seq += 1
            partition = [("service", service), ("date", _day(_first_wall(unit) or dt.datetime.now(dt.UTC)))]
            chosen = [(t, batch) for t, batch in unit.items() if batch.num_rows or seq == 1]
            with _Writes(ds, pool) as writes:
                # (the directories made here, one after another)
                writes.write([(writes.open(t, partition, f"{base}-{seq:06d}", b.schema), b) for t, b in chosen])
                rows += writes.commit()

        async def sink(unit: dict[str, pa.RecordBatch]) -> None:
            await trio.to_thread.run_sync(write, unit)  # the files in a worker: the session reads on meanwhile

        await units_recorded(session, sink, args.record, err)
        return True  # (None: live_pass's sign of an abort)

    # A legacy runtime's trace is only read whole: restart it every LIVE_SEGMENT s, a file each.
    limits["segment"] = args.segment or LIVE_SEGMENT
    with ThreadPoolExecutor(max_workers=writers()) as pool:
        complete = await live_pass(args.address, args.duration, args.token, err, "exporting", collect, **limits)
    return complete, rows


def export_parquet_command(args: argparse.Namespace, err: TextIO, **limits: Any) -> int:
    need("pyarrow")
    from livetrace._dataset import ParquetDataset
    from livetrace._tables.schema import SCHEMA_VERSION

    if str(args.output) == "-":
        say(err, "error: --to parquet writes a directory of files: give -o DIR, not -")
        return EXIT_ERROR
    inputs = expand([args.address])
    if inputs.datasets:
        say(err, f"error: {args.address} is a Parquet dataset already (livetrace sql reads it as it is)")
        return EXIT_ERROR
    if args.record is not None and not inputs.live:
        say(err, "error: --record writes a live session's trace: the source is a file")
        return EXIT_ERROR
    complete, rows = True, 0
    with ParquetDataset(args.output, schema_version=str(SCHEMA_VERSION)) as ds:
        if inputs.live:
            complete, rows = trio.run(lambda: _export_live(ds, args, err, **limits))
        else:
            if args.duration:
                say(err, "note: --duration applies to a live service, not to a file")
            unread: list[Unread] = []
            for path in inputs.files:
                rows += export_file(ds, path, args.service, lambda *f: unread.append(f))[1]
            complete = files_read_in_part(unread, len(inputs.files), err, "its files")
        files = len(ds.files)
    say(err, f"wrote {args.output}: {plural(files, 'file')}, {rows:,} rows")
    return EXIT_OK if complete else EXIT_INCOMPLETE
