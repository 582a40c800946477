"""A view that falls behind says what the helper shed: top's snapshots,
profile's and flight's summaries. The consumer is stopped (SIGSTOP) while
the service goes on, so the helper's small queue overflows and it sheds
whole generations; top's stall outlasts its --duration, so the helper's
last gap comes after top's last spans, just before the end."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import trio

from .conftest import demo

pytestmark = [pytest.mark.slow, pytest.mark.once]

STALL = 4.5
ATTACHED = re.compile(r"watching|profiling|attached to")
SHED = re.compile(r"the helper shed (\d+) generations? \(([\d,.]+) MB of trace\) because this consumer fell behind")


def stalled(cmd: list[str], stop_with_sigint: bool) -> tuple[str, str]:
    """Run the command, stop it for STALL seconds once it has attached, go on; its stdout and stderr."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stderr is not None
    err: list[str] = []
    attached = threading.Event()

    def read_err() -> None:
        assert p.stderr is not None
        for line in p.stderr:
            err.append(line)
            if ATTACHED.search(line):
                attached.set()

    reader = threading.Thread(target=read_err, daemon=True)
    reader.start()
    out: list[str] = []
    out_reader = threading.Thread(target=lambda: out.append(p.stdout.read()), daemon=True)  # type: ignore[union-attr]
    out_reader.start()
    try:
        assert attached.wait(60), "".join(err)
        time.sleep(0.5)
        p.send_signal(signal.SIGSTOP)
        time.sleep(STALL)
        p.send_signal(signal.SIGCONT)
        if stop_with_sigint:
            time.sleep(1.5)
            p.send_signal(signal.SIGINT)
        rc = p.wait(120)
    finally:
        p.kill()
    reader.join(10)
    out_reader.join(10)
    assert rc == 0, "".join(err)
    return "".join(out), "".join(err)


def shed(err: str) -> int:
    m = SHED.search(err)
    assert m, err
    return int(m[1])


async def test_views_that_fall_behind_say_what_the_helper_shed(tmp_path: Path) -> None:
    lt = [sys.executable, "-m", "livetrace"]
    async with demo("1.26", args=["-workers", "1", "-queue-mb", "1"]) as d:
        a = d.trace_address
        out, err = await trio.to_thread.run_sync(
            stalled, [*lt, "top", a, "--format", "json", "--duration", "3", "--interval", "0.5"], False
        )
        snaps = [json.loads(line) for line in out.splitlines()]
        # Each snapshot counts what was shed since the one before.
        assert sum(s["shed_generations"] for s in snaps) == shed(err) > 0, (snaps, err)

        _, err = await trio.to_thread.run_sync(
            stalled, [*lt, "profile", a, "--duration", "3", "--kind", "sched", "-o", str(tmp_path / "p.pb.gz")], False
        )
        assert shed(err) > 0

        cmd = [*lt, "flight", a, "--keep", "2s", "-t", "gc>100s", "-o", str(tmp_path / "fl"), "--no-status"]
        _, err = await trio.to_thread.run_sync(stalled, cmd, True)
        assert shed(err) > 0 and "stopped: 0 triggers fired" in err
