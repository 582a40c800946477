"""The process table as livetrace sees it: which processes are Go programs
(and which Go, which service), which are not, which cannot be inspected and
why, and how to attach to each Go one.

The scan is plain blocking work (psutil, /proc/PID/exe), run in a worker
thread; the probe of pprof ports is the one async part. A process that exits,
hides or misbehaves mid-scan becomes a reason on its row, never an exception.
"""

from __future__ import annotations

import errno
import itertools
import os
import pwd
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from pathlib import Path

import psutil
import trio

from livetrace._attach.announce import Announcement, AnnounceScan, read_announcements
from livetrace._attach.buildinfo import BuildInfo, read_build_info_file
from livetrace._attach.probe import MAX_PORTS_PER_PROCESS, PortAnswer, pprof_url, probe_pprof
from livetrace._attach.sockets import listening_ports
from livetrace._errors import (
    BuildInfoError,
    BuildInfoTooLargeError,
    CorruptBuildInfoError,
    NotELFError,
    NotGoBinaryError,
    UnreadableBinaryError,
)
from livetrace._protocol.address import parse_address

__all__ = [
    "FIX",
    "HELPER_IMPORT",
    "NO_SUCH_PROCESS",
    "TRACE_FIX",
    "BuildInfoCache",
    "Kind",
    "ProcessInfo",
    "Survey",
    "attach_routes",
    "find_by_name",
    "inspect_pid",
    "scan",
    "survey",
]

HELPER_IMPORT = "github.com/livetrace/livetrace/go_helper"
FIX = (
    f'import _ "{HELPER_IMPORT}" and run it with LIVETRACE_LISTEN=unix:/path/to/socket; '
    'or import _ "net/http/pprof" and serve HTTP'
)
# For a service that serves /debug/pprof/ but not its trace (etcd 3.4 mounts the index and some profiles).
TRACE_FIX = (
    'mount net/http/pprof\'s trace handler too (mux.HandleFunc("/debug/pprof/trace", pprof.Trace)); '
    f'or import _ "{HELPER_IMPORT}" and run it with LIVETRACE_LISTEN=unix:/path/to/socket'
)
NO_SUCH_PROCESS = "no such process"
# kthreadd: the kernel's threads are its children; they run no executable.
KTHREADD_PID = 2
_ATTRS = ["pid", "ppid", "name", "cmdline", "username", "create_time", "status"]


class Kind(StrEnum):
    GO = "go"
    NOT_GO = "not-go"
    UNINSPECTABLE = "uninspectable"


@dataclass(slots=True)
class ProcessInfo:
    """One process. ``reason`` says why it is not (known to be) Go; for a Go
    process, ``helper`` is its fresh announce record and ``pprof`` the
    http://HOST:PORT of a port that serves /debug/pprof/ and its trace (with
    a helper, its trace is not asked), when they exist;
    ``pprof_without_trace`` the first port that serves the rest
    of /debug/pprof/ but no trace, and what its trace handler answered
    ("http://HOST:PORT: /debug/pprof/trace answered 404 ..."), else "";
    ``ports`` are its listening ports and ``unprobed`` counts those not
    asked (too many ports). attach_routes fills these in; scan leaves them
    empty."""

    pid: int
    user: str
    command: list[str]
    name: str
    started: float | None
    kind: Kind
    reason: str = ""
    build: BuildInfo | None = None
    helper: Announcement | None = None
    pprof: str | None = None
    pprof_without_trace: str = ""
    ports: list[tuple[str, int]] = field(default_factory=list)
    unprobed: int = 0

    @property
    def attach(self) -> str | None:
        """The address to attach with: the helper's, else the pprof one."""
        if self.helper is not None:
            return self.helper.address
        return self.pprof


@dataclass(slots=True)
class Survey:
    processes: list[ProcessInfo]
    announce: AnnounceScan


