"""A legacy segment's exact events a batch at a time (legacy/fast.exact_stream,
_ccore/decode/legacy_stream.c): what the compiled core holds for them, and that the
batches are the twin's.

The memory a live legacy session needs is bounded by what a segment's
decoding holds: one 24-byte record an event while it is read and ordered
(the streams' blocks freed as the merge passes them), the records, a
bit an event and one batch's columns while it is converted, and nothing
once every batch is taken. The core counts what it holds (no timing, no
RSS): these tests bound it."""

from __future__ import annotations

from pathlib import Path

import pytest

from livetrace._cli.render.dump import parsed_text
from livetrace._trace.legacy.fast import BATCH_EVENTS, core_stream, exact_events, exact_stream
from livetrace._trace.model.batch import NARGS, NEXTRA
from livetrace._trace.version import HEADER_SIZE, sniff

from .test_legacy import FAST_FILES

needs_core = pytest.mark.compiled_core

RECORD = 24  # bytes: time, offset, goroutine, P, type (legacy.h's LRec)
BLOCK = 4096 * RECORD  # a stream's block
MAX_STREAMS = 40  # Ps, and the pseudo-P of CPU samples, in any test trace
COLUMNS = 1 + 4 * 8 + 8 * NARGS + 8 * NEXTRA  # bytes of an event's columns


def check_bounds(data: bytes) -> int:
    """Takes a trace's stream to its end, checking what the core holds on
    the way: the events read."""
    res = core_stream(data, sniff(data[:HEADER_SIZE]))
    assert res is not None
    core, *_, events = res
    n = core.records
    assert core.peak <= RECORD * n + MAX_STREAMS * BLOCK
    # Converting: the records, a bit an event, and columns for about a batch
    # (the first Gomaxprocs may add one event per goroutine to a batch).
    bound = RECORD * n + n // 8 + 1 + COLUMNS * 4 * BATCH_EVENTS
    seen = 0
    while (columns := core.next(BATCH_EVENTS)) is not None:
        assert core.held <= bound
        seen += len(columns[0])
    assert seen == events and core.held == 0
    return n


@needs_core
@pytest.mark.parametrize("path", [p for p in FAST_FILES if p.stat().st_size < 200_000], ids=lambda p: p.name)
def test_a_streamed_trace_holds_a_record_an_event(path: Path) -> None:
    assert check_bounds(path.read_bytes()) > 30


@pytest.mark.slow
@needs_core
def test_a_demo_segment_holds_a_record_an_event(legacy_demo_traces: dict[str, Path]) -> None:
    """A second of the demo at full load, as a live session's segment is:
    here the records are most of what is held, and the bound is tight."""
    data = legacy_demo_traces["1.21"].read_bytes()
    res = core_stream(data, sniff(data[:HEADER_SIZE]))
    assert res is not None
    core = res[0]
    assert core.records > 100_000 and core.peak <= 1.05 * RECORD * core.records + MAX_STREAMS * BLOCK
    del res, core
    check_bounds(data)


@needs_core
@pytest.mark.parametrize("path", [p for p in FAST_FILES if p.stat().st_size < 200_000][:4], ids=lambda p: p.name)
def test_streamed_batches_are_the_listed_ones_and_the_twins(path: Path) -> None:
    data = path.read_bytes()
    s = exact_stream(data, compiled=True, offset=7, syncs=2)
    streamed = [parsed_text(e) for b in s.batches for e in b]
    assert len(streamed) == s.events
    twin = exact_events(data, compiled=False, offset=7, syncs=2)
    assert streamed == [parsed_text(e) for b in twin.batches for e in b]
