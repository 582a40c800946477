"""`tail`'s text lines: the compiled writer (text.c) against its twin, the
Python lines, byte for byte, on every corpus trace, on the demo's traces,
and on hostile columns (where both must fail alike)."""

from __future__ import annotations

import contextlib
from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace import TraceFormatError
from livetrace._cli.render.text import TextEncoder
from livetrace._files import decode_batches
from livetrace._trace.model.batch import NARGS, NEXTRA, EventBatch
from livetrace._trace.model.events import KIND_OF_CODE, Kind
from livetrace._trace.model.tables import Tables
from livetrace._trace.modern.decoder import ModernDecoder

from . import textform
from .conftest import examples, twin_on_stress
from .mutate import mutate

LEGACY = textform.CORPUS.parent / "legacy" / "go-testdata"
TEXT_TESTS = [t for t in textform.all_tests() if t.data]
# Both implementations are compared here, whichever the run is on: once is enough.
pytestmark = pytest.mark.compiled_core


def outcome(batches: list[EventBatch], t0: int, provisional: bool, color: bool, compiled: bool) -> object:
    """The lines of the batches, or the error that stopped them."""
    enc = TextEncoder(color, compiled=compiled)
    try:
        return b"".join(enc.encode(b, t0, provisional) for b in batches)
    except Exception as e:  # the twin's error, whatever it is, must be the core's
        return (type(e).__name__, str(e))


PLAIN_AND_MARKED = ((False, False), (True, True))  # (provisional, color): each mark, and the two together
EVERY_MARKING = ((False, False), (False, True), (True, False), (True, True))


def assert_twins_agree(
    batches: list[EventBatch], t0: int | None = None, markings: tuple[tuple[bool, bool], ...] = PLAIN_AND_MARKED
) -> None:
    if t0 is None:
        t0 = next((b.times[0] for b in batches if len(b)), 0)
    for provisional, color in markings:
        fast = outcome(batches, t0, provisional, color, True)
        twin = outcome(batches, t0, provisional, color, False)
        if fast != twin and isinstance(fast, bytes) and isinstance(twin, bytes):
            pairs = zip(fast.split(b"\n"), twin.split(b"\n"), strict=False)
            fast, twin = next(((a, b) for a, b in pairs if a != b), (len(fast), len(twin)))
        assert fast == twin, (provisional, color)


def modern_batches(data: bytes) -> list[EventBatch]:
    """The batches the compiled decoder makes of a modern trace, up to any error."""
    d = ModernDecoder(compiled=True)
    out: list[EventBatch] = []
    with contextlib.suppress(TraceFormatError):  # extend keeps what came before the error
        out.extend(d.feed_batches(data))
        out.extend(d.close_batches())
    return out


def file_batches(path: Path) -> list[EventBatch]:
    out: list[EventBatch] = []
    with contextlib.suppress(TraceFormatError):
        out.extend(b for b in decode_batches(path, compiled=True) if isinstance(b, EventBatch))
    return out


@pytest.mark.parametrize("t", TEXT_TESTS, ids=lambda t: t.name)
def test_twins_agree_on_go_text_form_tests(t: textform.TextTrace) -> None:
    batches = modern_batches(t.data)
    assert_twins_agree(batches)
    if batches:  # times before t0 too: negative offsets
        assert_twins_agree(batches, batches[-1].times[-1])


@given(st.data())
def test_twins_agree_on_mutated_traces(data: st.DataObject) -> None:
    t = data.draw(st.sampled_from(TEXT_TESTS))
    assert_twins_agree(modern_batches(mutate(data, t.data, keep=16)))


@pytest.mark.parametrize(
    "path", twin_on_stress(sorted(LEGACY.glob("*_*_*")), lambda p: p.stat().st_size), ids=lambda p: p.name
)
def test_twins_agree_on_legacy_traces(path: Path) -> None:
    batches = file_batches(path)  # up to the error, for a bad one
    assert batches or not path.name.endswith("_good")
    assert_twins_agree(batches)


