"""Small Go services of tests/goprogs that serve net/http/pprof and do
little else, built with any of the suite's toolchains and run as child
processes: quietsvc (the whole of net/http/pprof, and nothing to trace)
and notracesvc (net/http/pprof without its trace, as etcd 3.4 serves it)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import trio

from livetrace._go.demo import first_line
from livetrace._go.toolchain import go_env
from tests.conftest import ROOT, go_binary


@dataclass
class SmallService:
    pid: int
    pprof: str  # HOST:PORT


def small_exe(name: str, version: str) -> Path:
    """tests/goprogs/NAME built with Go ``version`` ("1.26", "1.21", ...)."""
    return _build(name, go_binary(version))


@cache
def _build(name: str, go: Path) -> Path:
    out = ROOT / ".cache" / "smallsvc-builds"
    out.mkdir(parents=True, exist_ok=True)
    version = subprocess.run([str(go), "env", "GOVERSION"], capture_output=True, text=True, check=True).stdout.strip()
    exe = out / f"{name}-{version}"
    # Built under a name of its own, then renamed: pytest-xdist's workers may build it at once.
    part = exe.with_name(f"{exe.name}.{os.getpid()}.part")
    proc = subprocess.run(
        [str(go.absolute()), "build", "-o", str(part), "."],
        cwd=ROOT / "tests" / "goprogs" / name,
        env=go_env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, f"building {name} with {go} failed:\n{proc.stderr}"
    os.replace(part, exe)
    return exe


@asynccontextmanager
async def small_service(name: str, version: str) -> AsyncIterator[SmallService]:
    """Run tests/goprogs/NAME, built with Go ``version``, until the block ends."""
    proc = await trio.lowlevel.open_process([str(small_exe(name, version))], stdout=subprocess.PIPE)
    try:
        line = await first_line(proc)
        assert line.startswith(f"{name} ready "), f"{name} did not start: {line!r}"
        words = line.split()[2:]
        if name == "quietsvc":  # "quietsvc ready ADDR"
            yield SmallService(proc.pid, words[0])
        else:
            fields = dict(w.split("=", 1) for w in words)
            yield SmallService(int(fields["pid"]), fields["pprof"])
    finally:
        with trio.CancelScope(shield=True):
            proc.kill()
            await proc.wait()
            assert proc.stdout is not None
            await proc.stdout.aclose()
