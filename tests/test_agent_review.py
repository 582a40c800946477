"""The agent against what a traced process chooses: its own name (prctl
PR_SET_NAME: ``../../x``, bytes that are not UTF-8) names no file outside
the agent's captures, and one process's session failing in a way nobody
foresaw ends that session, not the agent."""

from __future__ import annotations

import io
import os
from pathlib import Path

import psutil
import pytest
import trio

from livetrace._agent.agent import Agent, _Process
from livetrace._agent.config import parse_config
from livetrace._attach.processes import Kind, ProcessInfo
from livetrace._go.demo import run_demo
from livetrace._nursery import open_nursery
from tests.agentrun import lake_rows
from tests.conftest import demo_exe
from tests.test_agent_store import memory_store, names

pytestmark = [pytest.mark.once, pytest.mark.usefixtures("agent_umask")]

HOSTILE = "../../x\udcff"  # what psutil reads from /proc/PID/comm after prctl(PR_SET_NAME, b"../../x\xff")


def config_text(state: Path, target: str = "") -> str:
    return (
        f'[agent]\nstate_dir = "{state}"\nscan_interval = "1h"\nflush_interval = "0.5s"\n'
        '[agent.budget]\ncpu_per_process = 1.0\nmemory = "8GiB"\n'
        f'[[target]]\nexecutable = "no-such-executable-here"\n{target}'
    )


async def test_one_session_failing_unexpectedly_ends_it_not_the_agent(tmp_path: Path) -> None:
    # The attach address is what the process announced; this one is no address connect() takes (a ValueError).
    config = parse_config(config_text(tmp_path / "state"))
    agent = Agent(config, io.StringIO())
    row = ProcessInfo(4242, "svc", ["/srv/x"], HOSTILE, 1.0, Kind.GO, pprof="tcp:127.0.0.1:99999")
    key = (row.pid, row.started)
    agent.traced[key] = _Process(row, config.targets[0])
    await agent._trace(key)
    assert key not in agent.traced and key in agent._failed  # tried again no sooner than RETRY_AFTER
    [detached] = [r for r in agent.take_pending()["agent_log"] if r["event"] == "detached"]
    assert "unexpected error: ValueError" in detached["detail"]
    assert detached["service"] == "../../x\\udcff"  # text: rows of it can be written


@pytest.mark.slow
async def test_a_process_named_like_a_path_keeps_its_captures_in_captures(tmp_path: Path) -> None:
    """A sampled window of a real process, as the agent names it after the
    process's own name, lands in captures/ and is moved to the store under
    that name; the agent's rows (the name as text) reach the lake."""
    state = tmp_path / "state" / "deep"
    store = memory_store("traces")
    config = parse_config(config_text(state, 'policy = "sampled"\nwindow = "1s"\nevery = "2s"\n'))
    async with run_demo(demo_exe("1.26")) as demo:
        err = io.StringIO()
        agent = Agent(config, err)
        agent.captures = store
        # The scan knows the process by its pid and start time: as psutil gives them, the name as prctl set it.
        started = psutil.Process(demo.pid).create_time()
        row = ProcessInfo(demo.pid, "svc", [str(demo_exe("1.26"))], HOSTILE, started, Kind.GO, pprof=demo.http)
        key = (row.pid, row.started)
        stop = trio.Event()
        async with open_nursery() as nursery:
            nursery.start_soon(agent.run, None, True, stop)
            agent.traced[key] = _Process(row, config.targets[0])
            nursery.start_soon(agent._trace, key)
            with trio.move_on_after(60):
                while not store.files("", ".trace"):  # a filesystem has no event
                    await trio.sleep(0.2)
            stop.set()
    traces = [n for n in names(store) if n.endswith(".trace")]
    assert traces, err.getvalue()
    assert all(n.startswith(f"traces/%2E.%2F..%2Fx%5Cudcff-{demo.pid}-") for n in traces), traces
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_relative_to(state)]
    assert not outside, outside
    assert list(tmp_path.rglob("*.trace")) == []  # moved, none left here
    paths = [p for (p,) in lake_rows(state / "lake", "captures", "path")]
    assert paths and all(p.startswith("mock://traces/%2E.%2F..%2Fx") for p in paths), paths
    services = {s for (s,) in lake_rows(state / "lake", "agent_log", "service", f"pid = {demo.pid}")}
    assert services == {"../../x\\udcff"}
    assert os.listdir(tmp_path) == ["state"]
