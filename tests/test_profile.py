"""`livetrace profile` against `go tool trace -pprof=KIND`: `go tool pprof
-raw` of both profiles, normalized (tests/gopprof.py's raw_profile: samples
sorted, location ids replaced by the locations), is the same, for demo
traces from Go 1.26 and 1.21 and a Go test trace; and live, a profile of the
demo service that Go's pprof reads."""

from __future__ import annotations

import os
import re
import socket
import time
from pathlib import Path

import pytest
import trio

from livetrace._cli.main import main
from livetrace._cli.sources import is_file_source

from . import textform
from .conftest import cli, demo, go_binary
from .gopprof import PROFILE_KINDS, go_trace_pprof, raw_profile

_SAMPLE = re.compile(r"(\d+) (\d+) @ (.*)")


def our_profile(trace: Path, kind: str, out: Path) -> Path:
    assert main(["profile", str(trace), "--kind", kind, "-o", str(out)]) == 0
    return out


def assert_same_raw(go: str, ours: str, tie_ns: int = 0) -> None:
    """The same -raw output; with tie_ns, a sample's time may be off by up
    to tie_ns per interval (its count, stack and everything else the
    same): where a legacy trace has events at equal times, Go's reader moves
    them 1 ns apart in an order of its own, and ours in another."""
    if go == ours or not tie_ns:
        assert ours == go
        return
    go_lines, our_lines = go.split("\n"), ours.split("\n")
    assert len(go_lines) == len(our_lines)
    for g, o in zip(go_lines, our_lines, strict=True):
        mg, mo = _SAMPLE.fullmatch(g), _SAMPLE.fullmatch(o)
        if mg is None or mo is None:
            assert o == g
            continue
        assert (mo[1], mo[3]) == (mg[1], mg[3]) and abs(int(mo[2]) - int(mg[2])) <= tie_ns * int(mg[1]), (o, g)


def check_against_go(
    trace: Path, kind: str, tmp_path: Path, oracles: tuple[str, ...] = ("1.27",), tie_ns: int = 0
) -> None:
    ours = raw_profile(go_binary("1.27"), our_profile(trace, kind, tmp_path / "ours.pb.gz"))
    assert "Samples:" in ours
    for version in oracles:
        theirs = tmp_path / f"go{version}.pb.gz"
        theirs.write_bytes(go_trace_pprof(go_binary(version), kind, trace))
        assert_same_raw(raw_profile(go_binary("1.27"), theirs), ours, tie_ns)


@pytest.mark.slow  # the demo traces are recorded by a Go service: slow, not go
@pytest.mark.parametrize("kind", PROFILE_KINDS)
def test_profiles_of_a_go_1_26_demo_trace_are_gos(kind: str, demo_traces: dict[str, Path], tmp_path: Path) -> None:
    # Go 1.26.6's tool as well as 1.27.3's: the oracle's own version must not matter. That is
    # Go's side, checked on the compiled core's pass; the twin's pass holds ours to one oracle.
    oracles = ("1.27",) if os.environ.get("LIVETRACE_PURE_PYTHON") == "1" else ("1.27", "1.26")
    check_against_go(demo_traces["1.26"], kind, tmp_path, oracles)


@pytest.mark.slow
@pytest.mark.parametrize("kind", PROFILE_KINDS)
def test_profiles_of_a_go_1_21_demo_trace_are_gos(
    kind: str, legacy_demo_traces: dict[str, Path], tmp_path: Path
) -> None:
    check_against_go(legacy_demo_traces["1.21"], kind, tmp_path, tie_ns=1)


@pytest.mark.go
def test_profiles_of_a_go_test_trace_are_gos(tmp_path: Path) -> None:
    (t,) = [t for t in textform.all_tests() if t.name == "go122-annotations-stress"]
    trace = tmp_path / "t.trace"
    trace.write_bytes(t.data)
    for kind in PROFILE_KINDS:
        check_against_go(trace, kind, tmp_path)


@pytest.mark.slow
@pytest.mark.once
async def test_a_live_profile_is_read_by_go_pprof(tmp_path: Path) -> None:
    out = tmp_path / "live.pb.gz"
    async with demo("1.26", args=["-workers", "1"]) as d:
        p = cli("profile", d.trace_address, "--duration", "2", "--kind", "sched", "-o", str(out))
        deadline = time.monotonic() + 60
        while p.poll() is None and time.monotonic() < deadline:
            await trio.sleep(0.1)
        _, err = p.communicate(timeout=5)
    assert p.returncode == 0, err
    assert "wrote " in err and "(sched)" in err
    raw = raw_profile(go_binary("1.26"), out)
    samples = [line for line in raw.split("\n") if _SAMPLE.fullmatch(line)]
    assert samples and "PeriodType: trace count" in raw and "contentions/count delay/nanoseconds" in raw


def test_a_socket_given_by_its_path_is_an_address_not_a_file(tmp_path: Path) -> None:
    path = tmp_path / "svc.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        assert not is_file_source(str(path))
    assert is_file_source(str(tmp_path / "missing.trace")) and not is_file_source("unix:/run/svc.sock")
