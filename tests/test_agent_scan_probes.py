"""The agent's scan asks only a process it is about to trace for its ways
in. `livetrace ps`'s probe of a port's /debug/pprof/trace holds the
process's tracer for a moment: asked of a process traced already at every
scan, it took the tracer its own next window needed (the fleet test's pprof
service, attached twice); asked of every other Go process on the host, it
started their tracers every scan, for no target of the agent's."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest
import trio

from tests.agentrun import agent, lake_rows, plain_named
from tests.test_agent_fleet import write_config

pytestmark = [pytest.mark.slow, pytest.mark.once]


def sockets(pid: int) -> set[str]:
    """The sockets process pid holds (``socket:[INODE]``): listed, not read, so polled cheaply."""
    held = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):  # closed meanwhile
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith("socket:"):
                held.add(link)
    return held


async def test_the_scan_probes_no_process_traced_already_nor_one_no_target_names(tmp_path: Path) -> None:
    state = tmp_path / "state"
    target = '[[target]]\nexecutable = "probed-traced*"\npolicy = "sampled"\nwindow = "1s"\nevery = "600s"\n'
    conf = write_config(tmp_path / "agent.toml", state, target)
    async with (
        plain_named("1.26", tmp_path, "probed-traced") as traced,
        plain_named("1.26", tmp_path, "probed-other") as other,
        agent(conf, tmp_path / "agent.log") as a,
    ):
        # The first window's capture is recorded (its row is written once its session has closed: the
        # trace file exists from the window's start, before its request has connected); the next window
        # is 10 minutes away: the agent has no session open, and its only sink is the local lake.
        await a.until(lambda t: bool(lake_rows(state / "lake", "captures", "source")), 60, "the first window kept")
        await trio.sleep(1)
        assert a.proc is not None
        # Stopped, neither service answers: a probe of either holds a socket of the agent's for its timeout
        # (1 s). A socket of another process's (say a parallel test's ps) is not the agent's.
        for s in (traced, other):
            os.kill(s.pid, signal.SIGSTOP)
        before, seen = sockets(a.proc.pid), set()
        try:
            with trio.move_on_after(4):  # some eight scans
                while True:
                    seen |= sockets(a.proc.pid)
                    await trio.sleep(0.02)
        finally:
            for s in (traced, other):
                os.kill(s.pid, signal.SIGCONT)
        assert seen <= before, f"the agent's scans opened {len(seen - before)} sockets:\n{a.text()[-2000:]}"
        assert await a.stop() == 0
