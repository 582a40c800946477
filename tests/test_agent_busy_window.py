"""A sampled process whose tracer is someone else's as a window starts (a
pprof endpoint's one tracer is its users' between windows, and any
`livetrace ps` on the host holds it for a moment) keeps its session: the
window is skipped and recorded, and the next one taken as planned. The
fleet test once saw its pprof service attached twice: a window that found
the tracer held ended the process's task, and the next scan attached it
again."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import trio

from livetrace._agent.agent import Agent
from livetrace._agent.config import parse_config
from livetrace._nursery import open_nursery
from tests.agentrun import lake_rows, named_copy
from tests.plainsvc import plain_exe, run_plain

pytestmark = [pytest.mark.slow, pytest.mark.once, pytest.mark.usefixtures("agent_umask")]


async def test_a_window_on_a_tracer_held_by_someone_else_is_skipped_and_the_process_kept(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = parse_config(
        f'[agent]\nstate_dir = "{state}"\nscan_interval = "0.5s"\nflush_interval = "0.5s"\n'
        '[agent.budget]\ncpu_per_process = 1.0\nmemory = "8GiB"\n[[target]]\nservice = "held"\n'
        'executable = "held-win*"\npolicy = "sampled"\nwindow = "1s"\nevery = "1.5s"\n'
    )
    err = io.StringIO()
    # The service traces itself: every window finds its tracer held.
    async with run_plain(named_copy(plain_exe("1.26"), tmp_path, "held-win"), hold_tracer=True) as svc:
        agent = Agent(config, err)
        stop = trio.Event()
        async with open_nursery() as nursery:
            nursery.start_soon(agent.run, None, False, stop)
            with trio.fail_after(60):
                # three windows' time: skipped each, or (the fault) the process let go of and attached again
                while err.getvalue().count("window_skipped") < 3 and err.getvalue().count("attached:") < 2:
                    await trio.sleep(0.1)
            stop.set()
    log = lake_rows(state / "lake", "agent_log", "event, pid, detail")
    said = "\n".join(f"{e} {p}: {d}" for e, p, d in log)
    assert [e for e, p, _ in log if e == "attached" and p == svc.pid] == ["attached"], said
    skipped = [d for e, p, d in log if e == "window_skipped" and p == svc.pid]
    assert len(skipped) >= 3 and all("execution tracer already enabled" in d for d in skipped), said
    details = [d for e, p, d in log if e == "detached" and p == svc.pid]
    assert len(details) == 1 and details[0].endswith(": the agent stopped"), said
