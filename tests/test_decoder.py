"""One decoder for every format: ``open_decoder`` gives, for any chunking,
the events the format's own decoder gives (modern: Go's text-form tests;
legacy: Go's canned traces, 1.5 to 1.21); ``livetrace.decode`` reads whole
files of both; every non-event item is a ``Notice``; kinds and states print
as their names. Sans-IO, on the corpus: fast."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import livetrace
from livetrace import Kind, Notice, TraceFormatError
from livetrace._cli.render.dump import parsed_text
from livetrace._items import Gap, SegmentEnd, SegmentGap, SymbolsResolved
from livetrace._protocol.frames import Chunk
from livetrace._session.live import LiveDecoder
from livetrace._trace.legacy.fast import exact_events
from livetrace._trace.model.events import GO_STATE_NAMES, KIND_NAMES, PROC_STATE_NAMES
from livetrace._trace.modern.decoder import ModernDecoder
from livetrace._trace.modern.generation import Generation

from . import textform

TEXT_TESTS = textform.all_tests()
LEGACY = textform.CORPUS.parent / "legacy" / "go-testdata"
LEGACY_FILES = sorted(p for p in LEGACY.iterdir() if p.is_file())
SMALL = 50_000  # bytes: legacy files fed a byte at a time too
STEPS = [1, 997, None]  # None: the whole trace at once


def pieces(data: bytes, step: int | None) -> list[bytes]:
    step = step or max(1, len(data))
    return [data[i : i + step] for i in range(0, len(data), step)] or [b""]


def run(data: bytes, step: int | None) -> tuple[list[object], str | None]:
    """Every item the decoder gives for data in pieces of step bytes, the
    events of an error's partial after them, and the error's message."""
    d = livetrace.open_decoder(data)
    items: list[object] = []
    try:
        for p in pieces(data, step):
            items += d.feed(p)
        items += d.close()
    except TraceFormatError as e:
        return items + list(getattr(e, "partial", [])), str(e)
    return items, None


def texts(items: Iterable[object]) -> list[str]:
    out: list[str] = []
    for item in items:
        if isinstance(item, livetrace.EventBatch):
            out += map(parsed_text, item)
        elif isinstance(item, livetrace.Event):
            out.append(parsed_text(item))
    return out


def modern_reference(data: bytes) -> tuple[list[str], str | None]:
    d = ModernDecoder()
    events: list[livetrace.Event] = []
    try:
        events += d.feed(data)
        events += d.close()
    except TraceFormatError as e:
        return texts(events + list(getattr(e, "partial", []))), str(e)
    return texts(events), None


@pytest.mark.parametrize("step", STEPS, ids=lambda s: f"{s or 'whole'}")
@pytest.mark.parametrize("t", TEXT_TESTS, ids=lambda t: t.name)
def test_modern_traces_decode_as_the_modern_decoder_does(t: textform.TextTrace, step: int | None) -> None:
    items, error = run(t.data, step)
    assert not any(isinstance(i, Notice) for i in items)
    assert (texts(items), error) == modern_reference(t.data)
    if not t.expect_success:
        assert error is not None and re.search(t.failure_pattern, error)


@cache
def legacy_reference(path: Path) -> tuple[list[str], int, str | None]:
    """The exact events (as text) and stack count the legacy fast path
    gives (the twin where the compiled core does not cover the version)."""
    try:
        exact = exact_events(path.read_bytes())
    except TraceFormatError as e:
        return [], 0, str(e)
    return [parsed_text(e) for b in exact.batches for e in b], exact.stacks, None


def legacy_cases() -> list[Any]:
    """Every file whole and in 997-byte pieces, the small ones a byte at a
    time too; the big ones (a second each and more) are slow."""
    cases: list[Any] = []
    for path in LEGACY_FILES:
        size = path.stat().st_size
        cases.extend(
            pytest.param(
                path,
                step,
                id=f"{path.name}-{step or 'whole'}",
                marks=[] if size <= SMALL else [pytest.mark.slow],
            )
            for step in STEPS
            if step != 1 or size <= SMALL
        )
    return cases


@pytest.mark.parametrize(("path", "step"), legacy_cases())
def test_legacy_traces_decode_as_the_legacy_decoder_does(path: Path, step: int | None) -> None:
    data = path.read_bytes()
    d = livetrace.open_decoder(data[:16])
    assert d.legacy
    # Nothing before the end: a legacy trace is ordered once its footer is in.
    expected, stacks, error = legacy_reference(path)
    items: list[object] = []
    try:
        for p in pieces(data, step):
            assert d.feed(p) == []
        items += d.close()
    except TraceFormatError as e:
        assert str(e) == error
        return
    assert error is None
    notice = items[0]
    assert isinstance(notice, SymbolsResolved) and notice.events == len(expected) and notice.stacks == stacks
    assert all(isinstance(i, livetrace.EventBatch) for i in items[1:])
    assert texts(items) == expected
    # The tables are the legacy trace's own, not a forged generation.
    batches = [i for i in items[1:] if isinstance(i, livetrace.EventBatch)]  # all of them, as checked above
    tables = {id(b.gen) for b in batches}
    assert len(tables) == 1 and not isinstance(batches[0].gen, Generation)


def test_open_decoder_knows_the_formats_and_refuses_the_rest() -> None:
    assert not livetrace.open_decoder(b"go 1.22 trace\x00\x00\x00").legacy
    assert livetrace.open_decoder(b"go 1.21 trace\x00\x00\x00").legacy
    assert livetrace.open_decoder(b"gotrace\x00").legacy
    with pytest.raises(TraceFormatError, match="not a Go execution trace"):
        livetrace.open_decoder(b"PK\x03\x04 not a trace at all")
    with pytest.raises(livetrace.UnsupportedTraceVersionError):
        livetrace.open_decoder(b"go 1.4 trace\x00\x00\x00\x00")
    with pytest.raises(livetrace.UnsupportedTraceVersionError):
        livetrace.open_decoder(b"go 1.99 trace\x00\x00\x00")


def test_decode_reads_whole_files_of_every_format(tmp_path: Path) -> None:
    modern = next(t for t in TEXT_TESTS if t.expect_success and t.minor >= 25)
    path = tmp_path / "modern.trace"
    path.write_bytes(modern.data)
    events = list(livetrace.decode(path))
    assert [parsed_text(e) for e in events] == modern_reference(modern.data)[0]
    assert all(isinstance(e, livetrace.Event) for e in events)
    with open(path, "rb") as f:  # a file object too
        assert [parsed_text(e) for e in livetrace.decode(f)] == modern_reference(modern.data)[0]

    legacy = LEGACY / "http_1_21_good"
    events = list(livetrace.decode(str(legacy)))
    assert [parsed_text(e) for e in events] == legacy_reference(legacy)[0]
    batches = list(livetrace.decode_batches(io.BytesIO(legacy.read_bytes())))
    assert isinstance(batches[0], SymbolsResolved) and isinstance(batches[0], Notice)
    logs = list(livetrace.decode(legacy, kinds={Kind.LOG, Kind.SYNC}))
    assert logs and {e.kind for e in logs} <= {Kind.LOG, Kind.SYNC}


def test_decode_gives_the_events_before_a_problem_then_the_error(tmp_path: Path) -> None:
    data = next(t for t in TEXT_TESTS if t.name == "go122-gc-stress").data
    cut = data[: len(data) // 2]
    expected, error = modern_reference(cut)
    path = tmp_path / "cut.trace"
    path.write_bytes(cut)
    got: list[str] = []
    # Cut in a Go 1.22 generation, before its stacks: as Go's reader, the generation is taken as whole so
    # far, and its events' stacks missing is the error (go tool trace -d=parsed says the same).
    with pytest.raises(livetrace.TraceFormatError) as exc:
        # extend keeps the items it took before the error.
        got.extend(map(parsed_text, livetrace.decode(path)))
    assert str(exc.value) == error and got == expected and len(got) > 1


def test_every_non_event_item_is_a_notice() -> None:
    gap = Gap(5, 7, 211, 12433120, False)
    seg = SegmentGap(0, 1_000_000, 1_281_512)
    res = SymbolsResolved(0, 205268, 103, 40564031, 40564469.6)
    for n in (gap, seg, res):
        assert isinstance(n, livetrace.Notice)
        assert str(n) == n.message and n.message
    assert str(gap) == "fell behind: the helper shed generations 5-7 (12,433,120 bytes)"
    assert str(seg) == "not traced for 0.3 ms: segment mode: the helper stopped and restarted the trace"
    assert "205,268 exact events" in str(res)
    # The README's loop, on a legacy session's items.
    data = (LEGACY / "http_1_21_good").read_bytes()
    live = LiveDecoder(provisional=False)
    frames = [Chunk(k, 10**18 + k * 10**6, 0, p) for k, p in enumerate(pieces(data, 4096))]
    items = list(live.process([*frames, Gap(1, 1, 0, 0, False), SegmentEnd(0, 10**18 + 10**9)]))
    events: list[livetrace.Event] = []
    for x in items:
        if isinstance(x, livetrace.Notice):
            continue
        assert isinstance(x, livetrace.EventBatch)  # not provisional
        events.extend(x)
    assert [type(x).__name__ for x in items if isinstance(x, Notice)] == ["Gap", "SymbolsResolved"]
    assert [parsed_text(e) for e in events] == legacy_reference(LEGACY / "http_1_21_good")[0]
    assert events[1].wall_time == pytest.approx(1e9 + events[1].time / 1e9)  # from the first chunk's read time


def test_live_decoder_starts_afresh_after_a_gap() -> None:
    t = next(t for t in TEXT_TESTS if t.name == "go122-task-across-generations")
    whole, _ = modern_reference(t.data)
    live = LiveDecoder()
    items = list(live.process([Chunk(0, 0, 0, t.data[:16]), Chunk(1, 0, 1, t.data[16:])]))
    # The last generation is complete only at the next one's start, or a gap.
    assert 0 < len(texts(items)) < len(whole) - 1
    items += live.process([Gap(3, 3, 0, 0, False)])
    gap = next(i for i, x in enumerate(items) if isinstance(x, Notice))
    assert isinstance(items[gap], Gap) and gap == len(items) - 1
    assert texts(items) == whole[:-1]  # all but the final Sync
    # A fresh decoder goes on: the stream ends with its final Sync.
    assert [e.kind for e in texts_events(live.finish())] == [Kind.SYNC]


def texts_events(items: Iterable[object]) -> list[livetrace.Event]:
    return [e for b in items if isinstance(b, livetrace.EventBatch) for e in b]


def test_kinds_and_states_print_as_their_names() -> None:
    assert str(Kind.LOG) == f"{Kind.LOG}" == "Log"
    assert f"{Kind.STATE_TRANSITION:>16}" == " StateTransition"
    assert repr(Kind.LOG) == "<Kind.LOG: 12>" and f"{Kind.LOG:d}" == "12" and Kind.LOG == 12  # type: ignore[comparison-overlap]  # mypy: an enum never equals an int
    assert [str(k) for k in Kind] == KIND_NAMES
    # As the JSON lines name them (docs/events-jsonl.md).
    doc = (Path(__file__).resolve().parents[1] / "docs" / "events-jsonl.md").read_text()
    kinds_row = next(line for line in doc.splitlines() if line.startswith("| `kind` |"))
    assert all(f"`{k}`" in kinds_row for k in Kind if k != Kind.BAD)
    assert [str(s) for s in livetrace.GoState] == GO_STATE_NAMES
    assert [str(s) for s in livetrace.ProcState] == PROC_STATE_NAMES
    assert f"{livetrace.GoState.RUNNING} -> {livetrace.ProcState.IDLE}" == "Running -> Idle"
