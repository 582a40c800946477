"""Ctrl-C in the first pprof window of `livetrace record http://...`
keeps that window (issue 26, point 2). A quiet service sends nothing until
the runtime's first buffer fills or the window ends (net/http holds back
even the response's headers), so the session had not begun when a Ctrl-C
came: record printed nothing, said "interrupted", exited 130 and left no
file. Now the banner and the progress line come at once, and a Ctrl-C
before the response starts, in the middle of the window or at its end
waits for the window to end and keeps it, as in any later window."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from livetrace._files import decode_batches
from livetrace._trace.model.batch import EventBatch
from tests.smallsvc import small_service

WINDOW = 3.0
# When the Ctrl-C comes, in seconds after the banner: before the response
# starts, in the middle of the window, and at its end.
PHASES = {"before-the-response": 0.05, "middle": WINDOW / 2, "end": WINDOW - 0.05}


async def _record_then_ctrl_c(address: str, out: Path, after: float) -> tuple[int, str]:
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-m", "livetrace", "record", address, "-o", str(out), "--window", f"{WINDOW:g}", "--progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    said = b""
    try:
        # The banner comes at once: well before the first window could end.
        with trio.fail_after(WINDOW + 30):
            while b"Ctrl-C stops" not in said:
                data = await proc.stderr.receive_some()
                assert data, f"record ended before its banner: {said!r}"
                said += data
        with trio.move_on_after(after):
            while data := await proc.stderr.receive_some():
                said += data
        proc.send_signal(signal.SIGINT)
        with trio.fail_after(WINDOW + 60):
            while data := await proc.stderr.receive_some():
                said += data
            code = await proc.wait()
    finally:
        with trio.CancelScope(shield=True):
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            await proc.stderr.aclose()
    return code, said.decode()


@pytest.mark.slow
@pytest.mark.once
@pytest.mark.parametrize("phase", list(PHASES))
@pytest.mark.parametrize("version", ["1.21", "1.26"])
async def test_ctrl_c_in_the_first_window_keeps_it(version: str, phase: str, tmp_path: Path) -> None:
    out = tmp_path / "sigint.trace"
    async with small_service("quietsvc", version) as svc:
        code, said = await _record_then_ctrl_c(f"http://{svc.pprof}", out, PHASES[phase])
    assert code == 0, said
    assert "waiting for pprof window 1" in said  # the progress line, before the window came
    # (Go 1.22+ may have sent a generation by then, and the session begun.)
    assert "stopping at the end of the first pprof window" in said or "end of the current pprof window" in said, said
    assert "trace complete (ended: client-stop)" in said, said
    # The one window, whole: a trace that decodes to its end, and no second file.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sigint.trace"]
    assert sum(len(b) for b in decode_batches(out) if isinstance(b, EventBatch)) > 0
