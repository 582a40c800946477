"""Compaction of the local lake: a closed day's partition becomes one file.

The agent writes a file per table, partition and flush (a second's rows,
most of each file its footer), so a day of one busy service is tens of
thousands of small files. Once a day is over (in UTC, the partitions'
clock), each partition's files are merged into one,
``compacted-HASH.parquet``, whose metadata lists the entry keys it holds
(``livetrace.compacted_keys``). The lake sink skips an entry whose key a
compacted file of its partition holds, as it replaces a file of the same
key otherwise: an entry sent twice is stored once, compacted or not.

A reader must never see a partition's rows twice, nor some of them. The
merged file is written in a directory of its own under ``LAKE/.compact/``
(outside every table: no glob of the lake finds it), which is then
exchanged with the partition's directory in one step (Linux's
``renameat2`` with ``RENAME_EXCHANGE``): a query sees the old files or the
new one. A query that listed the old files just before may fail to open
one, and can be run again; none answers wrong. Where the exchange is not
available (another OS, a file system without it), partitions stay as they
are, and the compaction says why.

Nothing written is lost. A file the sink put into the old directory while
the merge ran (a late row of that day, a spool sent after an outage) is
moved into the new one, and the old directory goes only once it is empty.
A compaction cut short leaves its directory under ``.compact/`` with a
note of its partition, and the next one finishes or undoes it first.
"""

from __future__ import annotations

import ctypes
import datetime as dt
import errno
import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from livetrace._dataset import SUFFIX, write_parquet

__all__ = ["COMPACTED_KEYS", "Compaction", "compact_lake", "compacted_keys"]

COMPACTED_KEYS = b"livetrace.compacted_keys"
PREFIX = "compacted-"
STAGING = ".compact"
NOTE = ".note"  # hidden: no reader of the lake takes it for data
_AT_FDCWD = -100
_RENAME_EXCHANGE = 1 << 1
_SWEEPS = 20  # a sink writing into the old directory as fast as it is swept: leave it for the next time


@dataclass
class Compaction:
    """What a compaction of the lake did."""

    partitions: int = 0  # the partitions compacted
    files: int = 0  # the files merged
    rows: int = 0
    skipped: list[str] = field(default_factory=list)  # "PARTITION: why", one each


def _data_files(directory: Path) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.endswith(SUFFIX) and not n.startswith("."))


def _keys_in(path: Path) -> tuple[str, ...]:
    if not path.name.startswith(PREFIX):
        return (path.name[: -len(SUFFIX)],)
    st = path.stat()
    return _compacted(str(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=256)
def _compacted(path: str, mtime_ns: int, size: int) -> tuple[str, ...]:
    del mtime_ns, size  # in the cache's key only: a file replaced is read again
    metadata = pq.read_schema(path).metadata or {}
    return tuple(json.loads(metadata.get(COMPACTED_KEYS, b"[]")))


def compacted_keys(directory: Path) -> frozenset[str]:
    """The entry keys the compacted files of a partition's directory hold
    (none for a day not compacted yet: the sink's usual case, a listing)."""
    try:
        names = [n for n in os.listdir(directory) if n.startswith(PREFIX) and n.endswith(SUFFIX)]
    except (FileNotFoundError, NotADirectoryError):
        return frozenset()
    return frozenset(k for n in names for k in _keys_in(directory / n))


def _exchange(a: Path, b: Path) -> None:
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        raise OSError(errno.ENOSYS, "this C library has no renameat2, which the compaction needs")
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(b))


