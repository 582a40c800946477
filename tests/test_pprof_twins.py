"""The pprof-like profiles' counting, compiled (_ccore/views/pprof.c's
ProfileCounts) and its pure-Python twin (_views/pprof.py): the same
profile, byte for byte, on every corpus trace, on mutated traces and on
arbitrary span columns, failing alike where the twin fails."""

from __future__ import annotations

import contextlib
import io
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import livetrace
from livetrace import EventBatch, SpanBatch, SpanBuilder, TraceFormatError
from livetrace._trace.accel import use_compiled
from livetrace._trace.model.tables import Tables
from livetrace._trace.spans.batch import COLUMNS
from livetrace._views.pprof import PROFILE_KINDS, ProfileBuilder, Record, counted_columns
from livetrace._views.pprof_file import encode_profile

from . import textform
from .conftest import examples, twin_on_stress
from .gilcheck import lets_the_gil_go
from .mutate import mutate

ROOT = Path(__file__).resolve().parent.parent
TEXT_TESTS = [t for t in textform.all_tests() if t.data]
LEGACY = sorted(p for p in (ROOT / "tests" / "corpus" / "legacy" / "go-testdata").iterdir() if p.is_file())
RUNTIME = sorted((ROOT / "tests" / "corpus" / "runtime").glob("*.trace"))
both = pytest.mark.compiled_core  # compares both implementations: once


def spans_of(data: bytes) -> list[SpanBatch]:
    """The spans of a trace's events (those before a problem, if it has one)."""
    builder = SpanBuilder()
    out: list[SpanBatch] = []
    with contextlib.suppress(TraceFormatError):  # keeping the batches before it
        out.extend(builder.feed(b) for b in livetrace.decode_batches(io.BytesIO(data)) if isinstance(b, EventBatch))
    out.append(builder.close())
    return out


Outcome = tuple[list[Record], bytes] | type[Exception]


def profiles(spans: Sequence[SpanBatch], compiled: bool, end_at: int = -1) -> dict[str, Outcome]:
    """Each kind's records and file; the error's type where there is one.
    end_at: end a trace before that batch (two traces added up)."""
    out: dict[str, Outcome] = {}
    for kind in PROFILE_KINDS:
        builder = ProfileBuilder(kind, compiled=compiled)
        try:
            for i, sb in enumerate(spans):
                if i == end_at:
                    builder.end_trace()
                builder.feed(sb)
            records = builder.records()
            out[kind] = (records, encode_profile(records))
        except (ValueError, IndexError) as e:
            out[kind] = type(e)
    return out


def assert_twins_agree(spans: Sequence[SpanBatch], end_at: int = -1) -> None:
    assert profiles(spans, True, end_at) == profiles(spans, False, end_at)


def corpus() -> list[tuple[str, bytes]]:
    return [(t.name, t.data) for t in TEXT_TESTS] + [(p.name, p.read_bytes()) for p in LEGACY + RUNTIME]


CORPUS = corpus()


