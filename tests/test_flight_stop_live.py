"""``livetrace flight`` against the demo service when triggers never stop
firing, and on a disk that fills up (issue 24, findings 8 and 10): a bounded
number of captures with unique names, a prompt stop, and a full disk said,
retried and written once there is room, the recorder going on meanwhile."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from .conftest import cli, demo, go_tool_trace
from .test_flight_dumps import fill, tmpfs

WAIT = 60.0
SUMMARY = re.compile(
    r"livetrace: stopped: ([\d,]+) triggers? fired "
    r"\((\d+) started a capture(?:, (\d+) joined one)?(?:, \d+ in cooldown)?\); "
    r"([\d,]+) captures? written"
)


class Stderr:
    """The command's standard error, read as it comes."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        assert proc.stderr is not None
        stream = proc.stderr
        self._thread = threading.Thread(target=lambda: self.lines.extend(iter(stream.readline, "")), daemon=True)
        self._thread.start()

    async def wait_for(self, pattern: str) -> str:
        with trio.fail_after(WAIT):
            while True:
                found = [line for line in self.lines if re.search(pattern, line)]
                if found:
                    return found[0]
                await trio.sleep(0.2)

    def text(self) -> str:
        self._thread.join(60)
        return "".join(self.lines)


async def interrupt(proc: subprocess.Popen[str]) -> float:
    """Ctrl-C; the seconds until the command exited."""
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    await trio.to_thread.run_sync(lambda: proc.wait(timeout=300))
    return time.monotonic() - t0


def captures_in(out: Path) -> list[dict[str, Any]]:
    """Each JSON in out, checked: its traces are there and no other capture's."""
    infos = [json.loads(j.read_text()) | {"json": j.name} for j in sorted(out.glob("*.json"))]
    traces = sorted(p.name for p in out.glob("*.trace"))
    listed = [t for i in infos for t in i["traces"]]
    assert sorted(listed) == traces  # each trace belongs to exactly one JSON, none left over
    for i in infos:
        stem = i["json"][: -len(".json")]
        assert all(t.startswith(stem + ".") for t in i["traces"])
    return infos


@pytest.mark.slow
@pytest.mark.once
async def test_cooldown_0_with_triggers_firing_all_the_time(tmp_path: Path) -> None:
    # The finding: 1679 captures in 15 s, files overwritten, and 59.7 s to stop.
    out = tmp_path / "captures"
    async with demo("1.26", args=["-workers", "1"]) as d:
        proc = cli(
            "flight", d.trace_address, "--keep", "2s", "--after", "0.5s", "--cooldown", "0s",
            "-t", "runnable>1us", "-t", "gc>1us", "-o", str(out),
        )  # fmt: skip
        try:
            err = Stderr(proc)
            await err.wait_for("wrote ")
            await trio.sleep(8)
            took = await interrupt(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
    text = err.text()
    assert proc.returncode == 0, text
    assert took < 15, text  # a loaded 2-core machine: a few seconds is the aim
    infos = captures_in(out)
    assert text.count("livetrace: wrote ") == len(infos)  # every capture said written is there: none overwritten
    assert len(infos) <= 40  # one capture at a time, each 0.5 s of tail and more
    m = SUMMARY.search(text)
    assert m is not None, text
    fired, started, joined, written = (int(g.replace(",", "")) if g else 0 for g in m.groups())
    assert joined > started and written == len(infos) <= started
    assert sum(i["joined"] for i in infos) <= joined < fired
    go_tool_trace("1.26", out / infos[-1]["traces"][0])


@pytest.mark.slow
@pytest.mark.once
async def test_a_full_disk_is_said_and_retried_and_recording_goes_on(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "64m") as disk:
        filler = fill(disk)
        async with demo("1.26", args=["-workers", "1"]) as d:
            proc = cli(
                "flight", d.trace_address, "--keep", "1s", "--after", "0.5s", "--cooldown", "0s",
                "-t", "runnable>1us", "-o", str(disk),
            )  # fmt: skip
            try:
                err = Stderr(proc)
                line = await err.wait_for("is not written yet")
                assert re.fullmatch(
                    "livetrace: the capture of trigger runnable>1us is not written yet: "
                    rf"{re.escape(str(disk))}/\S+\.trace: No space left on device: the disk is full; retrying in 1 s\n",
                    line,
                ), line
                await err.wait_for("retrying in 2 s")  # still recording, still trying
                filler.unlink()
                await err.wait_for("livetrace: wrote ")
                took = await interrupt(proc)
            finally:
                if proc.poll() is None:
                    proc.kill()
        text = err.text()
        assert proc.returncode == 0 and took < 15, text
        m = SUMMARY.search(text)
        assert m is not None and int(m[4].replace(",", "")) >= 1, text
        infos = captures_in(disk)
        assert len(infos) == int(m[4].replace(",", ""))
        go_tool_trace("1.26", disk / infos[0]["traces"][0])
