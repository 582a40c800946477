"""A Go service that never opted in to livetrace (tests/goprogs/plainsvc):
no helper, and net/http/pprof only when asked for. Built with any of the
suite's toolchains, run as a child process, stopped on the way out."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import trio

from livetrace._go.demo import first_line
from livetrace._go.toolchain import go_env
from tests.conftest import ROOT, go_binary, locked

SOURCE = ROOT / "tests" / "goprogs" / "plainsvc"


@dataclass
class PlainService:
    process: trio.Process
    pid: int
    pprof: str  # HOST:PORT of net/http/pprof, "" without it


def plain_exe(version: str) -> Path:
    """The service built with Go ``version`` ("1.26", "1.19", ...)."""
    return _build(go_binary(version))


@cache
def _build(go: Path) -> Path:
    out = ROOT / ".cache" / "plainsvc-builds"
    version = subprocess.run([str(go), "env", "GOVERSION"], capture_output=True, text=True, check=True).stdout.strip()
    exe = out / f"plainsvc-{version}"
    # Each run builds afresh (the sources may have changed), but not over a
    # copy that another xdist worker is running: one at a time, and by rename.
    with locked(out / f".lock-{version}"):
        tmp = exe.with_name(f"{exe.name}.tmp{os.getpid()}")
        proc = subprocess.run(
            [str(go.absolute()), "build", "-o", str(tmp), "."], cwd=SOURCE, env=go_env(), capture_output=True, text=True
        )
        assert proc.returncode == 0, f"building plainsvc with {go} failed:\n{proc.stderr}"
        os.replace(tmp, exe)
    return exe


def plain_service(
    version: str, *, pprof: bool = True, hold_tracer: bool = False
) -> AbstractAsyncContextManager[PlainService]:
    """Run the service built with Go ``version``; ``pprof`` serves
    net/http/pprof on a loopback port, ``hold_tracer`` has it trace itself
    so that nobody else can."""
    return run_plain(plain_exe(version), pprof=pprof, hold_tracer=hold_tracer)


@asynccontextmanager
async def run_plain(exe: Path, *, pprof: bool = True, hold_tracer: bool = False) -> AsyncIterator[PlainService]:
    """Run ``exe``, the service or a copy of it (as plain_service)."""
    args = [str(exe)]
    if pprof:
        args += ["-pprof", "127.0.0.1:0"]
    if hold_tracer:
        args.append("-hold-tracer")
    # Nothing reads its standard error (a failure to start): a pipe could only fill.
    proc = await trio.lowlevel.open_process(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        line = await first_line(proc)
        assert line.startswith("plainsvc ready "), f"plainsvc did not start: {line!r}"
        fields = dict(f.split("=", 1) for f in line.split()[2:])
        yield PlainService(proc, int(fields["pid"]), fields["pprof"])
    finally:
        with trio.CancelScope(shield=True):
            proc.kill()
            await proc.wait()
            if proc.stdout is not None:
                await proc.stdout.aclose()
