"""Filters in the core: the compiled selector and its twin keep exactly the
events a plain reading of the :class:`Filter`'s documented meaning keeps,
on corpus traces of every format, for random filters. Sans-IO: fast."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace import Event, EventBatch, Filter, Kind
from livetrace._cli.render.dump import parsed_text
from livetrace._files import decode_batches
from livetrace._trace.accel import use_compiled
from livetrace._trace.select.events import EventSelector, select_events
from livetrace._trace.select.match import stack_ids_matching, string_ids_matching

from . import textform
from .conftest import examples, twin_on_stress
from .samelines import assert_same_lines

LEGACY = Path(__file__).resolve().parent / "corpus" / "legacy" / "go-testdata"
TRACES = {
    **{t.name: t.data for t in textform.all_tests() if t.expect_success and t.data},
    **{p.name: p.read_bytes() for p in sorted(LEGACY.glob("*_1_1[19]_good")) + sorted(LEGACY.glob("*_1_21_good"))},
}
# Both selectors are tested on the compiled core's pass (the twin alone
# where the core was not built): the twin's pass would repeat the twin's half.
pytestmark = pytest.mark.once
# The traces with the most to filter: tasks, regions, logs and stacks.
RICH = ["go122-annotations-stress", "user_task_region_1_21_good", "http_1_19_good", "stress_1_11_good"]
TASKISH = (Kind.TASK_BEGIN, Kind.TASK_END, Kind.REGION_BEGIN, Kind.REGION_END, Kind.LOG)


@cache
def batches(name: str, compiled: bool) -> list[EventBatch]:
    return [b for b in decode_batches(io.BytesIO(TRACES[name]), compiled=compiled) if isinstance(b, EventBatch)]


@cache
def all_events(name: str, compiled: bool) -> list[Event]:
    """The batches' events, made once: the compiled core's batches make new
    Event objects at each reading (a third of a reference's time)."""
    return [e for b in batches(name, compiled) for e in b]


def implementations() -> list[bool]:
    """The selector on the compiled core (where built) and on the twin,
    each on batches its own decoder made."""
    return [True, False] if use_compiled() else [False]


def fields(e: Event) -> str:
    """The event as `decode --dump parsed` prints it: the same on either
    decoder (whose raw ids may differ)."""
    return parsed_text(e)


def _matches(globs: tuple[str, ...], name: str) -> bool:
    return any(fnmatchcase(name, p) for p in globs)


def reference(events: Iterable[Event], flt: Filter) -> list[Event]:
    """The Filter's documented meaning, one Event at a time."""
    tasks: set[int] = set()
    out = []
    # Whether a stack has a frame the pattern finds, by its tables and id:
    # the same stack's frames are made and searched once.
    stack_matches: dict[tuple[int, int], bool] = {}
    for e in events:
        keep = True
        kind = e.kind
        if flt.kinds is not None and kind not in flt.kinds:
            keep = False
        if flt.goroutines is not None and e.g not in flt.goroutines:
            keep = False
        if flt.procs is not None and e.p not in flt.procs:
            keep = False
        if flt.regions is not None and not (
            kind in (Kind.REGION_BEGIN, Kind.REGION_END) and _matches(flt.regions, e.region()[1])
        ):
            keep = False
        if flt.logs is not None and not (kind == Kind.LOG and _matches(flt.logs, e.log()[1])):
            keep = False
        if flt.tasks is not None:
            in_task = False
            if kind == Kind.TASK_BEGIN:
                tid, _, typ = e.task()
                if _matches(flt.tasks, typ):
                    tasks.add(tid)
                in_task = tid in tasks
            elif kind == Kind.TASK_END:
                tid, _, typ = e.task()
                in_task = _matches(flt.tasks, typ)
                tasks.discard(tid)
            elif kind in TASKISH:
                in_task = e.args[0] in tasks
            keep = keep and in_task
        if flt.stack is not None:
            key = (id(e.gen), e.stack_id())  # the tables outlive the call: their ids stay theirs
            if (found := stack_matches.get(key)) is None:
                found = stack_matches[key] = any(flt.stack.search(f"{f.func} {f.file}:{f.line}") for f in e.stack())
            keep = keep and found
        if keep and flt.predicate is not None:
            keep = flt.predicate(e)
        if keep:
            out.append(e)
    return out


def selected(name: str, flt: Filter, compiled: bool) -> list[Event]:
    sel = EventSelector(flt, compiled=compiled)
    return [e for b in batches(name, compiled) for e in sel.select(b)]


@cache
def names_in(name: str) -> tuple[list[str], list[int], list[int], list[str]]:
    """What a trace has to filter on: task/region/log names, goroutines,
    procs, and words of its frames."""
    evs = all_events(name, False)
    names = sorted(
        {e.task()[2] for e in evs if e.kind in (Kind.TASK_BEGIN, Kind.TASK_END)}
        | {e.region()[1] for e in evs if e.kind in (Kind.REGION_BEGIN, Kind.REGION_END)}
        | {e.log()[1] for e in evs if e.kind == Kind.LOG}
    )
    funcs = sorted({f.func.rsplit(".", 1)[-1] for e in evs[:3000] for f in e.stack()})
    return names, sorted({e.g for e in evs}), sorted({e.p for e in evs}), funcs


@st.composite
def filters(draw: st.DrawFn, name: str) -> Filter:
    names, gs, ps, funcs = names_in(name)
    globs = st.lists(st.sampled_from([*names, "*", "*a*", "no-such", "[a-m]*"] if names else ["*"]), max_size=3)

    def maybe(s: st.SearchStrategy[object]) -> object:
        return draw(st.one_of(st.none(), s))

    kinds = maybe(st.frozensets(st.sampled_from([k for k in Kind if k != Kind.BAD]), min_size=1))
    stack = maybe(st.sampled_from(funcs or ["main"]).map(re.escape).map(re.compile))
    return Filter(
        kinds=kinds,  # type: ignore[arg-type]  # drawn from Kind
        goroutines=maybe(st.frozensets(st.sampled_from(gs))),  # type: ignore[arg-type]  # ints
        procs=maybe(st.frozensets(st.sampled_from(ps))),  # type: ignore[arg-type]  # ints
        tasks=maybe(globs.map(tuple)),  # type: ignore[arg-type]  # str tuples
        regions=maybe(globs.map(tuple)),  # type: ignore[arg-type]  # str tuples
        logs=maybe(globs.map(tuple)),  # type: ignore[arg-type]  # str tuples
        stack=stack,  # type: ignore[arg-type]  # a pattern
        predicate=maybe(st.sampled_from([lambda e: e.time % 3 != 0, lambda e: e.g % 2 == 0])),  # type: ignore[arg-type]  # a predicate
    )


def size(name: str) -> int:
    return len(TRACES[name])


@pytest.mark.parametrize("name", twin_on_stress(sorted(TRACES), size))
@pytest.mark.parametrize("compiled", implementations())
def test_an_empty_filter_keeps_every_event(name: str, compiled: bool) -> None:
    for b in batches(name, compiled):
        assert EventSelector(Filter(), compiled=compiled).select(b) is b


@pytest.mark.parametrize("name", twin_on_stress(RICH, size))
@settings(max_examples=examples(40))
@given(data=st.data())
def test_both_twins_keep_what_the_filter_means(name: str, data: st.DataObject) -> None:
    flt = data.draw(filters(name))
    for compiled in implementations():
        want = reference(all_events(name, compiled), flt)
        assert_same_lines(selected(name, flt, compiled), want, compiled)


@pytest.mark.parametrize("name", twin_on_stress(sorted(TRACES), size))
@settings(max_examples=examples(5))
@given(data=st.data())
def test_every_corpus_trace_filters_alike(name: str, data: st.DataObject) -> None:
    flt = data.draw(filters(name))
    for compiled in implementations():
        want = reference(all_events(name, compiled), flt)
        assert_same_lines(selected(name, flt, compiled), want, compiled)


def test_task_filters_follow_tasks_from_begin_to_end() -> None:
    name = "go122-annotations-stress"
    evs = [e for b in batches(name, False) for e in b]
    typ = next(e.task()[2] for e in evs if e.kind == Kind.TASK_BEGIN)
    got = selected(name, Filter(tasks=(typ,)), use_compiled())
    assert Kind.TASK_BEGIN in {e.kind for e in got} and len({e.kind for e in got}) > 1
    assert all(e.kind in TASKISH for e in got)


@pytest.mark.parametrize("compiled", implementations())
def test_take_makes_the_same_events_as_indexing(compiled: bool) -> None:
    for b in batches("user_task_region_1_21_good", compiled)[:3]:
        idx = list(range(0, len(b), 3))
        assert [fields(e) for e in b.take(idx)] == [fields(b[i]) for i in idx]
        assert len(b.take([])) == 0


def test_matching_ids_are_cached_per_tables() -> None:
    b = batches("go122-annotations-stress", False)[0]
    assert b.gen is not None
    rx = re.compile("main")
    first = stack_ids_matching(b.gen, rx)
    assert stack_ids_matching(b.gen, rx) is first
    assert string_ids_matching(b.gen, ("*",)) == frozenset(b.gen.strings)


def test_event_filters_refuse_span_kinds_and_durations() -> None:
    from livetrace._trace.spans.model import SpanKind

    with pytest.raises(ValueError, match="span kinds"):
        EventSelector(Filter(kinds=frozenset({SpanKind.GC})))
    with pytest.raises(ValueError, match="min_duration"):
        EventSelector(Filter(min_duration=1000))
    b = batches("go122-annotations-stress", False)[0]
    assert len(select_events(b, Filter(kinds=frozenset({Kind.SYNC})))) <= len(b)
