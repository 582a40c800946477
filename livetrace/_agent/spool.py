"""The spool: rows on disk until every sink has taken them.

An entry is one Arrow IPC file of one table's rows, written whole under a
temporary name and renamed (``_outfile.AtomicFile``, 0600, in a 0700
directory), named by its key so that the directory's order is the order
rows were made. A sink that is down leaves its entries here; an agent that
restarts finds them and sends them again. Each row's ``key`` column is the
entry's key and the row's index, so a sink sent an entry twice keeps one
copy (the lake by file name, ClickHouse by the insert's deduplication token).

The spool is bounded: past ``max_bytes``, or when the disk is full, the
oldest entries go first. What is dropped is counted by table
(:attr:`Spool.dropped`), and stays counted in :meth:`unrecorded` until the
agent has written it into its own ``agent_log`` rows.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

from livetrace._agent.rows import KEY, SCHEMAS
from livetrace._errors import OutputPathError
from livetrace._outfile import PART_SUFFIX, AtomicFile

__all__ = ["Entry", "Spool", "private_dir"]

SUFFIX = ".arrow"
FULL = (errno.ENOSPC, errno.EDQUOT)  # the disk is full, or this user's quota on it


def private_dir(path: Path) -> Path:
    """``path`` as a directory only this user can enter (0700), made if
    missing (with its parents); one that exists with looser permissions,
    or owned by someone else, is refused rather than trusted."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(path, follow_symlinks=False)
    except OSError as e:
        raise OutputPathError(f"cannot make the directory {path}: {e.strerror or e}") from None
    if not os.path.isdir(path) or os.path.islink(path):
        raise OutputPathError(f"{path} is not a directory")
    if st.st_uid != os.geteuid():
        raise OutputPathError(f"{path} belongs to uid {st.st_uid}, not to this user: give the agent its own directory")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)  # ours: tighten it (an older agent's, or a umask of 022 on a parent made with it)
    return path


@dataclass(frozen=True, order=True)
class Entry:
    key: str  # "<ns>-<n>": sorts in the order written
    table: str
    rows: int
    size: int

    @property
    def name(self) -> str:
        return f"{self.key}.{self.table}{SUFFIX}"


class Spool:
    """Entries in ``directory``, oldest first; thread-safe."""

    def __init__(self, directory: Path, max_bytes: int, host: str) -> None:
        self.directory = private_dir(directory)
        self.max_bytes = max_bytes
        self.host = host
        self.dropped: Counter[str] = Counter()  # rows, by table, since the agent started
        self._unrecorded: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._last_ns = 0
        self._n = 0
        self._entries: list[Entry] = []
        self._load()

    def _load(self) -> None:
        for p in sorted(self.directory.iterdir()):
            if p.name.endswith(PART_SUFFIX):
                p.unlink(missing_ok=True)  # a write the last agent did not finish
                continue
            parts = p.name.split(".")
            if len(parts) != 3 or "." + parts[2] != SUFFIX or parts[1] not in SCHEMAS:
                continue
            try:
                with pa.OSFile(str(p)) as src, ipc.open_file(src) as f:
                    rows = sum(f.get_batch(i).num_rows for i in range(f.num_record_batches))
            except (OSError, pa.ArrowInvalid):
                p.unlink(missing_ok=True)
                self._count_drop(parts[1], 0)
                continue
            self._entries.append(Entry(parts[0], parts[1], rows, p.stat().st_size))
        if self._entries:
            self._last_ns = int(self._entries[-1].key.split("-")[0])

    # -- writing --

    def _next_key(self) -> str:
        ns = max(time.time_ns(), self._last_ns + 1)
        self._last_ns = ns
        self._n += 1
        return f"{ns:020d}-{self._n:06d}"

    def put(self, table: str, rows: pa.Table) -> Entry | None:
        """Spool ``rows`` (``table``'s schema, its key column left empty: it
        is filled here); None if even an empty spool has no room for them
        (a full disk): they are counted as dropped."""
        if not rows.num_rows:
            return None
        with self._lock:
            key = self._next_key()
            keys = pa.array([f"{self.host}:{key}:{i:06d}" for i in range(rows.num_rows)], pa.string())
            rows = rows.set_column(rows.schema.get_field_index(KEY), KEY, keys).cast(SCHEMAS[table])
            sink = pa.BufferOutputStream()
            with ipc.new_file(sink, rows.schema) as w:
                w.write_table(rows)
            data = sink.getvalue().to_pybytes()
            entry = Entry(key, table, rows.num_rows, len(data))
            while self._entries and self.bytes + entry.size > self.max_bytes:
                self._drop_oldest()
            while True:
                try:
                    with AtomicFile(self.directory / entry.name, hidden=True, mode=0o600) as f:
                        f.file.write(data)
                        f.commit()
                    break
                except (OSError, OutputPathError) as e:  # OutputPathError: the temporary file could not be made
                    if e.errno not in FULL or not self._entries:
                        self._count_drop(table, entry.rows)
                        return None
                    self._drop_oldest()  # room on a full disk
            self._entries.append(entry)
            return entry

    def _drop_oldest(self) -> None:
        old = self._entries.pop(0)
        (self.directory / old.name).unlink(missing_ok=True)
        self._count_drop(old.table, old.rows)

    def _count_drop(self, table: str, rows: int) -> None:
        self.dropped[table] += rows
        self._unrecorded[table] += rows

    def unrecorded(self) -> Counter[str]:
        """Rows dropped and not yet in the agent's own records."""
        with self._lock:
            return Counter(self._unrecorded)

    def recorded(self, counts: Counter[str]) -> None:
        """``counts`` (from :meth:`unrecorded`) are in the agent's records now."""
        with self._lock:
            self._unrecorded -= counts

    # -- reading --

    @property
    def bytes(self) -> int:
        return sum(e.size for e in self._entries)

    def entries(self) -> list[Entry]:
        with self._lock:
            return list(self._entries)

    def read(self, entry: Entry) -> pa.Table | None:
        """The entry's rows; None if it is gone (dropped since)."""
        try:
            with pa.OSFile(str(self.directory / entry.name)) as src, ipc.open_file(src) as f:
                return f.read_all()
        except FileNotFoundError:
            return None

    def remove(self, entry: Entry) -> None:
        """Every sink has the entry: it leaves the spool."""
        with self._lock:
            if entry in self._entries:
                self._entries.remove(entry)
                (self.directory / entry.name).unlink(missing_ok=True)
