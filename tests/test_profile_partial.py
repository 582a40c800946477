"""A trace that can be read only in part (cut short, as a trace file of a
service that died is; or broken within a generation): `livetrace profile`
makes of it what `go tool trace -pprof=KIND` makes (the generations read
whole; Go gives up where none is), says so on standard error and exits 1;
`export --to perfetto` keeps the same generations."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from livetrace._cli.exits import EXIT_INCOMPLETE, EXIT_OK
from livetrace._cli.main import main
from livetrace._go.toolchain import go_env
from livetrace._trace.version import HEADER_SIZE
from livetrace._views.pprof import PROFILE_KINDS

from .conftest import go_binary
from .gopprof import read_totals

CORPUS = Path(__file__).parent / "corpus"
# Five generations of tasks, regions, logs and two goroutines' waits (corpus/runtime/README.md).
GENERATIONS = CORPUS / "runtime" / "go126-generations.trace"
LEGACY = CORPUS / "legacy" / "go-testdata" / "user_task_region_1_21_good"


def variants(data: bytes) -> list[tuple[str, bytes]]:
    """The trace whole, cut at eight points, and broken (a few bytes
    changed) in six ways."""
    out = [("whole", data)]
    out += [(f"cut-{k}of9", data[: len(data) * k // 9]) for k in range(1, 9)]
    for seed in range(6):
        rng = random.Random(seed)
        broken = bytearray(data)
        for _ in range(3):
            broken[rng.randrange(HEADER_SIZE, len(broken))] = rng.randrange(256)
        out.append((f"broken-{seed}", bytes(broken)))
    return out


def go_pprof(kind: str, trace: Path) -> bytes | None:
    """Go's profile of the trace, or None where Go gives up on it."""
    r = subprocess.run(
        [str(go_binary("1.27")), "tool", "trace", f"-pprof={kind}", str(trace)],
        capture_output=True,
        env=go_env(),
        timeout=120,
    )
    return r.stdout if r.returncode == 0 else None


@pytest.mark.slow
@pytest.mark.go
@pytest.mark.parametrize("kind", PROFILE_KINDS)
def test_a_profile_of_a_trace_read_in_part_is_gos(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcomes = set()
    for name, data in variants(GENERATIONS.read_bytes()):
        trace, out = tmp_path / f"{name}.trace", tmp_path / f"{name}.pb.gz"
        trace.write_bytes(data)
        theirs = go_pprof(kind, trace)
        code = main(["profile", str(trace), "--kind", kind, "-o", str(out)])
        err = capsys.readouterr().err
        if theirs is None:
            assert code == EXIT_INCOMPLETE and not out.exists(), (name, err)
            assert err.startswith("livetrace: error: "), name
            outcomes.add("none")
            continue
        assert read_totals(out.read_bytes()) == read_totals(theirs), name
        if code == EXIT_OK:
            assert "warning" not in err, name
            outcomes.add("whole")
        else:
            assert code == EXIT_INCOMPLETE, name
            assert err.startswith("livetrace: warning: the trace is incomplete: "), name
            assert "the profile is of the generations before it" in err, name
            outcomes.add("part")
    assert outcomes == {"whole", "part", "none"}, "each outcome is seen"


@pytest.mark.slow
@pytest.mark.go
def test_a_legacy_trace_cut_short_is_given_up_as_go_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Go 1.21 trace's stacks are in its footer: cut, it has nothing whole."""
    trace, out = tmp_path / "cut.trace", tmp_path / "cut.pb.gz"
    data = LEGACY.read_bytes()
    trace.write_bytes(data[: len(data) // 2])
    assert go_pprof("sched", trace) is None
    assert main(["profile", str(trace), "--kind", "sched", "-o", str(out)]) == EXIT_INCOMPLETE
    assert capsys.readouterr().err.startswith("livetrace: error: trace ends ") and not out.exists()


def test_a_timeline_of_a_trace_cut_short_keeps_the_generations_read_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = GENERATIONS.read_bytes()
    sizes = {}
    for name, part in [("whole", data), ("cut", data[: len(data) * 2 // 3])]:
        trace, out = tmp_path / f"{name}.trace", tmp_path / f"{name}.pftrace"
        trace.write_bytes(part)
        code = main(["export", str(trace), "--to", "perfetto", "-o", str(out)])
        err = capsys.readouterr().err
        assert (code, "warning: the trace is incomplete" in err) == (
            (EXIT_OK, False) if name == "whole" else (EXIT_INCOMPLETE, True)
        )
        sizes[name] = out.stat().st_size
    assert 0 < sizes["cut"] < sizes["whole"]
