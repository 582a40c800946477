"""`decode_batches(source, jobs=N)`: a Go 1.22+ trace's generations ordered
in a pool of threads, each by a fresh engine, and carried in order
(`_trace/modern/parallel.py`), give what one job gives, item for item:
events, notices, errors and the events before them, on both twins."""

from __future__ import annotations

import io
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import livetrace
from livetrace._cli.render.dump import parsed_text
from livetrace._errors import TraceFormatError
from livetrace._trace.accel import use_compiled
from livetrace._trace.model.batch import EventBatch, kind_mask
from livetrace._trace.model.events import Kind
from livetrace._trace.modern.carry import Fresh
from livetrace._trace.modern.decoder import ModernDecoder
from livetrace._trace.modern.generation import Generation
from livetrace._trace.modern.parallel import ParallelEngine

from .conftest import examples
from .test_carry import MULTI, RUNTIME, TEXT_TESTS, mutated
from .wirechunks import modern_chunks

LEGACY = sorted((Path(__file__).resolve().parent / "corpus" / "legacy" / "go-testdata").glob("*_1_21_good"))


def items(data: bytes, jobs: int, kinds: frozenset[Kind] | None = None) -> list[str]:
    out: list[str] = []
    try:
        for item in livetrace.decode_batches(io.BytesIO(data), kinds, jobs=jobs):
            if isinstance(item, livetrace.EventBatch):
                out += map(parsed_text, item)
            else:
                out.append(repr(item))
    except TraceFormatError as e:
        out += map(parsed_text, e.partial or [])
        out.append(f"error: {e}")
    return out


def same(data: bytes, kinds: frozenset[Kind] | None = None) -> list[str]:
    one = items(data, 1, kinds)
    assert items(data, 3, kinds) == one
    return one


@pytest.mark.parametrize(
    "data",
    [t.data for t in TEXT_TESTS] + [p.read_bytes() for p in RUNTIME],
    ids=[t.name for t in TEXT_TESTS] + [p.stem for p in RUNTIME],
)
def test_more_jobs_give_what_one_gives(data: bytes) -> None:
    same(data)


def test_a_filter_too() -> None:
    data = next(p for p in RUNTIME if p.stem == "go126-generations").read_bytes()
    got = same(data, frozenset({Kind.RANGE_BEGIN, Kind.TASK_END}))
    assert got and all(" RangeBegin " in line or " TaskEnd " in line for line in got)


def test_a_stream_of_traces_cut_ones_and_legacy_ones() -> None:
    gens = next(p for p in RUNTIME if p.stem == "go126-generations").read_bytes()
    legacy = LEGACY[0].read_bytes() if LEGACY else b""
    # Two windows and a legacy one (a TraceGap between each), then a
    # trace cut in its third generation: the events before the cut, then the cut.
    got = same(gens + legacy + gens + gens[: len(gens) * 3 // 5])
    assert sum("TraceGap" in line for line in got) >= 2
    assert got[-1].startswith("error: ")


class _Held(ParallelEngine):
    """A pool that orders nothing until the decoder must wait for it."""

    def __init__(self, jobs: int) -> None:
        super().__init__(kind_mask(None), compiled=use_compiled(None), jobs=jobs)
        self.gate = threading.Event()
        self.most = 0  # generations waiting, at most, when one was taken

    def _fresh(self, gen: Generation) -> Fresh:
        self.gate.wait()
        return super()._fresh(gen)

    def _next(self) -> Iterator[EventBatch]:
        self.gate.set()
        self.most = max(self.most, len(self._pending))
        return super()._next()


def test_generations_in_flight_are_bounded() -> None:
    # Fed as the helper sends it, a batch at a time, with a pool that lags:
    # the generations assembled and not yet given are at most jobs + 1 (and
    # one being assembled); then the decoder waits for the oldest.
    data = next(p for p in RUNTIME if p.stem == "go126-generations").read_bytes()
    jobs = 2
    engine = _Held(jobs)
    d = ModernDecoder(engine=engine)
    try:
        for _, chunk in modern_chunks(data):
            for _ in d.feed_batches(chunk):
                pass
            assert d.generations - engine.carrier.generations <= jobs + 1
    finally:
        engine.gate.set()  # a failing test's pool threads end
    assert engine.most == jobs + 1
    assert sum(len(b) for b in d.close_batches()) > 0
    assert d.generations == engine.carrier.generations == 5


@settings(max_examples=examples(100), deadline=None)
@given(st.data())
def test_mutated_traces_give_what_one_job_gives(data: st.DataObject) -> None:
    same(mutated(data, data.draw(st.sampled_from(MULTI))))


@pytest.mark.slow
def test_the_decode_command_gives_the_same_dump_with_jobs(tmp_path: Path) -> None:
    # A cut trace: its error, and the events before it, too.
    data = next(p for p in RUNTIME if p.stem == "go126-generations").read_bytes()
    path = tmp_path / "cut.trace"
    path.write_bytes(data + data[: len(data) * 3 // 5])
    runs = [
        subprocess.run(
            [sys.executable, "-m", "livetrace", "decode", str(path), *args], capture_output=True, text=True, timeout=120
        )
        for args in ([], ["--jobs", "3"])
    ]
    assert runs[0].returncode == runs[1].returncode == 1
    assert runs[0].stdout == runs[1].stdout and "--- " in runs[0].stdout  # the line between the two traces
    assert runs[0].stdout.count("\n") > 5000 and runs[0].stderr == runs[1].stderr
