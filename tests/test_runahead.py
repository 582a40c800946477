"""The compiled engine ordering a generation on its worker thread (run ahead
of the batches its caller takes) gives what it gives on the caller's thread,
batch for batch, and what the pure-Python twin gives: the same events, the
same errors with the same context, in the same place, for any chunking; and
no data race under ThreadSanitizer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import livetrace._trace.modern.decoder as modern_decoder
from livetrace import ModernDecoder, TraceFormatError
from livetrace._cli.render.dump import parsed_text

from . import textform
from .mutate import mutate

ROOT = Path(__file__).resolve().parent.parent
TEXT_TESTS = [t for t in textform.all_tests() if t.data]
pytestmark = [
    pytest.mark.skipif(
        os.environ.get("LIVETRACE_PURE_PYTHON") == "1",
        reason="the worker is the compiled core's; the twin is compared on the compiled core's pass",
    ),
    pytest.mark.compiled_core,
]

Outcome = tuple[list[int], list[str], list[list[bytes]], object]


def outcome(data: bytes, compiled: bool, runahead: int, pieces: int, monkeypatch: pytest.MonkeyPatch) -> Outcome:
    """Batch sizes, event lines, each batch's extra strings and the error (with its context)."""
    monkeypatch.setattr(modern_decoder, "RUNAHEAD_BYTES", runahead)
    d = ModernDecoder(compiled=compiled)
    sizes: list[int] = []
    lines: list[str] = []
    extras: list[list[bytes]] = []
    step = max(1, len(data) // pieces)

    def take(batches: object) -> None:
        for b in batches:  # type: ignore[attr-defined]
            sizes.append(len(b))
            lines.extend(parsed_text(e) for e in b)
            extras.append(list(b.gen.extra_strings[1:]) if b.gen is not None else [])

    error = None
    try:
        for i in range(0, len(data), step):
            take(d.feed_batches(data[i : i + step]))
        take(d.close_batches())
    except TraceFormatError as e:
        lines.extend(parsed_text(ev) for ev in e.partial or [])
        error = (type(e).__name__, e.reason, e.offset, e.generation)
    return sizes, lines, extras, error


def assert_same(data: bytes, pieces: int, monkeypatch: pytest.MonkeyPatch) -> None:
    ahead = outcome(data, True, 0, pieces, monkeypatch)
    here = outcome(data, True, -1, pieces, monkeypatch)
    assert ahead == here
    twin = outcome(data, False, -1, pieces, monkeypatch)
    assert (ahead[1], ahead[3]) == (twin[1], twin[3])


@pytest.mark.parametrize("t", TEXT_TESTS, ids=lambda t: t.name)
def test_worker_gives_what_the_callers_thread_and_the_twin_give(
    t: textform.TextTrace, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_same(t.data, 1, monkeypatch)
    assert_same(t.data, 7, monkeypatch)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_worker_agrees_on_mutated_traces_in_any_chunking(monkeypatch: pytest.MonkeyPatch, data: st.DataObject) -> None:
    t = data.draw(st.sampled_from(TEXT_TESTS))
    assert_same(mutate(data, t.data, keep=16), data.draw(st.integers(1, 5)), monkeypatch)


def test_abandoned_generation_then_more(monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller that stops taking a generation's batches halfway, then goes
    on (feeds on, closes, or drops the decoder), stops the worker cleanly."""
    monkeypatch.setattr(modern_decoder, "RUNAHEAD_BYTES", 0)
    monkeypatch.setattr(modern_decoder, "BATCH_EVENTS", 16)
    data = max(TEXT_TESTS, key=lambda t: len(t.data)).data
    for cut in (len(data) // 3, len(data) // 2, len(data)):
        d = ModernDecoder(compiled=True)
        it = d.feed_batches(data[:cut])
        next(it, None)
        del it
        try:
            for b in d.feed_batches(data[cut:]):
                list(b)
            for b in d.close_batches():
                list(b)
        except TraceFormatError:
            pass  # what the abandoned half left the ordering may contradict the rest
        d2 = ModernDecoder(compiled=True)
        next(d2.feed_batches(data), None)
        del d2  # dropped with the worker mid-generation


@pytest.mark.slow
def test_worker_gives_the_same_batches_on_a_demo_trace(
    demo_traces: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = demo_traces["1.26"].read_bytes()
    ahead = outcome(data, True, 0, 9, monkeypatch)
    assert len(ahead[1]) > 10_000 and ahead[3] is None
    assert ahead == outcome(data, True, -1, 9, monkeypatch)


TSAN_FUZZ = r"""
import importlib.util, random, sys, time
spec = importlib.util.spec_from_file_location("livetrace._trace._ccore", sys.argv[1])
core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(core)
sys.modules["livetrace._trace._ccore"] = core
import livetrace._trace.modern.decoder as D
from livetrace import ModernDecoder, TraceFormatError
D.RUNAHEAD_BYTES = 0
seeds = [open(p, "rb").read() for p in sys.argv[3:]]
seed = random.randrange(1 << 32)
print("seed", seed, flush=True)
rng = random.Random(seed)
deadline, runs = time.monotonic() + float(sys.argv[2]), 0
while time.monotonic() < deadline:
    buf = bytearray(rng.choice(seeds))
    for _ in range(rng.randint(0, 4)):
        pos = rng.randrange(16, len(buf) + 1)
        if pos < len(buf): buf[pos] = rng.randrange(256)
    D.BATCH_EVENTS = rng.choice([1, 16, 4096])
    d = ModernDecoder(compiled=True)
    try:
        step = rng.choice([997, len(buf)])
        for i in range(0, len(buf), step):
            for b in d.feed_batches(bytes(buf[i:i + step])):
                list(b)
                if rng.random() < 0.01: break
        for b in d.close_batches(): list(b)
    except (TraceFormatError, MemoryError):
        pass
    runs += 1
print(f"{runs} runs clean")
"""


def _tsan_runtime() -> str | None:
    cc = shutil.which("gcc")
    if cc is None:
        return None
    lib = subprocess.run([cc, "-print-file-name=libtsan.so"], capture_output=True, text=True).stdout.strip()
    return lib if lib and os.path.isabs(lib) and Path(lib).exists() else None


@pytest.mark.slow
@pytest.mark.skipif(_tsan_runtime() is None, reason="gcc with ThreadSanitizer is not available here")
def test_worker_under_thread_sanitizer(tmp_path: Path) -> None:
    """A bounded fuzz run of the compiled core built with ThreadSanitizer,
    every generation on the worker, batches taken and abandoned at random:
    any data race between the worker and its caller fails the run."""
    so = tmp_path / ("_ccore" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-O1",
            "-g",
            "-fsanitize=thread",
            f"-I{sysconfig.get_paths()['include']}",
            *[str(c) for c in sorted((ROOT / "livetrace/_trace/csrc").glob("*.c"))],
            "-o",
            str(so),
        ],
        check=True,
    )
    seeds = []
    for t in TEXT_TESTS:
        seeds.append(str(tmp_path / f"{t.name}.trace"))
        Path(seeds[-1]).write_bytes(t.data)
    script = tmp_path / "fuzz.py"
    script.write_text(TSAN_FUZZ)
    env = {**os.environ, "LD_PRELOAD": _tsan_runtime() or "", "TSAN_OPTIONS": "halt_on_error=1:report_signal_unsafe=0"}
    seconds = os.environ.get("LIVETRACE_TSAN_SECONDS", "30")
    r = subprocess.run(
        [sys.executable, str(script), str(so), seconds, *seeds],
        env=env,
        capture_output=True,
        text=True,
        timeout=float(seconds) + 300,
    )
    assert r.returncode == 0, r.stdout + r.stderr[-4000:]
    assert "runs clean" in r.stdout and "ThreadSanitizer" not in r.stderr
