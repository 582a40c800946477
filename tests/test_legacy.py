"""Legacy traces (Go 1.5 to 1.21): `--dump legacy` prints what Go 1.21.13's
`go tool trace -d` prints, for Go's canned traces of every version and for
fresh traces of the demo service built with Go 1.19 and 1.21; `--dump parsed`
prints what Go 1.27.3's `go tool trace -d=parsed` prints (1.11 to 1.21) or a
consistent event stream in the same model (1.5 to 1.10); any chunking gives
the same events; bad input is a typed error."""

from __future__ import annotations

import itertools
import random
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace import TraceFormatError
from livetrace._cli.render.dump import legacy_lines, parsed_text
from livetrace._go.toolchain import go_env
from livetrace._trace.legacy.convert import legacy_events
from livetrace._trace.legacy.fast import exact_events
from livetrace._trace.legacy.read import LegacyDecoder
from livetrace._trace.model.events import Kind
from livetrace._trace.version import GO1_5

from . import textform
from .conftest import demo_exe, examples, go_binary, go_dump
from .mutate import mutate

CORPUS = textform.CORPUS.parent / "legacy" / "go-testdata"
FILES = sorted(p for p in CORPUS.iterdir() if p.is_file()) if CORPUS.is_dir() else []
# Go 1.23+ converts these versions to the modern model; 1.5 to 1.10 it refuses.
CONVERTED_BY_GO = re.compile(r"_1_(11|19|21)_")

# These compare the pure-Python decoder with Go's tools, and the compiled
# fast path with it, whichever run this is: the compiled-core run is enough.
pytestmark = pytest.mark.once


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

    def time(line: bytes) -> bytes:
        return line.split(b" ", 1)[0]

    assert [time(x) for x in ours] == [time(x) for x in go]
    assert Counter(ours) == Counter(go)


@pytest.mark.go
@pytest.mark.parametrize("path", [p for p in FILES if "unordered" not in p.name], ids=lambda p: p.name)
def test_canned_traces_dump_as_go_1_21_does(path: Path) -> None:
    go = go_legacy_dump(path)
    assert go.returncode == 0, go.stderr
    assert_same_dump(our_dump(path.read_bytes()), go.stdout.splitlines())


@pytest.mark.go
def test_unordered_trace_fails_as_in_go() -> None:
    path = CORPUS / "stress_1_5_unordered"
    go = go_legacy_dump(path)
    assert go.returncode == 1 and b"time stamps out of order" in go.stderr
    with pytest.raises(TraceFormatError, match=r"^time stamps out of order$"):
        our_dump(path.read_bytes())
    out = subprocess.run(
        [sys.executable, "-m", "livetrace", "decode", str(path), "--dump", "legacy"], capture_output=True, text=True
    )
    assert out.returncode == 1 and out.stderr.strip() == "livetrace: error: time stamps out of order"


@pytest.mark.slow
@pytest.mark.parametrize("version", ["1.19", "1.21"])
def test_fresh_demo_traces_dump_as_go_1_21_does(version: str, legacy_demo_traces: dict[str, Path]) -> None:
    path = legacy_demo_traces[version]
    go = go_legacy_dump(path)
    assert go.returncode == 0, go.stderr
    ours = subprocess.run(
        [sys.executable, "-m", "livetrace", "decode", str(path), "--dump", "legacy"], capture_output=True, timeout=600
    )
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


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty trace"),
        (b"go 1.21 tra", "ends inside its 16-byte header"),
        (b"go 1.20 trace\x00\x00\x00", "unsupported trace file version 1.20"),
        (b"not a trace at all", "not a Go execution trace"),
        (b"go 1.21 trace\x00\x00\x00\x41\x00", "ends in the middle of an event"),
        (b"go 1.21 trace\x00\x00\x00\x3f", "unknown event type 63 at offset 0x10"),
        (b"go 1.21 trace\x00\x00\x00", "trace is empty"),
    ],
)
def test_bad_input_is_a_typed_error(data: bytes, message: str) -> None:
    with pytest.raises(TraceFormatError, match=message):
        our_dump(data)


