"""Between two full scans, the agent looks at only the processes whose
probe changed (a process started, or exec'd another program), and keeps
what the last scan saw of the rest: a host whose process table changes
every scan interval (builds, cron jobs, short-lived workers) had the agent
take the whole table (psutil's several files a process) every 2 s."""

from __future__ import annotations

import functools
import io
import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from livetrace._agent import agent as agent_module
from livetrace._agent.agent import FULL_SCAN_EVERY, Agent, process_table_probe
from livetrace._agent.config import parse_config
from livetrace._attach.processes import BuildInfoCache, ProcessInfo
from livetrace._attach.processes import scan as process_table
from livetrace._nursery import open_nursery
from tests.test_agent_review import config_text
from tests.test_agent_scan_skip import fake_proc, stat

pytestmark = [pytest.mark.slow, pytest.mark.once]  # a full scan of the host's processes takes a second


@contextmanager
def sleeping(n: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    children = [subprocess.Popen(["sleep", "60"]) for _ in range(n)]
    try:
        yield children
    finally:
        for c in children:
            c.kill()
            c.wait()


async def test_between_full_scans_only_the_processes_whose_probe_changed_are_scanned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[list[int] | None] = []

    def scan(pids: Iterable[int] | None = None, cache: BuildInfoCache | None = None) -> list[ProcessInfo]:
        asked.append(None if pids is None else list(pids))
        return process_table(pids, cache)

    monkeypatch.setattr(agent_module, "process_table", scan)
    proc = tmp_path / "proc"
    monkeypatch.setattr(agent_module, "process_table_probe", functools.partial(process_table_probe, proc))
    agent = Agent(parse_config(config_text(tmp_path / "state")), io.StringIO())
    with sleeping(3) as (a, b, c):
        fake_proc(proc, {str(a.pid): stat(a.pid, b"sleep", 500), str(b.pid): stat(b.pid, b"sleep", 600)})
        async with open_nursery() as nursery:
            assert await agent.scan_if_changed(nursery)  # the first: full
            assert asked == [None]
            assert {a.pid, b.pid} <= set(agent._rows)
            seen_b = agent._rows[b.pid]

            fake_proc(proc, {str(c.pid): stat(c.pid, b"sleep", 700)})  # started
            assert await agent.scan_if_changed(nursery)
            assert asked[-1] == [c.pid]
            assert agent._rows[b.pid] is seen_b  # as the last scan saw it
            assert agent._rows[c.pid] == process_table([c.pid])[0]  # as a full scan sees it

            fake_proc(proc, {str(b.pid): stat(b.pid, b"exec'd", 600)})  # another program, the same pid and start
            (proc / str(a.pid) / "stat").unlink()
            (proc / str(a.pid)).rmdir()  # ended
            assert await agent.scan_if_changed(nursery)
            assert asked[-1] == [b.pid]
            assert a.pid not in agent._rows and {b.pid, c.pid} <= set(agent._rows)

            assert not await agent.scan_if_changed(nursery)  # nothing changed: no scan
            agent._last_full -= FULL_SCAN_EVERY
            assert await agent.scan_if_changed(nursery)  # due: full
            assert asked[-1] is None and len(asked) == 4
