"""The compiled core and its pure-Python twin: the same events, columns and
errors for the same bytes, and the compiled core free of memory errors on
hostile input (a fuzz run under AddressSanitizer)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import livetrace
from livetrace import EventBatch, Kind, TraceFormatError
from livetrace._cli.render.dump import parsed_text
from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.model.batch import NARGS, NEXTRA
from livetrace._trace.modern.decoder import ModernDecoder
from livetrace._trace.modern.order import Ordering
from livetrace._trace.modern.wire import record_columns

from . import textform
from .conftest import examples
from .mutate import mutate

ROOT = Path(__file__).resolve().parent.parent
TEXT_TESTS = [t for t in textform.all_tests() if t.data]
# Both implementations are tested here, whichever the run is on: once is enough.
pytestmark = pytest.mark.once
# Skips where the core was not built (fails in CI): see conftest.py.
needs_core = pytest.mark.compiled_core


def test_ci_has_the_compiled_core() -> None:
    """Where a C compiler is, the install built the core: a broken build
    must not pass as the twin twice over."""
    if not (os.environ.get("CI") or shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler here")
    assert use_compiled(True)
    assert ModernDecoder().implementation == "compiled"


def test_spec_header_is_the_generators_output() -> None:
    """_ccore/common/generated.h, which names the event codes and the model's
    constants in C, is what the Python tables make: regenerate it when they
    change."""
    out = subprocess.run(
        [sys.executable, "-m", "livetrace._trace.spec.cheader"], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert (ROOT / "livetrace/_ccore/common/generated.h").read_text() == out.stdout


@needs_core
def test_compiled_dispatch_is_the_twins() -> None:
    """The C engine has a handler for exactly the codes the Python twin's
    Ordering dispatches on, and groups them alike: codes that share a
    handler in one share it in the other."""
    assert use_compiled(True)
    compiled = ccore.handlers()
    python = {code: fn.__name__ for code, fn in enumerate(Ordering()._dispatch) if fn is not None}
    assert compiled.keys() == python.keys()

    def groups(table: dict[int, str]) -> set[frozenset[int]]:
        return {frozenset(c for c, h in table.items() if h == name) for name in table.values()}

    assert groups(compiled) == groups(python)
    assert (ccore.NARGS, ccore.NEXTRA) == (NARGS, NEXTRA)


@pytest.mark.slow  # stubtest type-checks from scratch: seconds of CPU
@needs_core
def test_stub_describes_the_compiled_module(tmp_path: Path) -> None:
    """_ccore.pyi, which types the C module for the type checker, has what
    the module has, with the same parameters (mypy's stubtest compares them)."""
    pytest.importorskip("mypy.stubtest")
    # The stub imports only the standard library: mypy need not check the
    # rest of livetrace, which the stub's parent packages import (lint's
    # mypy does), 12 of the 14 CPU-seconds stubtest took.
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\npython_version = 3.11\nfollow_imports = skip\n")
    r = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "livetrace._trace._ccore", "--mypy-config-file", str(config)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, "MYPY_CACHE_DIR": str(tmp_path)},
    )
    assert r.returncode == 0, r.stdout + r.stderr


