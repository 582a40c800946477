"""A span builder that follows less (``follow``: goroutines' states, Ps',
the logs of tasks and regions, some or none of them) gives the spans of
the kinds it still serves exactly as one that follows everything does,
sequential and a generation at a time, on both twins; widened midway, it
follows the new kinds from then on, alike both ways; a fan-out's builder
follows what its span subscribers' kinds need, or what they say. Sans-IO."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable
from pathlib import Path

import pytest

from livetrace import EventBatch, SpanBatch, SpanBuilder
from livetrace._files import decode_batches
from livetrace._session.subscribers import Fanout, follows
from livetrace._trace.select.filter import Filter
from livetrace._trace.spans.join import SpanJoin, build_generation
from livetrace._trace.spans.model import Follow, Span, SpanKind, follow_for
from livetrace._trace.spec.kinds import Kind

from .test_span_join import cut, generations, named
from .test_spans import LEGACY, batches_of

BOTH = [False, pytest.param(True, marks=pytest.mark.compiled_core)]
pytestmark = pytest.mark.once

STATES = (SpanKind.RUNNING, SpanKind.RUNNABLE, SpanKind.BLOCKED, SpanKind.SYSCALL)
RUNTIME = Path(__file__).parent / "corpus" / "runtime" / "go126-generations.trace"


def served(follow: Follow) -> Callable[[Span], Span | None]:
    """What a builder that follows ``follow`` makes of a full builder's span
    (None: not made alike): a task's or region's without its logs where
    the logs are not followed."""

    def view(s: Span) -> Span | None:
        if s.kind == SpanKind.RUNNING and s.resource.kind == "Proc":
            return s if follow & Follow.PROCS else None
        if s.kind in STATES:
            return s if follow & Follow.GOROUTINES else None
        if s.kind in (SpanKind.TASK, SpanKind.REGION) and not follow & Follow.LOGS:
            return dataclasses.replace(s, logs=())
        return s

    return view


def spans(out: list[SpanBatch], view: Callable[[Span], Span | None]) -> list[Span]:
    return [v for sb in out for s in sb if (v := view(s)) is not None]


def sequential(batches: list[EventBatch], compiled: bool, follow: Follow, gap: int = -1) -> list[SpanBatch]:
    b = SpanBuilder(compiled=compiled, follow=follow)
    out = []
    for i, gen in enumerate(generations(batches)):
        if i == gap:
            b.gap()
        out += [b.feed(x) for x in gen]
    return [*out, b.close()]


def joined(batches: list[EventBatch], compiled: bool, follow: Follow, gap: int = -1) -> list[SpanBatch]:
    j, out = SpanJoin(compiled=compiled), []
    for i, gen in enumerate(generations(batches)):
        if i == gap:
            j.gap()
        out += j.join(build_generation(gen, i, compiled=compiled, follow=follow), gen)
    return [*out, j.close()]


def traces() -> list[tuple[str, list[EventBatch]]]:
    out = [(n, batches_of(named(n).data)) for n in ("go122-annotations", "go122-annotations-stress", "go122-gc-stress")]
    out.append(("annotations cut", cut(batches_of(named("go122-annotations-stress").data), 7)))
    legacy = [b for b in decode_batches(LEGACY / "user_task_region_1_21_good") if isinstance(b, EventBatch)]
    return [*out, ("legacy", legacy), ("legacy cut", cut(legacy, 50))]


FOLLOWS = [Follow(0), Follow.GOROUTINES, Follow.PROCS, Follow.LOGS, Follow.GOROUTINES | Follow.LOGS]


@pytest.mark.parametrize("compiled", BOTH)
@pytest.mark.parametrize("follow", FOLLOWS, ids=lambda f: f"follow{int(f)}")
def test_what_is_followed_is_what_a_full_builder_gives(compiled: bool, follow: Follow) -> None:
    view = served(follow)
    for name, batches in traces():
        full = spans(sequential(batches, compiled, Follow.ALL), view)
        assert full, name
        assert spans(sequential(batches, compiled, follow), view) == full, name
        # a generation at a time, joined (regions and tasks across the cuts: some built again)
        assert spans(joined(batches, compiled, follow), view) == full, name
        n = len(generations(batches))
        if n > 1:
            gapped = spans(sequential(batches, compiled, Follow.ALL, n // 2), view)
            assert spans(sequential(batches, compiled, follow, n // 2), view) == gapped, name
            assert spans(joined(batches, compiled, follow, n // 2), view) == gapped, name


@pytest.mark.parametrize("compiled", BOTH)
def test_following_nothing_but_the_ranges_makes_no_state_spans(compiled: bool) -> None:
    batches = batches_of(named("go122-gc-stress").data)
    kinds = {s.kind for sb in sequential(batches, compiled, Follow(0)) for s in sb}
    assert kinds and not kinds & set(STATES)
    running = [s for sb in sequential(batches, compiled, Follow.PROCS) for s in sb if s.kind == SpanKind.RUNNING]
    assert running and all(s.resource.kind == "Proc" for s in running)


@pytest.mark.parametrize("compiled", BOTH)
def test_widened_it_follows_the_new_kinds_from_then_on(compiled: bool) -> None:
    batches = cut(batches_of(named("go122-annotations-stress").data), 50)
    half = len(batches) // 2
    full = SpanBuilder(compiled=compiled)
    want = [s for b in batches for s in full.feed(b)] + list(full.close())
    b = SpanBuilder(compiled=compiled, follow=Follow(0))
    got = [s for x in batches[:half] for s in b.feed(x)]
    b.widen(Follow.ALL)
    assert b.follow == Follow.ALL
    got += [s for x in batches[half:] for s in b.feed(x)] + list(b.close())
    # The ranges throughout, as the full builder's; their logs from then on (each open task and
    # region starts with none: a region's logs are never another's).
    ranges = [(g, w) for g, w in zip(ranged(got), ranged(want), strict=True)]
    assert [dataclasses.replace(g, logs=()) for g, _ in ranges] == [dataclasses.replace(w, logs=()) for _, w in ranges]
    since = min(e.time for e in batches[half])
    for g, w in ranges:
        assert g.logs == (w.logs if g.start >= since else w.logs[len(w.logs) - len(g.logs) :])
    assert any(0 < len(g.logs) < len(w.logs) for g, w in ranges)  # (logs on both sides of the widening)
    # The states begun since, as the full builder's; none begun before is made up.
    late = sorted((s.start, s.resource.id, s.kind) for s in want if s.kind in STATES and s.start >= since)
    assert sorted((s.start, s.resource.id, s.kind) for s in got if s.kind in STATES) == late != []
    states = {(s.start, s.resource.id, s.kind): s for s in want if s.kind in STATES}
    assert all(states[(s.start, s.resource.id, s.kind)] == s for s in got if s.kind in STATES)


def ranged(spans: list[Span]) -> list[Span]:
    return [s for s in spans if s.kind not in STATES]


@pytest.mark.parametrize("compiled", BOTH)
def test_widened_at_a_generation_split_is_sequential(compiled: bool) -> None:
    """Widened where a generation begins, a generation at a time, joined:
    what the sequential builder widened there gives, logs included."""
    for name, batches in traces():
        gens = generations(batches)
        if len(gens) < 3:
            continue
        half = len(gens) // 2
        b, seq = SpanBuilder(compiled=compiled, follow=Follow(0)), []
        j, split = SpanJoin(compiled=compiled), []
        for i, gen in enumerate(gens):
            follow = Follow(0) if i < half else Follow.ALL
            if i == half:
                b.widen(Follow.ALL)
            seq += [b.feed(x) for x in gen]
            split += j.join(build_generation(gen, i, compiled=compiled, follow=follow), gen)
        every = served(Follow.ALL)
        assert spans([*split, j.close()], every) == spans([*seq, b.close()], every), name


@pytest.mark.parametrize("compiled", BOTH)
def test_follow_flags_are_checked(compiled: bool) -> None:
    with pytest.raises(ValueError, match="follow flags 16"):
        SpanBuilder(compiled=compiled, follow=Follow(16))
    b = SpanBuilder(compiled=compiled, follow=Follow.PROCS)
    with pytest.raises(ValueError, match="follow flags 8"):
        b.widen(Follow(8))
    assert b.follow == Follow.PROCS


def test_what_each_kind_needs() -> None:
    assert follow_for(None) == Follow.ALL
    assert follow_for({SpanKind.GC, SpanKind.STW, SpanKind.MARK_ASSIST}) == Follow(0)
    assert follow_for({SpanKind.TASK, SpanKind.GC}) == follow_for({SpanKind.REGION}) == Follow.LOGS
    assert follow_for({SpanKind.BLOCKED}) == follow_for({SpanKind.SYSCALL, SpanKind.GC}) == Follow.GOROUTINES
    assert follow_for({SpanKind.RUNNING}) == Follow.GOROUTINES | Follow.PROCS


def test_a_fanouts_builder_follows_what_its_span_subscribers_need() -> None:
    batches = [b for b in decode_batches(io.BytesIO(RUNTIME.read_bytes())) if isinstance(b, EventBatch)]
    fan = Fanout()
    gc = fan.subscribe(Filter(kinds=frozenset({SpanKind.GC, SpanKind.STW})), what="spans")
    fan.subscribe(Filter(kinds=frozenset({Kind.LOG})))  # events: no spans needed
    assert follows(fan.subscribers) == Follow(0)
    got = [x for b in batches for sub, x, _ in fan.prepare(b) if sub is gc]
    got += [x for sub, x, _ in fan.prepare_end() if sub is gc]

    reference = SpanBuilder()
    every = [s for b in batches for s in reference.feed(b)] + list(reference.close())
    want = [s for s in every if s.kind in (SpanKind.GC, SpanKind.STW)]
    assert [s for x in got if isinstance(x, SpanBatch) for s in x] == want != []
    assert fan.spans_built == len(ranged(every)) < len(every)  # no goroutine's or P's span was made

    assert fan.subscribe(what="spans", marks=True).follows == Follow.ALL
    # Said outright (top: it reads no logs); marks count the goroutines' and Ps' open spans.
    top = Follow.GOROUTINES | Follow.PROCS
    assert fan.subscribe(what="spans", marks=True, follow=Follow(0)).follows == top
    assert fan.subscribe(what="spans", follow=Follow.LOGS).follows == Follow.LOGS
    with pytest.raises(ValueError, match="only a subscriber of spans"):
        fan.subscribe(what="batches", follow=Follow.LOGS)
    with pytest.raises(ValueError, match="follow must be Follow flags"):
        fan.subscribe(what="spans", follow=Follow(8))
    assert fan.subscribe(Filter(kinds=frozenset({SpanKind.BLOCKED})), what="spans").follows == Follow.GOROUTINES
    assert follows(fan.subscribers) == Follow.ALL


def test_a_text_tail_of_spans_follows_no_logs() -> None:
    """A text line shows no logs: tail's text span view needs them only to filter by them."""
    from livetrace._cli.tail import View

    assert View("text", None, True, False).follows() == Follow.GOROUTINES | Follow.PROCS
    assert View("text", Filter(kinds=frozenset({SpanKind.TASK})), True, False).follows() == Follow(0)
    assert View("text", Filter(logs=("status",)), True, False).follows() is None  # (its filter's: all)
    assert View("jsonl", None, True, False).follows() is None
    assert View("text", None, False, False).follows() is None  # events