@both
@pytest.mark.parametrize(
    ("name", "data"), twin_on_stress(CORPUS, lambda c: len(c[1])), ids=[name for name, _ in CORPUS]
)
def test_twins_agree_on_every_corpus_trace(name: str, data: bytes) -> None:
    spans = spans_of(data)
    assert_twins_agree(spans)
    assert_twins_agree(spans, len(spans) // 2)
    assert_twins_agree(spans + spans, len(spans))  # the same trace twice: its keys again, totals doubled


# Not vacuous agreement: the corpus makes profiles. On the compiled core's pass (the twin's where
# it was not built); the twin's pass would add only what the twins' agreement above already holds.
@pytest.mark.twin
def test_the_corpus_has_profiles() -> None:
    counted = 0
    for _, data in CORPUS:
        for outcome in profiles(spans_of(data), use_compiled()).values():
            assert not isinstance(outcome, type), outcome
            counted += len(outcome[0])
    assert counted > 100


@both
@settings(max_examples=examples(150))
@given(st.data())
def test_twins_agree_on_mutated_traces(data: st.DataObject) -> None:
    _, original = data.draw(st.sampled_from(CORPUS))
    assert_twins_agree(spans_of(mutate(data, original, keep=16)))


NAMES = [b"", b"chan receive", b"forever", b"network", b"sync.Mutex", b"select", b"preempted", b"syscall"]
I64 = st.one_of(st.integers(-3, 40), st.sampled_from([-(1 << 63), (1 << 63) - 1, 1 << 40]))


def hostile_tables() -> dict[int, Tables]:
    t1 = Tables(
        gen=1,
        strings={0: b"", 1: b"main.f", 2: b"f.go", 3: b"\xff bad utf-8"},
        stacks={0: (), 1: (10, 11), 2: (11,), 3: (0,), 4: (12, 0, 0), 5: tuple(range(100, 300))},
        frames={10: (1, 2, 7), 11: (3, 9, -4), 12: (1, 1, 1 << 40)},
    )
    t2 = Tables(gen=2, stacks={0: (), 1: (11, 10), 2: (13,)}, frames={10: (2, 1, 8), 13: (0, 0, 0)})
    return {1: t1, 2: t2}


@st.composite
def hostile_spans(draw: st.DrawFn, tables: dict[int, Tables], names: list[bytes]) -> SpanBatch:
    """Arbitrary span columns (a kind and reason of any value, times in any
    order, stacks and tables that may not exist); no span builder makes them."""
    n = draw(st.integers(0, 30))

    def col(elements: st.SearchStrategy[int]) -> list[int]:
        return draw(st.lists(elements, min_size=n, max_size=n))

    values = {
        "kinds": col(st.sampled_from([0, 1, 2, 3, 4, 7, 200])),
        "resource_kinds": col(st.sampled_from([0, 1, 1, 1, 2])),
        "resource_ids": col(st.one_of(st.integers(-1, 3), st.sampled_from([-(1 << 63), (1 << 63) - 1]))),
        "starts": col(I64),
        "ends": col(I64),
        "start_stacks": col(st.sampled_from([0, 1, 2, 3, 4, 5, 9, (1 << 64) - 1])),
        "start_tables": col(st.sampled_from([0, 1, 2, 3])),
        "reasons": col(st.integers(0, len(names))),  # len(names): not in the table
        "flags": col(st.integers(0, 3)),
    }
    cols = [array(code, values.get(name, [0] * n)).tobytes() for name, code in COLUMNS]
    return SpanBatch(cols, tables, names)


@both
@settings(max_examples=examples(400))
@given(st.data())
def test_twins_agree_on_hostile_columns(data: st.DataObject) -> None:
    tables = hostile_tables()
    names = NAMES[: data.draw(st.integers(1, len(NAMES)))]
    batches = [data.draw(hostile_spans(tables, names)) for _ in range(data.draw(st.integers(1, 4)))]
    assert_twins_agree(batches, data.draw(st.integers(-1, len(batches))))


@both
def test_columns_of_different_lengths_fail_alike() -> None:
    good = [array(code, [1] * 3).tobytes() for _, code in COLUMNS]
    for i in range(len(COLUMNS)):
        cols = list(good)
        cols[i] = cols[i][: len(cols[i]) // 3 * 2] if i else cols[i] + b"\x01"
        spans = SpanBatch(cols, {}, NAMES)
        outcomes = [profiles([spans], compiled) for compiled in (True, False)]
        assert outcomes[0] == outcomes[1]


@both
def test_a_names_table_that_changes_is_read_again() -> None:
    """The core's reason mask follows the batch's names table: another
    table (another span builder's) is read from its start."""
    one = SpanBatch([array(c, [1] * 1).tobytes() for _, c in COLUMNS], {}, [b"", b"preempted"])
    cols = [array(c, [1] * 1).tobytes() for _, c in COLUMNS]
    cols[0] = array("B", [2]).tobytes()  # blocked, on reason 1, from 1 to 5
    cols[4] = array("q", [5]).tobytes()
    other = SpanBatch(cols, {}, [b"", b"chan receive"])
    assert_twins_agree([one, other])
    records = profiles([other], True)["sync"]
    assert not isinstance(records, type) and records[0][0].count == 1


def feed_core(core: Any, spans: SpanBatch, key_of: object, mask: object = b"\1\1") -> None:
    """core.feed of the batch's columns (Any: the callers test wrong arguments)."""
    core.feed(*counted_columns(spans), mask, key_of)


@both
def test_the_core_checks_its_callers() -> None:
    """ProfileCounts fails with a typed error, never a crash, when called
    wrongly: a key id out of order, a callback that fails or feeds again,
    a column that is no buffer."""
    from livetrace._trace.accel import ccore

    cols = [array(code, [1] * 2).tobytes() for _, code in COLUMNS]
    cols[4] = array("q", [5, 6]).tobytes()
    spans = SpanBatch(cols, {}, NAMES)
    with pytest.raises(ValueError, match="span kind"):
        ccore.ProfileCounts(7)
    with pytest.raises(ValueError, match="out of order"):
        feed_core(ccore.ProfileCounts(1), spans, lambda tab, stack: 1)
    with pytest.raises(TypeError):
        feed_core(ccore.ProfileCounts(1), spans, lambda tab, stack: "0")
    with pytest.raises(ZeroDivisionError):
        feed_core(ccore.ProfileCounts(1), spans, lambda tab, stack: 1 // 0)
    core = ccore.ProfileCounts(1)

    def again(tab: int, stack: int) -> int:
        core.end_trace()
        return 0

    with pytest.raises(RuntimeError, match="busy"):
        feed_core(core, spans, again)

    def read_totals(tab: int, stack: int) -> int:
        core.totals()  # what feed is growing, from its callback (or another thread while it runs)
        return 0

    core = ccore.ProfileCounts(1)
    with pytest.raises(RuntimeError, match="busy"):
        feed_core(core, spans, read_totals)
    with pytest.raises(TypeError):
        feed_core(ccore.ProfileCounts(1), spans, lambda tab, stack: 0, mask=5)
    core = ccore.ProfileCounts(1)
    feed_core(core, spans, lambda tab, stack: 0)
    core.end_trace()
    # the goroutine's two spans, 1-5 and 1-6; last counted in trace 0, at 6
    assert core.totals() == [(0, 2, 4 + 5, 0, 6)]


def test_a_files_profile_imports_no_live_layer(tmp_path: Path) -> None:
    from .test_startup import RUN_MAIN, heavy_in, modules_after

    trace, out = tmp_path / "t.trace", tmp_path / "sched.pb.gz"
    (t,) = [t for t in TEXT_TESTS if t.name == "go122-annotations-stress"]
    trace.write_bytes(t.data)
    code, modules = modules_after(RUN_MAIN, "profile", str(trace), "--kind", "sched", "-o", str(out))
    assert code == 0 and out.stat().st_size > 0
    # protobuf writes the file (docs/dependencies.md); nothing of the live commands is loaded
    assert [m for m in heavy_in(modules) if not m.startswith("google.protobuf")] == []


@both
def test_feed_lets_the_gil_go() -> None:
    """ProfileCounts.feed counts without the GIL: a live profile's batches
    are fed on the event loop's thread, and the pipeline's threads need the
    GIL meanwhile."""
    from livetrace._trace.accel import ccore

    n = 1 << 16
    cols = [array(code, [0]) * n for _, code in COLUMNS]
    cols[0] = cols[1] = array("B", [1]) * n  # runnable goroutines' spans: counted, ProfileCounts(1)
    cols[2] = array("q", range(n))  # a goroutine each: a lifetime made per span
    columns = counted_columns(SpanBatch([c.tobytes() for c in cols], {}, NAMES))
    assert lets_the_gil_go(lambda: ccore.ProfileCounts(1).feed(*columns, b"\1\1", lambda tab, stack: 0))