@given(st.data())
def test_fuzz_mutated_legacy_traces_decode_or_fail_cleanly(data: st.DataObject) -> None:
    small = [p for p in FILES if p.stat().st_size < 200_000]
    path = data.draw(st.sampled_from(small))
    buf = mutate(data, path.read_bytes(), keep=16)
    try:
        d = LegacyDecoder()
        step = max(1, len(buf) // data.draw(st.integers(1, 3)))
        for i in range(0, len(buf), step):
            d.feed(buf[i : i + step])
        trace = d.close()
        list(legacy_lines(trace.events))
        for e in legacy_events(trace):  # and in the modern model
            parsed_text(e)
    except TraceFormatError:
        pass


def our_parsed_dump(data: bytes) -> list[str]:
    d = LegacyDecoder()
    d.feed(data)
    return "\n".join(map(parsed_text, legacy_events(d.close()))).split("\n")


_TIME = re.compile(r" Time=(-?\d+)")


def canonical_parsed(lines: list[str]) -> list[str]:
    """A -d=parsed dump with ties made canonical. Go's merge of the Ps'
    streams breaks equal times in map order, and the modern model then moves
    each tied event 1 ns on, so a tie shows as a run of events 1 ns apart
    whose order varies from run to run of Go's own tool. Within each such
    run, sort the events (with their stack lines) and hand the times back in
    order."""
    events: list[list[str]] = []
    for line in lines:
        if line.startswith("M="):
            events.append([line])
        else:
            events[-1].append(line)
    out: list[str] = []
    run: list[tuple[int, str]] = []

    def flush() -> None:
        for t, key in zip([t for t, _ in run], sorted(k for _, k in run), strict=True):
            out.append(key.replace(" Time=_", f" Time={t}", 1))
        run.clear()

    for ev in events:
        m = _TIME.search(ev[0])
        assert m, ev[0]
        t = int(m.group(1))
        if run and t != run[-1][0] + 1:
            flush()
        run.append((t, "\n".join([_TIME.sub(" Time=_", ev[0], 1), *ev[1:]])))
    flush()
    return out


@pytest.mark.go
@pytest.mark.parametrize("path", [p for p in FILES if CONVERTED_BY_GO.search(p.name)], ids=lambda p: p.name)
def test_canned_traces_convert_as_go_1_27_does(path: Path) -> None:
    status, go, err = go_dump(path, "parsed")
    assert status == 0, err
    ours = our_parsed_dump(path.read_bytes())
    assert ours[0] == "M=-1 P=-1 G=-1 Sync Time=-1 N=1" and ours[-1].endswith(" N=2")
    assert canonical_parsed(ours) == canonical_parsed(go.rstrip("\n").split("\n"))


@pytest.mark.slow
@pytest.mark.parametrize("version", ["1.19", "1.21"])
def test_fresh_demo_traces_convert_as_go_1_27_does(version: str, legacy_demo_traces: dict[str, Path]) -> None:
    path = legacy_demo_traces[version]
    status, go, err = go_dump(path, "parsed")
    assert status == 0, err
    ours = subprocess.run(
        [sys.executable, "-m", "livetrace", "decode", str(path), "--dump", "parsed"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ours.returncode == 0, ours.stderr
    go_lines = go.rstrip("\n").split("\n")
    assert len(go_lines) > 10_000
    assert canonical_parsed(ours.stdout.rstrip("\n").split("\n")) == canonical_parsed(go_lines)


GO_STATES = ("Undetermined", "NotExist", "Runnable", "Running", "Waiting", "Syscall")


@pytest.mark.go
@pytest.mark.parametrize(
    "path", [p for p in FILES if not CONVERTED_BY_GO.search(p.name) and "unordered" not in p.name], ids=lambda p: p.name
)
def test_traces_go_no_longer_reads_convert_to_a_consistent_stream(path: Path) -> None:
    """Go 1.5 to 1.10: no Go tool converts these, so check what the model
    promises: a Sync at each end, strictly rising times, and every
    goroutine and proc transition starting from the state the previous one
    left (or from Undetermined, for what the trace's opening snapshot says)."""
    status, _, err = go_dump(path, "parsed")
    assert status == 1 and "unknown or unsupported trace version" in err
    d = LegacyDecoder()
    d.feed(path.read_bytes())
    events = list(legacy_events(d.close()))
    assert [e.kind for e in (events[0], events[-1])] == [Kind.SYNC, Kind.SYNC]
    assert all(a.time < b.time for a, b in itertools.pairwise(events))
    state: dict[tuple[str, int], str] = {}
    kinds = Counter(e.kind for e in events)
    for e in events:
        if e.kind != Kind.STATE_TRANSITION:
            continue
        st_ = e.state_transition()
        key = (st_.resource.kind, st_.resource.id)
        if st_.old != "Undetermined":
            assert state.get(key, "NotExist") == st_.old, (e, st_)
        state[key] = st_.new
    assert kinds[Kind.STATE_TRANSITION] > 20 and kinds[Kind.METRIC] > 0


def test_the_default_dump_of_a_legacy_trace_is_the_modern_model() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "livetrace", "decode", str(CORPUS / "http_1_11_good")], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("M=-1 P=-1 G=-1 Sync Time=-1 N=1\n")


@pytest.mark.slow
def test_a_binary_names_the_pcs_of_a_pcs_only_trace(legacy_demo_traces: dict[str, Path]) -> None:
    """Go 1.5/1.6 stacks are bare return addresses. No binary of those
    survives here, so take a fresh Go 1.21 trace (whose frames hold the
    call's PC, one before the return address), keep only the return
    addresses, and have the demo binary that wrote it name them again: the
    names must be the footer's (but where inlining shares a PC: there
    addr2line names the caller)."""
    from livetrace._go.symbols import symbolize

    d = LegacyDecoder()
    d.feed(legacy_demo_traces["1.21"].read_bytes())
    trace = d.close()
    expected: dict[int, tuple[bytes, bytes, int]] = {}
    for vals in trace.stacks.values():
        for k in range(0, len(vals), 4):
            pc, func, file, line = vals[k : k + 4]
            if pc:
                expected.setdefault(pc + 1, (trace.strings.get(func, b""), trace.strings.get(file, b""), line))
    trace.version, trace.frames = GO1_5, {}
    trace.stacks = {sid: tuple(pc + 1 for pc in vals[0::4] if pc) for sid, vals in trace.stacks.items()}
    named = symbolize(trace, demo_exe("1.21"), go_binary("1.21"))
    assert named == len(expected) > 50
    got = {pc: (trace.strings[f], trace.strings[fl], ln) for pc, (f, fl, ln) in trace.frames.items()}
    same = sum(got[pc] == want for pc, want in expected.items())
    assert same > 0.85 * len(expected), [(pc, got[pc], want) for pc, want in expected.items() if got[pc] != want][:5]
    lines = "\n".join(map(parsed_text, legacy_events(trace)))
    assert "main.allocator" in lines and "livetrace-demo/main.go:" in lines


def test_decode_takes_a_binary_for_go_1_5_traces(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "livetrace",
            "decode",
            str(CORPUS / "http_1_5_good"),
            "--binary",
            str(tmp_path / "missing"),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "no such file; give the program binary" in out.stderr


# The compiled fast path for 1.11 to 1.21 and its twin (the decoder and converter above).
needs_core = pytest.mark.compiled_core  # skips where the core was not built (fails in CI): see conftest.py
FAST_FILES = [p for p in FILES if CONVERTED_BY_GO.search(p.name)]


def both_ways(
    data: bytes, kinds: frozenset[Kind] | None = None, *, offset: int = 0, syncs: int = 0
) -> tuple[list[str], list[str]]:
    out = []
    for compiled in (True, False):
        exact = exact_events(data, kinds, compiled, offset=offset, syncs=syncs)
        out.append([parsed_text(e) for b in exact.batches for e in b])
    return out[0], out[1]


@needs_core
# The stress traces (350 kB) take seconds each through the twin: integration set.
@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=pytest.mark.slow) if p.stat().st_size > 200_000 else p for p in FAST_FILES],
    ids=lambda p: p.name,
)
def test_the_compiled_legacy_path_gives_the_twins_events(path: Path) -> None:
    data = path.read_bytes()
    ours, twin = both_ways(data)
    assert ours == twin and len(ours) > 30
    exact = exact_events(data, compiled=True)
    assert all(b._events is None for b in exact.batches)  # columns straight from C, not the twin's objects
    kinds = frozenset({Kind.LOG, Kind.REGION_BEGIN, Kind.STATE_TRANSITION})
    assert (
        both_ways(data, kinds=kinds, offset=10**9, syncs=4)[0] == both_ways(data, kinds=kinds, offset=10**9, syncs=4)[1]
    )


@pytest.mark.slow
@needs_core
@pytest.mark.parametrize("version", ["1.19", "1.21"])
def test_the_compiled_legacy_path_on_fresh_demo_traces(version: str, legacy_demo_traces: dict[str, Path]) -> None:
    ours, twin = both_ways(legacy_demo_traces[version].read_bytes())
    assert ours == twin and len(ours) > 10_000


@needs_core
@settings(max_examples=examples(300))
@given(st.data())
def test_the_compiled_legacy_path_fails_as_the_twin_does(data: st.DataObject) -> None:
    """On anything a valid trace would not have, the compiled path hands the
    trace to the twin: the same events, or the same error."""
    path = data.draw(st.sampled_from([p for p in FAST_FILES if p.stat().st_size < 200_000]))
    buf = bytes(mutate(data, path.read_bytes(), keep=16))
    results: list[list[str] | str] = []
    for compiled in (True, False):
        try:
            exact = exact_events(buf, compiled=compiled)
            results.append([parsed_text(e) for b in exact.batches for e in b])
        except TraceFormatError as e:
            results.append(str(e))
    assert results[0] == results[1]