def outcome(data: bytes, compiled: bool, pieces: int = 1) -> tuple[list[str], object]:
    d = ModernDecoder(compiled=compiled)
    events: list[livetrace.Event] = []
    step = max(1, len(data) // pieces)
    try:
        for i in range(0, len(data), step):
            events += d.feed(data[i : i + step])
        events += d.close()
        error = None
    except TraceFormatError as e:
        events += e.partial or []
        error = (type(e).__name__, e.reason, e.offset, e.generation)
    return [parsed_text(e) for e in events], error


def assert_twins_agree(data: bytes, pieces: int = 1) -> None:
    (c_lines, c_err), (py_lines, py_err) = outcome(data, True, pieces), outcome(data, False, pieces)
    assert c_err == py_err
    first = next(
        (i for i, (a, b) in enumerate(zip(c_lines, py_lines, strict=False)) if a != b), min(len(c_lines), len(py_lines))
    )
    assert (len(c_lines), c_lines[first : first + 1]) == (len(py_lines), py_lines[first : first + 1])


@needs_core
@pytest.mark.parametrize("t", TEXT_TESTS, ids=lambda t: t.name)
def test_twins_agree_on_go_text_form_tests(t: textform.TextTrace) -> None:
    assert_twins_agree(t.data)


@needs_core
@settings(max_examples=examples(400))
@given(st.data())
def test_twins_agree_on_mutated_traces(data: st.DataObject) -> None:
    t = data.draw(st.sampled_from(TEXT_TESTS))
    buf = mutate(data, t.data, keep=16)
    assert_twins_agree(buf, data.draw(st.integers(1, 4)))


@needs_core
def test_twins_name_the_generation_of_a_code_the_ordering_has_no_event_for() -> None:
    """Found by the deep fuzzing profile: the twin left the generation out."""
    (t,) = [t for t in TEXT_TESTS if t.name == "go122-confuse-seq-across-generations"]
    buf = bytearray(t.data)
    buf[21] = 51  # a GoStatus becomes a code the ordering has no handler for
    assert_twins_agree(bytes(buf))
    assert outcome(bytes(buf), False)[1] == ("OrderingError", "bad event type found while ordering: 51", None, 1)


def wire_outcome(payload: bytes, compiled: bool) -> object:
    try:
        c = record_columns(payload, 26, 100, 7, compiled=compiled)
    except TraceFormatError as e:
        return (e.reason, e.offset, e.generation)
    return (c.codes, c.starts.tolist(), c.args.tolist())


@needs_core
@settings(max_examples=examples(400))
@given(st.binary(max_size=200))
def test_twins_agree_on_any_batch_payload(payload: bytes) -> None:
    assert wire_outcome(payload, True) == wire_outcome(payload, False)


def demo_batches(path: Path, compiled: bool, kinds: set[Kind] | None = None) -> list[EventBatch]:
    d = ModernDecoder(kinds, compiled=compiled)
    data = path.read_bytes()
    batches = [b for i in range(0, len(data), 1 << 20) for b in d.feed_batches(data[i : i + (1 << 20)])]
    return batches + list(d.close_batches())


@pytest.mark.slow
@needs_core
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_batch_columns_are_the_events(compiled: bool, demo_traces: dict[str, Path]) -> None:
    batches = demo_batches(demo_traces["1.26"], compiled)
    assert sum(map(len, batches)) > 10_000
    b = max(batches, key=len)
    events = list(b)
    assert [e.code for e in events] == b.codes.tolist()
    assert [e.time for e in events] == b.times.tolist()
    assert [(e.m, e.p, e.g) for e in events] == list(
        zip(b.threads.tolist(), b.procs.tolist(), b.goroutines.tolist(), strict=True)
    )
    assert bytes(e.kind for e in events) == b.kinds
    args = b.args.tolist()
    assert all(e.args == args[4 * i : 4 * i + len(e.args)] for i, e in enumerate(events))
    assert [parsed_text(b[i]) for i in (0, len(b) // 2, -1)] == [parsed_text(events[i]) for i in (0, len(b) // 2, -1)]


@pytest.mark.slow
@needs_core
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_kind_filter_keeps_exactly_those_events(compiled: bool, demo_traces: dict[str, Path]) -> None:
    everything = [
        parsed_text(e)
        for b in demo_batches(demo_traces["1.25"], compiled)
        for e in b
        if e.kind in (Kind.LOG, Kind.TASK_BEGIN)
    ]
    filtered = [
        parsed_text(e) for b in demo_batches(demo_traces["1.25"], compiled, {Kind.LOG, Kind.TASK_BEGIN}) for e in b
    ]
    assert filtered == everything and len(everything) > 10


ASAN_FUZZ = r"""
import importlib.util, random, sys, time
spec = importlib.util.spec_from_file_location("livetrace._trace._ccore", sys.argv[1])
core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(core)
sys.modules["livetrace._trace._ccore"] = core
from livetrace import TraceFormatError
from livetrace._trace.modern.decoder import ModernDecoder
from livetrace._trace.legacy.fast import exact_events
from livetrace._trace.legacy.live import LegacyLive
from livetrace._trace.modern.wire import record_columns
from livetrace import SpanBuilder, select_spans
from livetrace._trace.select.filter import Filter
import re
SPAN_FILTER = Filter(min_duration=1, stack=re.compile("main"), regions=("*",))
from livetrace._views.pprof import PROFILE_KINDS, ProfileBuilder
from array import array
def top_of(sums, spans):  # top's sums, fed without the GIL (and taken without it)
    ids = array("I", range(len(spans.names_table)))
    sums.feed(spans.kinds, spans.resource_kinds, spans.resource_ids, spans.starts, spans.ends, spans.reasons,
              spans.names, spans.start_stacks, spans.end_stacks, spans.start_tables, spans.end_tables, ids, None, 0,
              lambda tok, stack: stack % 5)
def spans_of(builder, batch, profiles, sums):
    spans = builder.feed(batch)
    list(select_spans(spans, SPAN_FILTER, compiled=True))
    for p in profiles: p.feed(spans)
    top_of(sums, spans)
seeds = [open(p, "rb").read() for p in sys.argv[3:]]
seed = random.randrange(1 << 32)
print("seed", seed, flush=True)
rng = random.Random(seed)
deadline, runs = time.monotonic() + float(sys.argv[2]), 0
def json_lines(rng):  # the JSON writers on any columns: exact and provisional lines
    n = rng.randint(0, 40)
    i64s = lambda k: b"".join(rng.randrange(-2**40, 2**40).to_bytes(8, "little", signed=True) for _ in range(k))
    cols = (rng.randbytes(n), i64s(n), i64s(n), i64s(n), i64s(n), rng.randbytes(8 * 4 * n), rng.randbytes(8 * 2 * n))
    wall = rng.choice([None, 1_700_000_000 * 10**9])
    # A line of the twin's longer than the room made for the batch grows the buffer while the GIL is held.
    miss, other = (lambda kind, i: b'"s"'), (lambda i: "o" * rng.choice((1, 1, 100_000)))
    core.jsonl(*cols, wall, {}, {}, miss, other, rng.choice([None, {}]), rng.choice([0, 1, 7]))
    core.jsonl_provisional(*cols, wall, {}, miss, other, rng.choice([0, 1, 7]))
from livetrace._trace.spans.batch import COLUMNS as SPAN_COLUMNS
from livetrace._trace.spans.model import SPAN_KIND_NAMES
def text_and_span_lines(rng):  # the writers that let the GIL go, with pieces whose making fails now and then
    n = rng.randint(0, 40)
    i64s = lambda k: b"".join(rng.randrange(-2**40, 2**40).to_bytes(8, "little", signed=True) for _ in range(k))
    cols = (rng.randbytes(n), i64s(n), i64s(n), i64s(n), i64s(n), rng.randbytes(8 * 4 * n), rng.randbytes(8 * 2 * n))
    fails = rng.random() < 0.3
    def miss(kind, i):
        if fails and rng.random() < 0.5:
            raise ValueError("no piece")
        return b"p"
    other = lambda i: b"o" * rng.choice((1, 1, 100_000))
    wall = rng.choice([None, 1_700_000_000 * 10**9])
    try:
        core.text_lines(*cols, 0, wall, rng.random() < 0.5, (b"K",) * 256, {}, {}, {}, miss, other)
    except ValueError:
        pass
    size = {"B": 1, "I": 4, "q": 8, "Q": 8}
    span_cols = [bytearray(rng.randbytes(size[t] * n)) for _, t in SPAN_COLUMNS]
    span_cols[0] = bytearray(rng.randrange(len(SPAN_KIND_NAMES)) for _ in range(n))
    span_cols[1] = bytearray(rng.randrange(3) for _ in range(n))
    logs = {i: [(b"c", b"m")] for i in range(n) if rng.random() < 0.1}
    kinds = tuple(k.encode() for k in SPAN_KIND_NAMES)
    for json in (True, False):
        try:
            core.span_lines([memoryview(c) for c in span_cols], 0, n, json, 0, kinds, {}, {}, miss, logs, other,
                            rng.choice([None, lambda i: b"[]"]), rng.choice([0, 1, 7]))
        except ValueError:
            pass
from livetrace._trace.spans.logs import user_logs
from livetrace._tables.read import iter_tables
from livetrace._trace.spans.join import SpanJoin, build_generation
def split_spans(batches, rng):  # each generation's spans built apart (their room reserved, or not), then joined
    gens = []
    for b in batches:
        if gens and gens[-1][0].gen is b.gen: gens[-1].append(b)
        else: gens.append([b])
    j = SpanJoin(compiled=True)
    try:
        for i, g in enumerate(gens):
            built = build_generation(g if rng.random() < 0.5 else iter(g), i, compiled=True)
            for _ in j.join(built, g): pass
        j.close()
    except (TraceFormatError, ValueError, MemoryError):
        pass
def logs_state(batches, rng):  # the logs' state in the core, split or not, read and set back now and then
    for split in (False, True):
        u = user_logs(split=split, compiled=True)
        for b in batches:
            codes, _, _, _, goroutines, args, _ = b.columns()
            u.scan(codes, goroutines, args, b.gen.strings if b.gen is not None else {})
            if rng.random() < 0.2:
                u.tasks, u.regions, u.seq = u.tasks, u.regions, u.seq
        u.pops, u.pending_regions, u.pending_tasks, u.touched
        if rng.random() < 0.5:
            u.clear()
from livetrace._trace.model.batch import kind_mask
from livetrace._trace.modern.carry import Carrier
from livetrace._trace.modern.carry_compiled import compiled_fresh_generation
from livetrace._trace.modern.generation import GenerationAssembler
from livetrace._trace.modern.wire import FrameReader
def fresh_and_carried(data, rng):  # each generation ordered by a fresh engine (its notes), then carried
    frames = FrameReader(None)
    try:
        got = frames.feed(data)
        if frames.minor is None: return
        asm = GenerationAssembler(frames.minor, True)
        gens = asm.push(got)
        frames.close()
        gens += asm.close(frames.offset)
    except TraceFormatError:
        return
    mask = bytes(rng.choice((0, 1, 1)) for _ in range(256)) if rng.random() < 0.3 else kind_mask(None)
    carrier = Carrier(mask, compiled=True)
    try:
        for f in [compiled_fresh_generation(g, mask) for g in gens]: carrier.take(f)
    except (TraceFormatError, MemoryError):
        pass
while time.monotonic() < deadline:
    json_lines(rng)
    text_and_span_lines(rng)
    buf = bytearray(rng.choice(seeds))
    for _ in range(rng.randint(1, 8)):
        pos = rng.randrange(16, len(buf) + 1)
        op = rng.randrange(4)
        if op == 0 and pos < len(buf): buf[pos] = rng.randrange(256)
        elif op == 1: del buf[pos:]
        elif op == 2: buf[pos:pos] = rng.randbytes(rng.randint(1, 12))
        else: del buf[pos:pos + rng.randint(1, 12)]
    if buf.startswith(b"go 1.1") or buf.startswith(b"go 1.21"):  # legacy
        try:
            exact_events(bytes(buf), compiled=True)
        except (TraceFormatError, MemoryError):
            pass
        live = LegacyLive(compiled=True)  # the provisional path, chunk by chunk
        try:
            for i in range(0, len(buf), 4093):
                for _ in live.feed(bytes(buf[i:i + 4093]), i * 1000): pass
        except (TraceFormatError, MemoryError):
            pass
        runs += 1
        continue
    d, sb = ModernDecoder(compiled=True), SpanBuilder(compiled=True)
    profiles = [ProfileBuilder(k, compiled=True) for k in PROFILE_KINDS]
    sums, seen = core.TopSums(), []
    try:
        for i in range(0, len(buf), 997):
            for b in d.feed_batches(bytes(buf[i:i + 997])): list(b); spans_of(sb, b, profiles, sums); seen.append(b)
        for b in d.close_batches(): list(b); spans_of(sb, b, profiles, sums); seen.append(b)
    except (TraceFormatError, MemoryError):
        pass
    logs_state(seen, rng)
    split_spans(seen, rng)
    spans = sb.close()
    for p in profiles: p.feed(spans); p.records()
    top_of(sums, spans)
    sums.take()
    fresh_and_carried(bytes(buf), rng)
    if rng.random() < 0.2:  # the tables' kernels (a unit's sums, the goroutines seen, the wakers...)
        try:
            for _ in iter_tables(bytes(buf), compiled=True): pass
        except (TraceFormatError, MemoryError):
            pass
    try:
        record_columns(bytes(buf[16:16 + rng.randint(0, 300)]), 26, compiled=True)
    except TraceFormatError:
        pass
    runs += 1
print(f"{runs} runs clean")
"""


def _asan_runtime() -> str | None:
    cc = shutil.which("gcc")
    if cc is None:
        return None
    lib = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    return lib if lib and os.path.isabs(lib) and Path(lib).exists() else None


@pytest.mark.slow
@pytest.mark.skipif(_asan_runtime() is None, reason="gcc with AddressSanitizer is not available here")
def test_compiled_core_under_address_sanitizer(tmp_path: Path) -> None:
    """A bounded fuzz run of the compiled core built with ASan and UBSan:
    any out-of-bounds access, use after free or undefined arithmetic aborts
    the run, as does a writer of lines that uses a Python object after
    letting the GIL go (LIVETRACE_GIL_CHECKS)."""
    so = tmp_path / ("_ccore" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-O1",
            "-g1",  # line tables, which ASan's reports need: the full -g was a third of the build's CPU
            "-fno-omit-frame-pointer",
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=undefined",
            "-DLIVETRACE_GIL_CHECKS",
            f"-I{sysconfig.get_paths()['include']}",
            f"-I{ROOT / 'livetrace/_ccore'}",
            *[str(c) for c in sorted((ROOT / "livetrace/_ccore").rglob("*.c"))],
            "-o",
            str(so),
        ],
        check=True,
    )
    seeds = []
    for t in TEXT_TESTS:
        seeds.append(str(tmp_path / f"{t.name}.trace"))
        Path(seeds[-1]).write_bytes(t.data)
    # and legacy traces of the versions the compiled legacy path reads
    legacy = textform.CORPUS.parent / "legacy" / "go-testdata"
    seeds += [str(p) for p in sorted(legacy.glob("*_1_[12][19]_good")) if p.stat().st_size < 200_000] * 10
    script = tmp_path / "fuzz.py"
    script.write_text(ASAN_FUZZ)
    env = {
        **os.environ,
        "LD_PRELOAD": _asan_runtime() or "",
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
        "UBSAN_OPTIONS": "print_stacktrace=1",
    }
    seconds = os.environ.get("LIVETRACE_ASAN_SECONDS", "30")
    r = subprocess.run(
        [sys.executable, str(script), str(so), seconds, *seeds],
        env=env,
        capture_output=True,
        text=True,
        timeout=float(seconds) + 300,
    )
    assert r.returncode == 0, r.stdout + r.stderr[-4000:]
    assert "runs clean" in r.stdout


def jsonl_of(batches: list[EventBatch], compiled: bool, monkeypatch: pytest.MonkeyPatch) -> bytes:
    from livetrace._cli.render.jsonl import JsonlEncoder

    monkeypatch.setenv("LIVETRACE_PURE_PYTHON", "0" if compiled else "1")
    encoder = JsonlEncoder()
    return b"".join(piece for b in batches for piece in encoder.encode_batch(b))


@pytest.mark.slow
@needs_core
def test_jsonl_twins_write_the_same_bytes(demo_traces: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    traces = [demo_traces["1.26"], demo_traces["1.22"]]
    for path in traces:
        batches = demo_batches(path, True)
        fast = jsonl_of(batches, True, monkeypatch)
        assert fast == jsonl_of(batches, False, monkeypatch), path.name
        assert fast.count(b"\n") == sum(map(len, batches))
    for t in TEXT_TESTS:
        if t.expect_success:
            d = ModernDecoder(compiled=True)
            batches = list(d.feed_batches(t.data)) + list(d.close_batches())
            assert jsonl_of(batches, True, monkeypatch) == jsonl_of(batches, False, monkeypatch), t.name


@needs_core
@pytest.mark.parametrize(
    "origin", [1_700_000_000_123_456_789, -1_500_000_001, (1 << 63) - 1, -(1 << 63), 1 << 63, 1 << 70]
)
def test_json_twins_agree_on_wall_clock_times(origin: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wall time of a line is the clock base plus the event's time: past
    int64 nanoseconds for a base near its ends (the core adds seconds and
    nanoseconds apart), or a base past int64 itself (the twin's lines)."""
    from livetrace._cli.render.provisional import ProvisionalJsonl

    legacy = textform.CORPUS.parent / "legacy" / "go-testdata" / "user_task_region_1_21_good"
    batches = [b for b in livetrace.decode_batches(legacy, compiled=True) if isinstance(b, EventBatch)]
    assert batches
    for b in batches:
        assert b.gen is not None
        b.gen.wall_origin = origin
    assert jsonl_of(batches, True, monkeypatch) == jsonl_of(batches, False, monkeypatch)

    def provisional(compiled: bool) -> bytes:
        monkeypatch.setenv("LIVETRACE_PURE_PYTHON", "0" if compiled else "1")
        encoder = ProvisionalJsonl()
        return b"".join(piece for b in batches for piece in encoder.encode(b))

    fast = provisional(True)
    assert fast == provisional(False)
    assert fast.count(b'"wall": ') == sum(map(len, batches))


@needs_core
def test_a_process_that_only_reads_legacy_traces_writes_the_twins_json() -> None:
    """The JSON writer reads the format tables (which argument is a stack)
    that the modern engine used to hand over: a process that never decoded a
    modern trace wrote every legacy Log without its stack. A fresh process,
    so that nothing else has set the tables up first."""
    script = (
        "import sys, livetrace\n"
        "from livetrace._cli.render.jsonl import JsonlEncoder\n"
        "enc = JsonlEncoder()\n"
        "for b in livetrace.decode_batches(sys.argv[1]):\n"
        "    if isinstance(b, livetrace.EventBatch):\n"
        "        sys.stdout.write(b''.join(enc.encode_batch(b)).decode())\n"
    )
    path = ROOT / "tests" / "corpus" / "legacy" / "go-testdata" / "user_task_region_1_21_good"
    outs = [
        subprocess.run(
            [sys.executable, "-c", script, str(path)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "LIVETRACE_PURE_PYTHON": twin},
        ).stdout
        for twin in ("0", "1")
    ]
    logs = [line for line in outs[0].splitlines() if line.startswith('{"kind": "Log"')]
    assert logs and all('"stack": []' not in line for line in logs)
    assert outs[0] == outs[1]
