"""Spans a generation at a time (spans/join.py): each generation built on
its own, then joined in order, gives what the sequential SpanBuilder gives
(the same spans, fields, logs and tables, in the same order), on both
twins; on Go's own traces without building any generation again; in
threads at once as one after another."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import livetrace
from livetrace import EventBatch, SpanBatch, SpanBuilder
from livetrace._trace.model.events import stack_frames
from livetrace._trace.model.tables import Tables
from livetrace._trace.spans.join import SpanJoin, build_generation

from . import textform
from .conftest import examples
from .test_spans import LEGACY, TEXT_TESTS, batches_of, hostile_batch

BOTH = [False, pytest.param(True, marks=pytest.mark.compiled_core)]
# Each test names the core it builds with: the same outcome on either pass.
pytestmark = pytest.mark.once


def generations(batches: list[EventBatch]) -> list[list[EventBatch]]:
    """Batches grouped by generation (their tables), in order."""
    out: list[list[EventBatch]] = []
    for b in batches:
        if out and out[-1][0].gen is b.gen:
            out[-1].append(b)
        else:
            out.append([b])
    return out


def cut(batches: list[EventBatch], step: int) -> list[EventBatch]:
    """The same events as generations of `step` events each (boundaries where
    Go's runtime put none: nothing restated at them)."""
    out = []
    for b in batches:
        events = list(b)
        for i in range(0, len(events), step):
            gen = dataclasses.replace(b.gen) if b.gen is not None else None
            out.append(EventBatch.from_events(gen, events[i : i + step]))
    return out


def sequential(batches: list[EventBatch], compiled: bool, gaps: Collection[int]) -> list[SpanBatch]:
    b = SpanBuilder(compiled=compiled)
    out = []
    for i, gen in enumerate(generations(batches)):
        if i in gaps:
            b.gap()
        out += [b.feed(batch) for batch in gen]
    return [*out, b.close()]


def split(
    batches: list[EventBatch], compiled: bool, gaps: Collection[int], threads: int = 0
) -> tuple[list[SpanBatch], int]:
    """Each generation built on its own (in threads, when asked), then joined in order."""
    gens = generations(batches)
    if threads:
        with ThreadPoolExecutor(threads) as pool:
            built = list(pool.map(lambda ig: build_generation(ig[1], ig[0], compiled=compiled), enumerate(gens)))
    else:
        built = [build_generation(g, i, compiled=compiled) for i, g in enumerate(gens)]
    j = SpanJoin(compiled=compiled)
    out = []
    for i, (w, gen) in enumerate(zip(built, gens, strict=True)):
        if i in gaps:
            j.gap()
        out += j.join(w, gen)
    return [*out, j.close()], j.fallbacks


# Spans made as objects by same(), the first of a list of batches; the rest
# are compared by what they are made of.
SPANS_MADE = 5000


def same(spans: list[SpanBatch]) -> list[object]:
    """Everything a list of span batches holds. Name ids index each batch's
    own names table (a generation's, when split): compared by the names.

    A span is made of its batch's columns, its names table, its logs and
    the stacks of its tables (SpanBatch._make): those are compared, each
    stack the spans use resolved once, with the first SPANS_MADE spans made
    as objects too. Making every span of a demo trace took a minute a trace."""
    out: list[object] = []
    made = 0
    for sb in spans:
        c, names = sb.columns(), sb.names_table
        stacks = {*zip(c[7], c[5], strict=True), *zip(c[8], c[6], strict=True)}
        out.append(
            (
                len(sb),
                sb[: max(0, SPANS_MADE - made)],
                sorted(sb.tables),
                [bytes(col) for k, col in enumerate(c) if k not in (9, 10, 11)],
                [[names[i] for i in c[k]] for k in (9, 10, 11)],
                sb.logs,
                {
                    (t, s): stack_frames(sb.tables[t], s)
                    for t, s in stacks
                    if s and s in getattr(sb.tables.get(t), "stacks", ())
                },
            )
        )
        made += len(sb)
    return out


def check(batches: list[EventBatch], compiled: bool, gaps: Collection[int] = (), threads: int = 0) -> int:
    got, fallbacks = split(batches, compiled, gaps, threads)
    assert same(got) == same(sequential(batches, compiled, gaps))
    return fallbacks


def named(name: str) -> textform.TextTrace:
    (t,) = [t for t in TEXT_TESTS if t.name == name]
    return t


SMALL = ["go122-annotations", "go122-task-across-generations", "go122-confuse-seq-across-generations", "go123-sync"]


@pytest.mark.parametrize("compiled", BOTH)
@pytest.mark.parametrize("name", SMALL)
def test_split_at_go_generations_is_sequential_without_rebuilding(name: str, compiled: bool) -> None:
    batches = batches_of(named(name).data)
    assert len(generations(batches)) > 1
    assert check(batches, compiled) == 0
    assert check(batches, compiled, {1}) == 0  # the helper shed the generations before the second


@pytest.mark.parametrize("compiled", BOTH)
@pytest.mark.parametrize("step", [1, 3, 40])
def test_split_anywhere_is_sequential(step: int, compiled: bool) -> None:
    # Boundaries with nothing restated: regions, tasks, logs and states
    # cross them, and some generations must be built again.
    for name in ("go122-annotations", "go122-annotations-stress"):
        batches = cut(batches_of(named(name).data), step)
        check(batches, compiled)
        check(batches, compiled, {len(generations(batches)) // 2})


@pytest.mark.parametrize("compiled", BOTH)
def test_generations_built_in_threads_at_once(compiled: bool) -> None:
    batches = cut(batches_of(named("go122-gc-stress").data), 300)
    assert check(batches, compiled, threads=4) == check(batches, compiled)


@pytest.mark.compiled_core
@settings(max_examples=examples(300))
@given(st.data())
def test_split_hostile_columns_is_sequential(data: st.DataObject) -> None:
    gens = [Tables(gen=g, strings={0: b"", 1: b"chan receive", 2: f"r{g}".encode()}) for g in range(4)]
    for t in gens:
        t.extra_strings.append(b"task type")
    n = data.draw(st.integers(1, 6))
    batches = [data.draw(hostile_batch(gens[min(i // 2, 3)])) for i in range(n)]
    gaps = set(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    for compiled in (True, False):
        check(batches, compiled, gaps)


# -- corpus-wide and demo traces (slow) --


@pytest.mark.twin
@pytest.mark.parametrize("compiled", BOTH)
@pytest.mark.parametrize("t", TEXT_TESTS, ids=lambda t: t.name)
def test_split_go_text_form_tests(t: textform.TextTrace, compiled: bool) -> None:
    batches = batches_of(t.data)
    n = len(generations(batches))
    assert check(batches, compiled) == 0
    for gap in range(1, n):
        assert check(batches, compiled, {gap}) == 0
    for step in (1, 7, 100):
        pieces = cut(batches, step)
        check(pieces, compiled)
        check(pieces, compiled, {len(generations(pieces)) // 2})


@pytest.mark.twin
@pytest.mark.parametrize("compiled", BOTH)
@pytest.mark.parametrize("name", sorted(p.name for p in LEGACY.iterdir() if p.name.endswith("_good")))
def test_split_legacy_corpus(name: str, compiled: bool) -> None:
    # A legacy trace is one generation (and a segment its own trace): cut it.
    batches = [b for b in livetrace.decode_batches(LEGACY / name) if isinstance(b, EventBatch)]
    check(batches, compiled)
    pieces = cut(batches, 5000)
    check(pieces, compiled)
    check(pieces, compiled, {len(generations(pieces)) // 2})


@pytest.mark.twin
@pytest.mark.parametrize("compiled", BOTH)
def test_split_demo_traces(demo_traces: dict[str, Path], compiled: bool) -> None:
    paths = list(demo_traces.values())
    for path in paths if compiled else paths[:1]:  # the twin takes minutes for each
        batches = [b for b in livetrace.decode_batches(path) if isinstance(b, EventBatch)]
        n = len(generations(batches))
        assert n > 1
        assert check(batches, compiled) == 0  # Go restates every status at a boundary: nothing built again
        if compiled:  # (the twin takes minutes for each)
            assert check(batches, compiled, {n // 2}) == 0
            assert check(batches, compiled, threads=2) == 0


@pytest.mark.twin
@pytest.mark.parametrize("compiled", BOTH)
def test_split_legacy_demo_traces(legacy_demo_traces: dict[str, Path], compiled: bool) -> None:
    for path in legacy_demo_traces.values():
        batches = [b for b in livetrace.decode_batches(path) if isinstance(b, EventBatch)]
        check(batches, compiled)
        check(cut(batches, 50000), compiled)


@pytest.mark.compiled_core
@pytest.mark.parametrize("step", [0, 40])  # Go's generations; or 40 events each, regions open across
def test_the_room_a_split_core_reserves_changes_nothing(step: int) -> None:
    # build_generation tells the compiled core how many events it will be fed, for the room of
    # its region records: none (not a list), far too little (they grow past it), or enough.
    from livetrace._trace import _ccore

    batches = batches_of(named("go122-annotations-stress").data)
    for gen in generations(cut(batches, step) if step else batches):
        goroutines = sorted({g for b in gen for g in b.columns()[4]})
        got = []
        for hint in (0, 1, 10**6):
            core = _ccore.SpanCore(True, 7, hint)
            cols = []
            for b in gen:
                codes, times, _, procs, gs, args, extra = b.columns()
                strings = b.gen.strings if b.gen is not None else {}
                xs = b.gen.extra_strings if b.gen is not None else [b""]
                out = core.feed(codes, times, procs, gs, args, extra, 0, strings, xs, [b""])
                cols.append([bytes(c) for c in out])
            got.append((cols, core.export(), [core.region_meta(g) for g in goroutines]))
        assert got[0] == got[1] == got[2]