@pytest.mark.parametrize(
    "origin", [1_700_000_000_123_456_789, 0, 999_999_999, -1, 253_402_300_799_000_000_000, 1 << 70]
)
def test_twins_agree_on_wall_clock_times(origin: int) -> None:
    """A legacy trace read live has a wall clock (estimated): its lines say
    the time of day, also for a clock at or past the ends of the range the
    core writes itself (before 1970, past year 9999, past int64)."""
    batches = file_batches(LEGACY / "user_task_region_1_21_good")
    assert batches
    for b in batches:
        assert b.gen is not None
        b.gen.wall_origin = origin
    assert_twins_agree(batches)


def test_compiled_and_twin_text_of_a_clock_snapshot_trace() -> None:
    """Go 1.25's traces carry a clock snapshot: the lines say the time of day."""
    t = textform.load(textform.CORPUS / "go125-sync.test")
    batches = modern_batches(t.data)
    assert any(b.gen is not None and b.gen.wall_base is not None for b in batches)
    assert_twins_agree(batches)


@pytest.mark.slow
def test_twins_agree_on_demo_traces(demo_traces: dict[str, Path], legacy_demo_traces: dict[str, Path]) -> None:
    for version, path in {**demo_traces, **legacy_demo_traces}.items():
        # Each version's first batches: the twin's lines cost a minute for all of them.
        batches = file_batches(path)[:6]
        assert sum(map(len, batches)) > 10_000, version
        assert_twins_agree(batches)


# Hostile columns: any code, any value, ids the tables may not have.
STRINGS = {0: b"", 1: b"chan receive", 2: b'a "quoted"\n\\ one', 3: b"\xff\xfe bad utf-8 \xc3", 4: "héllo ✓".encode()}
TABLES = Tables(
    7,
    strings=dict(STRINGS),
    stacks={0: (), 1: (0x100,), 2: (0x200, 0x100), 3: (0x999,)},  # 0x999: no frame
    frames={0x100: (1, 4, 10), 0x200: (3, 2, 20)},
    extra_strings=[b"", b"task type", b"\x80"],
)
CODES = [c for c in range(256) if KIND_OF_CODE[c] != Kind.BAD] + [0, 1, 52, 60, 200]
SMALL = st.integers(0, 6)
ANY_U64 = st.one_of(SMALL, st.integers(0, (1 << 64) - 1), st.just((1 << 64) - 1))
ANY_I64 = st.one_of(st.integers(-2, 6), st.integers(-(1 << 63), (1 << 63) - 1))


@st.composite
def hostile_batch(draw: st.DrawFn) -> EventBatch:
    n = draw(st.integers(1, 12))
    codes = bytes(draw(st.lists(st.sampled_from(CODES), min_size=n, max_size=n)))
    times = draw(st.lists(st.one_of(st.integers(0, 10**12), ANY_I64), min_size=n, max_size=n))
    ctx = [draw(st.lists(ANY_I64, min_size=n, max_size=n)) for _ in range(3)]
    args = draw(st.lists(ANY_U64, min_size=n * NARGS, max_size=n * NARGS))
    extra = draw(st.lists(ANY_U64, min_size=n * NEXTRA, max_size=n * NEXTRA))
    cols = (
        codes,
        array("q", times).tobytes(),
        *(array("q", c).tobytes() for c in ctx),
        array("Q", args).tobytes(),
        array("Q", extra).tobytes(),
    )
    return EventBatch(TABLES, n, cols)


@settings(max_examples=examples(500))
@given(
    hostile_batch(),
    st.one_of(st.none(), st.just(1_700_000_000_000_000_000), ANY_I64, st.just(1 << 64)),
    st.one_of(st.just(0), ANY_I64),
)
def test_twins_agree_on_hostile_columns(batch: EventBatch, origin: int | None, t0: int) -> None:
    TABLES.wall_origin = origin
    assert_twins_agree([batch], t0, EVERY_MARKING)
