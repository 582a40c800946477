"""The agent: find the processes, trace each by its target's policy,
re-attach when one restarts, and ship the rows.

Discovery is ``livetrace ps``'s (``_attach.processes``), every
``scan_interval`` seconds when the process table changed: between its full
scans the agent looks only at each process's name and start time
(:func:`process_table_probe`, a tenth of a scan's CPU), and scans the
processes whose probe changed (a process started, or exec'd another
program; one that ended is gone from the table), keeping what the last
scan saw of the rest. It scans the whole table when the last scan left
something to try again (a failed session, a process matched with nowhere
to attach yet), when a traced process's task ended, and every
``FULL_SCAN_EVERY`` seconds whatever it sees (a command line or user
changed in place). A Go process is matched against the targets in
the file's order; the first that matches traces it, if it has somewhere to
attach (its helper, else a pprof endpoint): only a process matched and not
traced yet is asked for that, as ``ps`` asks. A process is known by its
pid and start time, so a restart (a new pid, or the same pid reused) is a
new process, attached on the next scan; one that exits ends its task.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, TextIO

import trio

from livetrace._agent.budget import Budget
from livetrace._agent.compact import Compaction, compact_lake
from livetrace._agent.config import AgentConfig, Target
from livetrace._agent.policies import Traced, to_table, trace_process
from livetrace._agent.rows import KEY, TABLES, TIME
from livetrace._agent.ship import Shipper
from livetrace._agent.sinks import ClickHouseSink, LakeSink, Sink
from livetrace._agent.spool import Spool, private_dir
from livetrace._agent.store import Store, local_path
from livetrace._attach.announce import read_announcements
from livetrace._attach.processes import NO_SUCH_PROCESS, BuildInfoCache, Kind, ProcessInfo, attach_routes
from livetrace._attach.processes import scan as process_table
from livetrace._errors import LivetraceError
from livetrace._nursery import open_nursery
from livetrace._plural import plural
from livetrace._protocol.text import shown

__all__ = ["Agent", "match"]

# A session that fails at once (the process is exiting, its helper busy) is
# tried again on a later scan, no sooner than this.
RETRY_AFTER = 1.0
FINAL_FLUSH = 10.0
# How long a stopping agent gives its sessions to end as the helper ends one (a legacy segment, a
# pprof window, a flight capture's tail), before it cuts them off.
STOP_GRACE = 20.0
# How often the local lake's closed days are compacted (compact.py), the first time at start.
COMPACT_EVERY = 3600.0
# A full scan at least this often, even if no process's name or start time changed.
FULL_SCAN_EVERY = 30.0

Probe = dict[int, bytes]
PF_KTHREAD = 0x00200000  # /proc/PID/stat's flags: a kernel thread (kworkers rename themselves as they work)


def process_table_probe(proc: Path = Path("/proc")) -> Probe:
    """Each process's name and start time (from /proc/PID/stat, one read
    each; the time its CPU used, which changes, left out; kernel threads
    left out, as a scan leaves them out): what a process
    starting, ending or exec'ing another program changes, at a tenth of the
    CPU of a scan (psutil's several files a process, and the build
    information of new executables)."""
    out: Probe = {}
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            with open(os.path.join(entry.path, "stat"), "rb") as f:
                stat = f.read()
        except OSError:
            continue  # exited meanwhile
        # pid (comm) state ppid pgrp session tty tpgid flags ... starttime is the 22nd field; comm may hold spaces
        # and parentheses.
        end = stat.rfind(b")")
        fields = stat[end + 2 :].split(maxsplit=20)
        if len(fields) < 20 or not fields[6].isdigit():
            out[int(entry.name)] = stat  # not as Linux writes it: whole
        elif not int(fields[6]) & PF_KTHREAD:
            out[int(entry.name)] = stat[:end] + b" " + fields[19]
    return out


def match(target: Target, row: ProcessInfo) -> bool:
    """Whether every selector the target gives matches the process."""
    build = row.build
    if target.module is not None:
        module = build.main.path if build is not None and build.main is not None else (build.path if build else "")
        if not fnmatchcase(module, target.module):
            return False
    if target.executable is not None:
        names = {row.name, *(os.path.basename(row.command[0]) for _ in row.command[:1])}
        if not any(fnmatchcase(n, target.executable) for n in names if n):
            return False
    return target.user is None or row.user == target.user


@dataclass
class _Process:
    row: ProcessInfo
    target: Target
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)


class Agent:
    def __init__(self, config: AgentConfig, err: TextIO, sinks: list[Sink] | None = None) -> None:
        self.config = config
        self.err = err
        private_dir(config.state_dir)
        self.spool = Spool(config.spool_dir, config.spool_max, config.host)
        self.sinks = sinks if sinks is not None else open_sinks(config)
        where = config.sinks.captures
        self.captures = Store.open(where) if where is not None and local_path(where) is None else None
        self.shipper = Shipper(self.spool, self.sinks, self.note)
        self.budget = Budget(config.budget, self.note)
        self.traced: dict[tuple[int, float | None], _Process] = {}
        self._failed: dict[tuple[int, float | None], float] = {}
        self._probe: Probe | None = None  # the process table's probe before the last full scan
        self._last_full = -math.inf
        self._rescan = True  # the next scan is a full one whatever the probe says
        self._build_infos = BuildInfoCache()  # every executable read once while it runs, not once a scan
        self._rows: dict[int, ProcessInfo] = {}  # the process table as the last scan left it
        self._pending: dict[str, list[dict[str, Any]]] = {}
        self.stopping = trio.Event()
        self._me = {"host": config.host, "service": "livetrace-agent", "pid": os.getpid(), "go_version": ""}

    def say(self, line: str) -> None:
        print(f"livetrace agent: {line}", file=self.err, flush=True)

    def note(self, event: str, count: int, detail: str, about: dict[str, Any] | None = None) -> None:
        """A row of the agent's own record (``agent_log``), and a line on standard error."""
        self.say(f"{event}: {detail}" + (f" ({count})" if count else ""))
        who = about or {**self._me, "policy": "", "labels": "{}"}
        row = {**who, KEY: "", TIME: time.time_ns() // 1000, "event": event, "count": count, "detail": detail}
        self.emit("agent_log", [row])

    def emit(self, table: str, rows: list[dict[str, Any]]) -> None:
        """Rows for the spool: they go in at the next flush, an entry per table."""
        self._pending.setdefault(table, []).extend(rows)

    def take_pending(self) -> dict[str, list[dict[str, Any]]]:
        """The rows made since the last call (in the event loop's thread, where they are made)."""
        self._record_drops()
        pending, self._pending = self._pending, {}
        return pending

    def spool_rows(self, pending: dict[str, list[dict[str, Any]]]) -> None:
        """Rows into the spool, an entry per table (blocking: a worker thread's)."""
        for table, rows in pending.items():
            self.spool.put(table, to_table(table, rows))

    async def _spool_and_ship(self) -> None:
        while True:
            if pending := self.take_pending():  # no thread woken for nothing (sampled: rows a window)
                await trio.to_thread.run_sync(self.spool_rows, pending)
            await self.shipper.flush()
            await trio.sleep(self.config.flush_interval)

    def _record_drops(self) -> None:
        dropped = self.spool.unrecorded()
        if not dropped:
            return
        self.spool.recorded(dropped)  # before the row: the row's own put may drop more, counted next time
        for table, rows in sorted(dropped.items()):
            self.note("spool_dropped", rows, f"{rows} {table} rows dropped: the spool was full (oldest first)")

    # -- running --

    async def run(self, duration: float | None = None, once: bool = False, stop: trio.Event | None = None) -> None:
        """Scan, trace and ship until ``duration`` has passed or ``stop`` is
        set (with ``once``, scan only once); then send what the spool holds
        (for at most FINAL_FLUSH seconds: what is left waits for the next start)."""
        stop = trio.Event() if stop is None else stop
        entries = len(self.spool.entries())
        self.say(
            f"{plural(entries, 'entry', 'entries')} in the spool at {self.config.spool_dir}; sinks: "
            + ", ".join(s.name for s in self.sinks)
        )
        try:
            async with open_nursery() as nursery:
                nursery.start_soon(self._spool_and_ship)
                nursery.start_soon(self.budget.run)
                lake = local_path(self.config.lake)
                if lake is not None:
                    nursery.start_soon(self._compactions, lake)
                scans = trio.CancelScope()
                nursery.start_soon(self._scans, nursery, once, scans)
                with trio.move_on_after(duration if duration is not None else math.inf):
                    await stop.wait()
                # No new sessions; each one stopped as the helper stops one, so its last generation is summarized.
                scans.cancel()
                self.stopping.set()
                with trio.move_on_after(STOP_GRACE):
                    while self.traced:  # noqa: ASYNC110  # each task removes itself
                        await trio.sleep(0.05)
                nursery.cancel_scope.cancel()
            self.spool_rows(self.take_pending())
            with trio.move_on_after(FINAL_FLUSH):
                left = await self.shipper.flush()
                if left:
                    self.say(f"{plural(left, 'entry', 'entries')} left in the spool for the next start")
        finally:  # an error too: a sink's connection (ClickHouse, OTLP's exporter) is let go of
            for sink in self.sinks:
                sink.close()

    async def _compactions(self, lake: Path) -> None:
        while True:
            self.compacted(await trio.to_thread.run_sync(compact_lake, lake, TABLES))
            await trio.sleep(COMPACT_EVERY)

    def compacted(self, done: Compaction) -> None:
        """The agent's record of a compaction of the lake."""
        if done.partitions:
            self.note(
                "lake_compacted",
                done.files,
                f"{plural(done.partitions, 'partition')} of closed days: {done.files} files into "
                f"{done.partitions}, {done.rows:,} rows",
            )
        for why in done.skipped:
            self.note("lake_compaction_skipped", 0, why)

    async def _scans(self, nursery: trio.Nursery, once: bool, scope: trio.CancelScope) -> None:
        with scope:
            while True:
                await self.scan_if_changed(nursery)
                if once:
                    return
                await trio.sleep(self.config.scan_interval)

    async def scan_if_changed(self, nursery: trio.Nursery) -> bool:
        """A :meth:`scan` if the process table's probe changed since the
        last one (of only the processes whose probe changed), or a full one
        when it is due anyway (see the module's doc); whether it scanned."""
        probe = await trio.to_thread.run_sync(process_table_probe)
        now = trio.current_time()
        # A failed session is tried again, at a full scan, while its process lives.
        full = self._rescan or bool(self._failed) or self._probe is None or now - self._last_full >= FULL_SCAN_EVERY
        if not full and probe == self._probe:
            return False
        old, self._probe = self._probe or {}, probe
        if full:
            self._last_full = now
            await self.scan(nursery)
        else:
            await self.scan(nursery, {pid: stat for pid, stat in probe.items() if old.get(pid) != stat})
        return True

    async def scan(self, nursery: trio.Nursery, changed: Probe | None = None) -> None:
        """Scan the process table (``changed``: only those processes, the
        rest as the last scan saw them, those the probe no longer has gone),
        attach to the processes to trace, and end the tasks of those gone."""
        self._rescan = False
        if changed is None:
            rows = await trio.to_thread.run_sync(process_table, None, self._build_infos)
        else:
            fresh = await trio.to_thread.run_sync(process_table, list(changed), self._build_infos) if changed else []
            me, probe = os.getpid(), self._probe or {}
            rows = sorted(
                [r for pid, r in self._rows.items() if pid in probe and pid not in changed]
                + [r for r in fresh if r.pid != me and r.reason != NO_SUCH_PROCESS],
                key=lambda r: r.pid,
            )
        self._rows = {r.pid: r for r in rows}
        alive = {(r.pid, r.started) for r in rows}
        self._failed = {key: at for key, at in self._failed.items() if key in alive}  # gone: never tried again
        for key, proc in list(self.traced.items()):
            if key not in alive:
                proc.scope.cancel()
        now = trio.current_time()
        wanted: list[tuple[ProcessInfo, Target]] = []
        for row in rows:
            key = (row.pid, row.started)
            if row.kind is not Kind.GO or key in self.traced or self._failed.get(key, -1e9) + RETRY_AFTER > now:
                continue
            target = next((t for t in self.config.targets if match(t, row)), None)
            if target is not None:
                wanted.append((row, target))
        if not wanted:
            return
        # Only these are asked for their ways in, as ps asks: its probe of /debug/pprof/trace holds the
        # process's tracer for a moment, which a process traced already needs for its windows, and which a
        # process no target names is left alone with.
        await attach_routes([row for row, _ in wanted], await trio.to_thread.run_sync(read_announcements))
        for row, target in wanted:
            if row.attach is None:
                self._rescan = True  # asked again at the next scan: its helper may be starting
                continue
            key = (row.pid, row.started)
            self.traced[key] = _Process(row, target)
            nursery.start_soon(self._trace, key)

    async def _trace(self, key: tuple[int, float | None]) -> None:
        proc = self.traced[key]
        row, target = proc.row, proc.target
        assert row.attach is not None
        pprof = row.helper is None
        # The process chose its own name (prctl): made text (no stray bytes, controls escaped) for rows and lines.
        service = target.service or shown(row.name) or "unknown"
        policy = "sampled" if pprof else target.policy.value
        provenance = {
            "host": self.config.host,
            "service": service,
            "pid": row.pid,
            "go_version": row.build.go_version if row.build is not None else "",
            "policy": policy,
            "labels": json.dumps(dict(target.labels), sort_keys=True),
        }
        traced = Traced(
            address=row.attach,
            pprof=pprof,
            target=target,
            provenance=provenance,
            captures=self.config.captures_dir,
            emit=self.emit,
            budget=self.budget,
            note=lambda event, count, detail: self.note(event, count, detail, provenance),
            stop=self.stopping,
            store=self.captures,
        )
        how = f"through {shown(row.attach)}" + (
            " (pprof: sampled only)" if pprof and target.policy.value != policy else ""
        )
        self.budget.add(row.pid)
        self.note("attached", 0, f"{service} pid {row.pid} {how}, policy {policy}", provenance)
        why = "cut off: the agent stopped"  # what stays if the agent's own end cancels this task
        try:
            with proc.scope:  # cancelled by a scan that finds the process gone
                await trace_process(traced)
            why = "the agent stopped" if self.stopping.is_set() else "the process ended"
        except LivetraceError as e:
            why = str(e)
            self._failed[key] = trio.current_time()
        except OSError as e:
            why = f"{e.strerror or e}"
            self._failed[key] = trio.current_time()
        except Exception as e:  # a bug that one process's session hit: it ends that session, not the agent
            why = f"unexpected error: {type(e).__name__}: {e}"
            self._failed[key] = trio.current_time()
        finally:
            self.budget.remove(row.pid)
            del self.traced[key]
            self._rescan = True  # a process that exec'd itself keeps its name and start time: scanned anew
            self.note("detached", 0, f"{service} pid {row.pid}: {shown(why)}", provenance)  # no await: safe here


def open_sinks(config: AgentConfig) -> list[Sink]:
    sinks: list[Sink] = [LakeSink(config.lake)]
    if config.sinks.clickhouse:
        sinks.append(ClickHouseSink(config.sinks.clickhouse))
    if config.sinks.otlp:
        from livetrace._agent.otlp import OtlpSink  # the OpenTelemetry SDK: only when configured

        sinks.append(OtlpSink(config.sinks.otlp))
    return sinks