def _exe_reason(e: BuildInfoError, user: str) -> tuple[Kind, str]:
    if isinstance(e, NotGoBinaryError):
        return Kind.NOT_GO, "not a Go program"
    if isinstance(e, NotELFError):
        return Kind.NOT_GO, "not an ELF executable"
    if isinstance(e, BuildInfoTooLargeError):
        return Kind.UNINSPECTABLE, f"not inspected: {e}"
    if isinstance(e, CorruptBuildInfoError):
        return Kind.UNINSPECTABLE, f"its Go build information is corrupt: {e}"
    cause = e.__cause__
    if isinstance(cause, OSError) and cause.errno in (errno.EACCES, errno.EPERM):
        if user != _my_name():
            return Kind.UNINSPECTABLE, f"another user's process ({user}): its executable cannot be read"
        return Kind.UNINSPECTABLE, "its executable cannot be read: permission denied"
    if isinstance(cause, OSError) and cause.errno == errno.ENOENT:
        return Kind.UNINSPECTABLE, "it has no executable (exited, or a kernel thread)"
    return Kind.UNINSPECTABLE, f"its executable cannot be read: {e}"


@cache
def _my_name() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


class BuildInfoCache:
    """Build information by the executable's identity: a hundred workers of
    one binary are read once. Given to every :func:`scan` of a caller that
    scans again and again (the agent), an executable is read once as long as
    each full scan sees it: a full scan forgets what the one before it did
    not use (scans of some pids in between add to what it keeps)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[int, int, int, int], BuildInfo | BuildInfoError] = {}
        self._last: dict[tuple[int, int, int, int], BuildInfo | BuildInfoError] = {}

    def next_scan(self) -> None:
        """A full scan begins: what the last one read is kept, the rest let go."""
        self._last, self._seen = self._seen, {}

    def read(self, pid: int) -> BuildInfo:
        exe = f"/proc/{pid}/exe"
        try:
            st = os.stat(exe)
        except OSError as e:
            raise UnreadableBinaryError(f"cannot open it: {e.strerror or e}", path=exe) from e
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        found = self._seen.get(key) or self._last.get(key)
        if found is None:
            try:
                found = read_build_info_file(exe)
            except UnreadableBinaryError:
                raise  # about this process, not the file: do not remember it
            except BuildInfoError as e:
                found = e
        self._seen[key] = found
        if isinstance(found, BuildInfoError):
            raise found
        return found


def _inspect(proc: psutil.Process, info: dict[str, object], cache: BuildInfoCache) -> ProcessInfo:
    pid = proc.pid
    cmdline = info.get("cmdline")
    command = [str(a) for a in cmdline] if isinstance(cmdline, list) else []
    name = str(info.get("name") or "")
    user = str(info.get("username") or "?")
    created = info.get("create_time")
    row = ProcessInfo(
        pid=pid,
        user=user,
        command=command or ([name] if name else []),
        name=name,
        started=float(created) if isinstance(created, (int, float)) else None,
        kind=Kind.UNINSPECTABLE,
    )
    if info.get("status") == psutil.STATUS_ZOMBIE:
        row.reason = "a zombie: it exited and its parent has not reaped it"
        return row
    try:
        row.build = cache.read(pid)
    except BuildInfoError as e:
        row.kind, row.reason = _exe_reason(e, user)
        return row
    row.kind = Kind.GO
    return row


def _kernel_threads() -> Callable[[dict[str, object]], bool]:
    """A test for kernel threads: kthreadd and its children, when pid 2 is
    kthreadd (in a container's pid namespace it is an ordinary process)."""
    try:
        kthreadd = psutil.Process(KTHREADD_PID)
        real = kthreadd.name() == "kthreadd" and kthreadd.ppid() == 0
    except (psutil.Error, OSError):
        real = False
    if not real:
        return lambda info: False
    return lambda info: KTHREADD_PID in (info.get("pid"), info.get("ppid"))


def scan(pids: Iterable[int] | None = None, cache: BuildInfoCache | None = None) -> list[ProcessInfo]:
    """Every process (or just pids), in pid order; blocking. Kernel threads
    and this process are left out of a full scan; a pid asked for that does
    not exist comes back as uninspectable, "no such process". ``cache``: the
    build information of the scans before (else each executable is read);
    a scan of just some pids forgets nothing of it, only a full one does."""
    if cache is None:
        cache = BuildInfoCache()
    rows: list[ProcessInfo] = []
    if pids is None:
        cache.next_scan()
        me, is_kernel_thread = os.getpid(), _kernel_threads()
        for proc in psutil.process_iter(_ATTRS, ad_value=None):
            info = proc.info
            if proc.pid != me and not is_kernel_thread(info):
                rows.append(_inspect(proc, info, cache))
        return sorted(rows, key=lambda r: r.pid)
    for pid in dict.fromkeys(pids):
        try:
            proc = psutil.Process(pid)
            info = proc.as_dict(_ATTRS, ad_value=None)
        except psutil.NoSuchProcess:
            rows.append(ProcessInfo(pid, "", [], "", None, Kind.UNINSPECTABLE, NO_SUCH_PROCESS))
            continue
        rows.append(_inspect(proc, info, cache))
    return rows


def inspect_pid(pid: int) -> ProcessInfo:
    """One process, as scan() sees it; blocking."""
    return scan([pid])[0]


async def survey(pids: Iterable[int] | None = None, *, announce_dir: Path | None = None) -> Survey:
    """The process table with, for each Go process, its helper (from the
    announce records) and the first of its ports that serves pprof."""
    wanted = None if pids is None else list(pids)
    rows = await trio.to_thread.run_sync(scan, wanted)
    records = await trio.to_thread.run_sync(read_announcements, announce_dir)
    await attach_routes(rows, records)
    return Survey(rows, records)


async def attach_routes(rows: list[ProcessInfo], records: AnnounceScan) -> None:
    """Fill in each Go row's listening ports, helper and pprof address, and
    how many of its ports went unasked (too many ports: past a process's
    share, or past the probe's deadline)."""
    go = [row for row in rows if row.kind is Kind.GO]
    # Only these rows' ports: the socket tables are read once for them all (the agent asks only for the
    # processes it is about to trace; a host's tables can hold tens of thousands of sockets).
    ports = await trio.to_thread.run_sync(listening_ports, [row.pid for row in go])
    asked: list[list[tuple[str, int]]] = []
    index_only: set[tuple[str, int]] = set()
    for row in go:
        row.helper = records.records.get(row.pid)
        helper_port = _tcp_port(row.helper)
        # The helper's own port speaks livetrace, not HTTP.
        row.ports = [p for p in ports[row.pid] if p[1] != helper_port]
        asked.append(row.ports[:MAX_PORTS_PER_PROCESS])
        if row.helper is not None:  # its trace handler is left alone (probe_pprof says why)
            index_only.update(asked[-1])
    # Each process's first port, then each one's second, ...: one process
    # with hundreds of ports cannot use up the deadline for the others.
    turns = itertools.zip_longest(*asked)
    answers = await probe_pprof((p for turn in turns for p in turn if p is not None), index_only=index_only)
    for row in rows:
        served = [(p, a) for p in row.ports if isinstance(a := answers.get(p), PortAnswer)]
        row.pprof = next((pprof_url(*p) for p, a in served if a.traces), None)
        row.pprof_without_trace = next((f"{pprof_url(*p)}: {a.no_trace}" for p, a in served if not a.traces), "")
        row.unprobed = sum(1 for p in row.ports if answers.get(p, None) is None)


def _tcp_port(record: Announcement | None) -> int | None:
    if record is None:
        return None
    addr = parse_address(record.address)
    return addr.port if addr.family in ("tcp", "tls") else None


def find_by_name(name: str) -> list[ProcessInfo]:
    """The processes whose executable name is exactly name: psutil's name,
    the executable's base name, or argv[0]'s. Blocking; not inspected yet
    (kind is UNINSPECTABLE, reason empty)."""
    me, is_kernel_thread = os.getpid(), _kernel_threads()
    found: list[ProcessInfo] = []
    for proc in psutil.process_iter([*_ATTRS, "exe"], ad_value=None):
        info = proc.info
        if proc.pid == me or is_kernel_thread(info):
            continue
        cmdline = info.get("cmdline") or []
        names = {info.get("name"), os.path.basename(str(info.get("exe") or ""))}
        if cmdline:
            names.add(os.path.basename(str(cmdline[0])))
        if name in names:
            found.append(
                ProcessInfo(
                    pid=proc.pid,
                    user=str(info.get("username") or "?"),
                    command=[str(a) for a in cmdline] or [str(info.get("name") or "")],
                    name=str(info.get("name") or ""),
                    started=None,
                    kind=Kind.UNINSPECTABLE,
                )
            )
    return found