def _finish(staging: Path, lake: Path) -> None:
    """Complete or undo a compaction whose directory is ``staging``.

    Its note names the partition, the files merged and the merged file's
    name. If the partition holds the merged file, the exchange happened:
    ``staging`` holds the old files, and any the merge did not take go
    into the partition. If not, the partition kept its files, and the
    merge is dropped."""
    note = json.loads((staging / NOTE).read_text())
    partition = lake / note["partition"]
    exchanged = (partition / note["compacted"]).exists()
    merged = set(note["files"]) if exchanged else set(_data_files(staging))
    (partition / NOTE).unlink(missing_ok=True)
    for _ in range(_SWEEPS):
        for name in os.listdir(staging):
            if exchanged and name.endswith(SUFFIX) and not name.startswith(".") and name not in merged:
                os.rename(staging / name, partition / name)
            elif name != NOTE:
                (staging / name).unlink()
        (staging / NOTE).unlink(missing_ok=True)
        try:
            staging.rmdir()
            return
        except OSError as e:
            if e.errno != errno.ENOTEMPTY:
                raise
    raise OSError(errno.EBUSY, "files kept arriving while the partition was compacted", str(staging))


def compact_partition(lake: Path, partition: Path, merging: Callable[[], None] | None = None) -> tuple[int, int]:
    """Merge a partition directory's files into one: the files merged and
    their rows (none where it has fewer than two). ``merging`` runs between
    the listing and the exchange (the tests write a late file there)."""
    names = _data_files(partition)
    if len(names) < 2:
        return 0, 0
    keys = sorted({k for n in names for k in _keys_in(partition / n)})
    tables = [pq.read_table(partition / n) for n in names]
    metadata = {k: v for k, v in (tables[0].schema.metadata or {}).items() if k != COMPACTED_KEYS}
    metadata[COMPACTED_KEYS] = json.dumps(keys).encode()
    merged = pa.concat_tables([t.replace_schema_metadata(None) for t in tables], promote_options="default")
    name = PREFIX + hashlib.blake2b("\n".join(keys).encode(), digest_size=12).hexdigest() + SUFFIX
    relative = partition.relative_to(lake)
    staging = lake / STAGING / hashlib.blake2b(str(relative).encode(), digest_size=8).hexdigest()
    (lake / STAGING).mkdir(exist_ok=True)
    staging.mkdir()
    note = json.dumps({"partition": str(relative), "files": names, "compacted": name})
    (staging / NOTE).write_text(note)
    try:
        write_parquet(staging / name, merged.schema.with_metadata(metadata), merged.to_batches())
        if merging is not None:
            merging()
        # The same note on both sides, so that after the exchange the old files' directory has one too.
        (partition / NOTE).write_text(note)
        _exchange(staging, partition)
    finally:
        _finish(staging, lake)  # after the exchange, or undoing what came before it
    return len(names), merged.num_rows


def closed_partitions(lake: Path, tables: Iterable[str], today: dt.date) -> list[Path]:
    """The ``TABLE/service=S/date=D`` directories of days before ``today``."""
    found = []
    for table in tables:
        for date_dir in sorted((lake / table).glob("*/date=*")):
            try:
                day = dt.date.fromisoformat(date_dir.name.removeprefix("date="))
            except ValueError:
                continue
            if day < today and date_dir.is_dir() and not date_dir.is_symlink():
                found.append(date_dir)
    return found


def compact_lake(lake: Path, tables: Iterable[str], today: dt.date | None = None) -> Compaction:
    """Compact every closed day's partitions of the lake at ``lake``, after
    finishing what a compaction cut short left. A partition that cannot be
    compacted is left as it is, and said in ``skipped``."""
    today = today if today is not None else dt.datetime.now(dt.UTC).date()
    done = Compaction()
    staging_root = lake / STAGING
    if staging_root.is_dir():
        for staging in sorted(staging_root.iterdir()):
            try:
                _finish(staging, lake)
            except (OSError, ValueError, KeyError) as e:
                done.skipped.append(f"{staging}: a compaction cut short could not be finished: {e}")
    for partition in closed_partitions(lake, tables, today):
        try:
            files, rows = compact_partition(lake, partition)
        except (OSError, pa.ArrowException) as e:
            done.skipped.append(f"{partition.relative_to(lake)}: {e}")
            continue
        if files:
            done.partitions += 1
            done.files += files
            done.rows += rows
    return done
