"""Whose listening ports a scan reads, and how often it reads the host's
socket tables. /proc/net/tcp held some 16,000 sockets on a CI machine (a
fraction of a second a read, far more under load); psutil's per-process
net_connections re-read every table for each Go process of the host, so
the agent's first scan, with a few Go processes about, overran the fleet
test's 30 s. Now the ports of only the processes asked about are read, and
the tables once for them all."""

from __future__ import annotations

import builtins
import io
import os
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from livetrace._agent.agent import Agent
from livetrace._agent.config import parse_config
from livetrace._attach.announce import AnnounceScan
from livetrace._attach.processes import BuildInfoCache, Kind, ProcessInfo, attach_routes, scan
from livetrace._nursery import open_nursery
from tests.conftest import demo
from tests.test_agent_review import config_text

TABLES = ("/proc/net/tcp", "/proc/net/tcp6")


@contextmanager
def table_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts the opens of the socket tables (psutil's and livetrace's alike go through open())."""
    counts: Counter[str] = Counter()
    real = builtins.open

    def counting(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file) in TABLES:
            counts[str(file)] += 1
        return real(file, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(builtins, "open", counting)
        yield counts


class _NotPprof(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_error(404)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def listeners(n: int) -> Iterator[list[tuple[int, int]]]:
    """n processes (sleep), each holding one listening socket of its own
    (served here, a quick 404 for the probe): (pid, port) each."""
    with ExitStack() as stack:
        held = []
        for _ in range(n):
            server = ThreadingHTTPServer(("127.0.0.1", 0), _NotPprof)
            stack.callback(server.server_close)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            stack.callback(server.shutdown)
            child = subprocess.Popen(["sleep", "60"], pass_fds=[server.fileno()])
            stack.callback(child.wait)
            stack.callback(child.kill)
            held.append((child.pid, server.server_address[1]))
        yield held


@pytest.mark.slow  # the host's socket tables, read: a second on a busy CI machine
@pytest.mark.once
async def test_the_ports_of_several_processes_cost_one_read_of_the_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with listeners(3) as held:
        rows = [ProcessInfo(pid, "u", ["sleep"], "sleep", None, Kind.GO) for pid, _ in held]
        with table_reads(monkeypatch) as reads:
            await attach_routes(rows, AnnounceScan(tmp_path / "announce"))
    assert [row.ports for row in rows] == [[("127.0.0.1", port)] for _, port in held]
    assert all(row.pprof is None and not row.unprobed for row in rows)
    assert reads == dict.fromkeys(TABLES, 1)


@pytest.mark.slow
@pytest.mark.once
async def test_a_scan_reads_no_ports_of_a_go_process_no_target_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = Agent(parse_config(config_text(tmp_path / "state")), io.StringIO())
    async with demo("1.26"):  # its HTTP service listens on a TCP port
        with table_reads(monkeypatch) as reads:
            async with open_nursery() as nursery:
                await agent.scan(nursery)
    assert not reads
    assert not agent.traced


@pytest.mark.slow
@pytest.mark.once
async def test_scans_with_one_cache_read_a_running_executable_once(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: Counter[str] = Counter()
    real = os.open

    def counting(path: Any, *args: Any, **kwargs: Any) -> int:
        opened[str(path)] += 1
        return real(path, *args, **kwargs)

    async with demo("1.26") as service:
        exe = f"/proc/{service.pid}/exe"
        with monkeypatch.context() as m:
            m.setattr(os, "open", counting)
            alone = [scan([service.pid])[0].kind for _ in range(3)]
            reads_alone, opened[exe] = opened[exe], 0
            cache = BuildInfoCache()  # as the agent keeps one (Agent._build_infos)
            kept = [scan([service.pid], cache)[0].kind for _ in range(3)]
            scan(None, cache)  # a full scan sees it too
    assert alone == kept == [Kind.GO] * 3
    assert reads_alone == 3
    assert opened[exe] == 1  # four scans, one read
