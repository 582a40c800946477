"""The agent takes the process table (a scan, as `livetrace ps` takes it:
several files a process, and each new executable's build information) only
when a cheap probe of it (each process's name and start time, one read of
/proc/PID/stat) changed, when the last scan left something to try again,
and at least every FULL_SCAN_EVERY seconds: an idle agent's scans every 2 s
were most of its CPU, on every host whatever it traces."""

from __future__ import annotations

import functools
import io
import subprocess
from pathlib import Path

import psutil
import pytest
import trio

from livetrace._agent import agent as agent_module
from livetrace._agent.agent import FULL_SCAN_EVERY, Agent, process_table_probe
from livetrace._agent.config import parse_config
from livetrace._nursery import open_nursery
from tests.test_agent_review import config_text


def fake_proc(root: Path, stats: dict[str, bytes]) -> Path:
    """A directory laid out as /proc: PID/stat for each, and an entry that is no process's."""
    for pid, stat in stats.items():
        (root / pid).mkdir(parents=True, exist_ok=True)
        (root / pid / "stat").write_bytes(stat)
    (root / "self").mkdir(exist_ok=True)
    return root


def stat(pid: int, comm: bytes, start: int, utime: int = 0, flags: int = 4194560) -> bytes:
    return b"%d (%s) S 1 1 1 0 -1 %d 10 0 0 0 %d 0 0 0 20 0 1 0 %d 1000 100\n" % (pid, comm, flags, utime, start)


def test_the_probe_is_each_processs_name_and_start_time_not_its_cpu_time(tmp_path: Path) -> None:
    kworker = stat(5, b"kworker/0:0-events", 10, flags=0x04208060)  # PF_KTHREAD: it renames itself as it works
    proc = fake_proc(tmp_path, {"5": kworker, "7": stat(7, b"a) (b c", 500), "9": stat(9, b"svc", 600)})
    first = process_table_probe(proc)
    assert set(first) == {7, 9}
    assert first[7].endswith(b"(a) (b c 500")
    fake_proc(tmp_path, {"7": stat(7, b"a) (b c", 500, utime=99)})  # only its CPU time moved
    assert process_table_probe(proc) == first
    fake_proc(tmp_path, {"7": stat(7, b"other", 500)})  # exec'd another program: the same pid and start
    assert process_table_probe(proc) != first
    fake_proc(tmp_path, {"7": stat(7, b"a) (b c", 501)})  # a new process of the same pid and name
    assert process_table_probe(proc) != first


def test_the_probe_sees_a_process_start_and_end() -> None:
    with subprocess.Popen(["sleep", "60"]) as child:
        try:
            assert child.pid in process_table_probe()
        finally:
            child.kill()
    assert child.pid not in process_table_probe()


@pytest.mark.slow  # a scan of the host's processes takes a second
async def test_a_full_scan_only_when_the_probe_changed_or_something_waits_or_it_is_due(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = fake_proc(tmp_path / "proc", {"7": stat(7, b"svc", 500)})
    monkeypatch.setattr(agent_module, "process_table_probe", functools.partial(process_table_probe, proc))
    agent = Agent(parse_config(config_text(tmp_path / "state")), io.StringIO())
    async with open_nursery() as nursery:
        assert await agent.scan_if_changed(nursery)  # the first
        assert not await agent.scan_if_changed(nursery)
        fake_proc(proc, {"8": stat(8, b"new", 700)})
        assert await agent.scan_if_changed(nursery)
        assert not await agent.scan_if_changed(nursery)
        fake_proc(proc, {"8": stat(8, b"exec'd", 700)})
        assert await agent.scan_if_changed(nursery)
        # A failure waits to be tried again: every scan is full while it does (the process is alive).
        with subprocess.Popen(["sleep", "60"]) as child:
            try:
                agent._failed = {(child.pid, psutil.Process(child.pid).create_time()): trio.current_time()}
                assert await agent.scan_if_changed(nursery)  # an unchanged probe: the failure's doing
                assert await agent.scan_if_changed(nursery)
            finally:
                child.kill()
                child.wait()
        assert await agent.scan_if_changed(nursery)  # the process is gone: this scan forgets its failure
        assert agent._failed == {}
        assert not await agent.scan_if_changed(nursery)
        agent._last_full -= FULL_SCAN_EVERY
        assert await agent.scan_if_changed(nursery)
        assert not await agent.scan_if_changed(nursery)
