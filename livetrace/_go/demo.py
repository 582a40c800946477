"""Running the bundled Go demo service as a child process."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import trio

from livetrace._errors import LivetraceError

READY_TIMEOUT = 30.0


@dataclass
class DemoProcess:
    process: trio.Process
    trace_address: str
    http: str
    go_version: str
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@asynccontextmanager
async def run_demo(
    exe: Path, *, args: Sequence[str] = (), env: dict[str, str] | None = None, listen: str | None = None
) -> AsyncIterator[DemoProcess]:
    """Start the demo service listening on a fresh unix socket (or ``listen``),
    wait until it is ready, and stop it with SIGTERM on the way out."""
    with tempfile.TemporaryDirectory(prefix="livetrace-demo-") as tmp:
        listen = listen or f"unix:{tmp}/trace.sock"
        log_path = Path(tmp) / "demo.log"
        async with await trio.open_file(log_path, "wb") as log:
            proc = await trio.lowlevel.open_process(
                [str(exe), "-listen", listen, *args],
                stdout=subprocess.PIPE,
                stderr=log.wrapped,
                env={**os.environ, **(env or {})},
            )
        try:
            demo = await _wait_ready(proc, log_path)
            yield demo
        finally:
            with trio.CancelScope(shield=True):
                await _stop(proc)


async def first_line(proc: trio.Process) -> str:
    """The first line a child process prints on its standard output (a
    service's "ready" line), or what it printed before exiting or READY_TIMEOUT."""
    assert proc.stdout is not None
    buf = b""
    with trio.move_on_after(READY_TIMEOUT):
        while b"\n" not in buf:
            data = await proc.stdout.receive_some(4096)
            if not data:
                break
            buf += data
    return buf.split(b"\n", 1)[0].decode(errors="replace")


async def _wait_ready(proc: trio.Process, log_path: Path) -> DemoProcess:
    line = await first_line(proc)
    if not line.startswith("livetrace-demo ready"):
        log = (await trio.Path(log_path).read_text(errors="replace")).strip()
        raise LivetraceError(f"the demo service did not start: {log or line or 'no output'}")
    fields = dict(f.split("=", 1) for f in line.split()[2:])
    return DemoProcess(proc, fields["trace"], fields["http"], fields["go"], log_path)


async def _stop(proc: trio.Process) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        with trio.move_on_after(10):
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    if proc.stdout is not None:
        await proc.stdout.aclose()
