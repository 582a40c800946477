"""Legacy traces (Go 1.5 to 1.21): `--dump legacy` prints what Go 1.21.13's
`go tool trace -d` prints, for Go's canned traces of every version and for
fresh traces of the demo service built with Go 1.19 and 1.21; any chunking
gives the same events; bad input is a typed error."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from livetrace import TraceFormatError
from livetrace._dump import legacy_lines
from livetrace._gotool import go_env
from livetrace._legacy_decoder import LegacyDecoder

from . import textform
from .conftest import go_binary, record_demo_traces
from .mutate import mutate

CORPUS = textform.CORPUS.parent / "legacy" / "go-testdata"
FILES = sorted(p for p in CORPUS.iterdir() if p.is_file()) if CORPUS.is_dir() else []


def go_legacy_dump(path: Path) -> subprocess.CompletedProcess[bytes]:
    """Go 1.21.13's `go tool trace -d`. Go 1.5/1.6 traces need a program
    binary too; -d prints no stacks, so any executable does."""
    cmd = [str(go_binary("1.21")), "tool", "trace", "-d"]
    if path.read_bytes()[:16].startswith(b"go 1.5 trace"):
        cmd.append(shutil.which("true") or sys.executable)
    return subprocess.run([*cmd, str(path)], capture_output=True, env=go_env(), timeout=600)


def our_dump(data: bytes, pieces: int = 1) -> list[bytes]:
    d = LegacyDecoder()
    step = max(1, len(data) // pieces)
    for i in range(0, len(data), step):
        d.feed(data[i : i + step])
    return list(legacy_lines(d.close().events))


def assert_same_dump(ours: list[bytes], go: list[bytes]) -> None:
    """Identical, but for the order of lines with equal times: Go's merge
    breaks such ties in map order."""
    if ours == go:
        return
    time = lambda line: line.split(b" ", 1)[0]  # noqa: E731
    assert [time(x) for x in ours] == [time(x) for x in go]
    assert Counter(ours) == Counter(go)


@pytest.mark.parametrize("path", [p for p in FILES if "unordered" not in p.name], ids=lambda p: p.name)
def test_canned_traces_dump_as_go_1_21_does(path: Path) -> None:
    go = go_legacy_dump(path)
    assert go.returncode == 0, go.stderr
    assert_same_dump(our_dump(path.read_bytes()), go.stdout.splitlines())


def test_unordered_trace_fails_as_in_go() -> None:
    path = CORPUS / "stress_1_5_unordered"
    go = go_legacy_dump(path)
    assert go.returncode == 1 and b"time stamps out of order" in go.stderr
    with pytest.raises(TraceFormatError, match="^time stamps out of order$"):
        our_dump(path.read_bytes())
    out = subprocess.run([sys.executable, "-m", "livetrace", "decode", str(path), "--dump", "legacy"],
                         capture_output=True, text=True)
    assert out.returncode == 1 and out.stderr.strip() == "livetrace: error: time stamps out of order"


@pytest.fixture(scope="module")
def legacy_demo_traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return record_demo_traces(["1.19", "1.21"], tmp_path_factory.mktemp("legacy-demo"), 1.0)


@pytest.mark.parametrize("version", ["1.19", "1.21"])
def test_fresh_demo_traces_dump_as_go_1_21_does(version: str, legacy_demo_traces: dict[str, Path]) -> None:
    path = legacy_demo_traces[version]
    go = go_legacy_dump(path)
    assert go.returncode == 0, go.stderr
    ours = subprocess.run([sys.executable, "-m", "livetrace", "decode", str(path), "--dump", "legacy"],
                          capture_output=True, timeout=600)
    assert ours.returncode == 0, ours.stderr
    assert len(go.stdout.splitlines()) > 10_000
    assert_same_dump(ours.stdout.splitlines(), go.stdout.splitlines())


def test_any_chunking_gives_the_same_events() -> None:
    data = (CORPUS / "user_task_region_1_21_good").read_bytes()
    whole = our_dump(data)
    assert our_dump(data, pieces=len(data)) == whole  # one byte at a time
    rng = random.Random(7)
    for path in FILES[:6]:
        data = path.read_bytes()
        if "unordered" in path.name:
            continue
        assert our_dump(data, pieces=rng.randint(2, 50)) == our_dump(data), path.name


@pytest.mark.parametrize("data, message", [
    (b"", "empty trace"),
    (b"go 1.21 tra", "ends inside its 16-byte header"),
    (b"go 1.20 trace\x00\x00\x00", "unsupported trace file version 1.20"),
    (b"not a trace at all", "not a Go execution trace"),
    (b"go 1.21 trace\x00\x00\x00\x41\x00", "ends in the middle of an event"),
    (b"go 1.21 trace\x00\x00\x00\x3f", "unknown event type 63 at offset 0x10"),
    (b"go 1.21 trace\x00\x00\x00", "trace is empty"),
])
def test_bad_input_is_a_typed_error(data: bytes, message: str) -> None:
    with pytest.raises(TraceFormatError, match=message):
        our_dump(data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_mutated_legacy_traces_decode_or_fail_cleanly(data: st.DataObject) -> None:
    small = [p for p in FILES if p.stat().st_size < 200_000]
    path = data.draw(st.sampled_from(small))
    buf = mutate(data, path.read_bytes(), keep=16)
    try:
        our_dump(buf, pieces=data.draw(st.integers(1, 3)))
    except TraceFormatError:
        pass


def test_modern_commands_point_legacy_traces_to_the_legacy_dump() -> None:
    out = subprocess.run([sys.executable, "-m", "livetrace", "decode", str(CORPUS / "http_1_11_good")],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "--dump legacy" in out.stderr
