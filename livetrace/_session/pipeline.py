"""A session's pipeline with a pool (``jobs`` above 1): what each unit of
the trace goes through between the decoder and the subscribers.

The decoder (one thread, in order: its ordering engine's state crosses
generations) yields items; :class:`Cutter` groups them into units, a whole
generation each (a legacy segment, a pprof window) with the notices around
it, and the subscribers of the moment; where no subscriber wants spans, a
unit is a few batches of a generation (nothing else needs it whole). Each
unit then passes the stages :func:`stages` lists on a
:class:`~livetrace._session.pool.Line` (ordered stages one unit at a time
in the trace's order, the others in the pool, units side by side):

1. ``order`` (ordered): each task filter learns the unit's tasks;
2. ``select`` (pool): each event subscriber's filter; the unit's spans,
   built on their own (:func:`build_generation`);
3. ``join`` (ordered): the spans joined to those open before
   (:class:`SpanJoin`), the helper's gaps and the segments' ends applied
   (and a :class:`SpanMark` after the unit's spans, if a subscriber asked);
4. ``select spans`` (pool): each span subscriber's filter;
5. ``map order`` (ordered): each subscriber's ``map`` called on its batches;
6. ``deliver`` (ordered): into the subscribers' buffers, on trio, each
   batch as soon as the work its map returned is done: that work runs in
   the pool a batch at a time, at most ``window`` x jobs batches ahead of
   the delivery (a batch's lines are megabytes, a generation's gigabytes on a
   big service: only the window's are ever held).

What a subscriber gets is what the one-job pipeline (``Fanout.prepare``,
with one sequential :class:`SpanBuilder`) gives, byte for byte.
``python -m livetrace._session.pipeline`` prints the stages as a mermaid
flowchart (docs/decoder.md shows it).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import trio

from livetrace._items import Gap, Provisional, SegmentGap, SpanMark
from livetrace._session.limits import Counters
from livetrace._session.pool import Stage
from livetrace._session.subscribers import Fanout, Prepared, Subscription
from livetrace._trace.model.batch import NARGS, NEXTRA, EventBatch
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.join import GenerationSpans, SpanJoin, build_generation

__all__ = ["EVENT_BYTES", "MAP_WINDOW", "SPAN_BYTES", "Cutter", "Unit", "mermaid", "stages", "unit_bytes"]


# Events in a unit when no spans are built (a unit is then a few batches): units cost a few
# hand-overs between threads each, and the events they hold are memory the decoder cannot reuse.
UNIT_EVENTS = 32768
# The bytes of an event's columns in an EventBatch (its code; time, thread, proc and goroutine; NARGS
# arguments and NEXTRA extras): what a unit counts as against the line's cap on bytes.
EVENT_BYTES = 1 + 8 * (4 + NARGS + NEXTRA)
# The bytes of the spans built from an event, where they are (their columns, measured once with
# tracemalloc on the 16-P trace's largest generation, 1.5M events; docs/decoder.md, "Bounded memory").
SPAN_BYTES = 80
# Batches whose maps' work runs ahead of their delivery, per job.
MAP_WINDOW = 2


class _Spans:
    """The span subscribers' join, while there are some; ``token`` is the
    last generation's key, counted as :class:`SpanBuilder` counts them."""

    def __init__(self) -> None:
        self.join = SpanJoin()
        self.token = -1


class Unit:
    """A unit's items on their way (a generation's, or a few of its
    batches), and what each stage made of them."""

    __slots__ = (
        "batches",
        "built",
        "end",
        "events",
        "items",
        "ordered",
        "out",
        "span_items",
        "spans",
        "subs",
        "todo",
        "token",
    )

    def __init__(self, subs: tuple[Subscription, ...], spans: _Spans | None) -> None:
        self.subs = subs
        self.spans = spans
        self.items: list[object] = []  # as decoded: batches, provisional batches, notices
        self.batches: list[EventBatch] = []  # the exact ones: one generation's
        self.events = 0  # in them
        self.token = -1
        self.end = False  # the last unit: the spans still open are closed
        self.ordered: dict[Subscription, list[object]] = {}
        self.built: GenerationSpans | None = None
        self.span_items: list[object] = []
        self.out: list[Prepared] = []
        self.todo: list[tuple[int, Callable[[], object]]] = []

    def add(self, item: object) -> None:
        self.items.append(item)
        if isinstance(item, EventBatch):
            if not self.batches and self.spans is not None:
                if item.gen is not None:
                    self.spans.token += 1
                self.token = self.spans.token
            self.batches.append(item)
            self.events += len(item)


def unit_bytes(u: Unit) -> int:
    """A unit's size on the line: its events' columns, and the spans built
    from them if any are, counted from its events without touching them
    (the pure-Python twin's events are objects, which hold more; the lines
    written of them are a window of batches at a time)."""
    return u.events * (EVENT_BYTES + (SPAN_BYTES if u.spans is not None else 0))


class Cutter:
    """In the decoder's thread: the items, cut into units at each new
    generation, or every UNIT_EVENTS events where no spans are built
    (:meth:`add`), and at the end of what a feed completed (:meth:`flush`):
    the decoder yields whole generations only."""

    def __init__(self, fanout: Fanout) -> None:
        self._fanout = fanout
        self._unit: Unit | None = None
        self._spans: _Spans | None = None

    def add(self, item: object) -> Unit | None:
        """Add an item; the unit it completed, if any."""
        done = None
        u = self._unit
        # A unit is a generation where spans are built from it; else a few batches (any
        # split of the stream is one then), so that little is held at once.
        if (
            u is not None
            and u.batches
            and isinstance(item, EventBatch)
            and (item.gen is not u.batches[0].gen or (u.spans is None and u.events >= UNIT_EVENTS))
        ):
            done = self.flush()
        if self._unit is None:
            self._unit = self._new()
        self._unit.add(item)
        return done

    def holding(self) -> tuple[int, int]:
        """What it holds against what is in flight: 1 while it fills a unit
        that is a generation (spans are built from it), else 0; and the
        unit's bytes (:func:`unit_bytes`)."""
        u = self._unit
        if u is None:
            return 0, 0
        return int(u.spans is not None and bool(u.batches)), unit_bytes(u)

    def _new(self) -> Unit:
        subs = self._fanout.subscribers
        if not any(s.what == "spans" for s in subs):
            self._spans = None  # as Fanout forgets its builder: a later span subscriber starts afresh
        elif self._spans is None:
            self._spans = _Spans()
        return Unit(subs, self._spans)

    def flush(self, end: bool = False) -> Unit | None:
        """The unit being filled, if any (at the end, always one: the spans
        still open are closed in it)."""
        u, self._unit = self._unit, None
        if u is None and end:
            u = self._new()
        if u is not None:
            u.end = end
        return u


# -- the stages --


def _order(u: Unit) -> None:
    for sub in u.subs:
        if sub._stateful:
            u.ordered[sub] = [sub._order(x) for x in u.items]


def _select(u: Unit) -> None:
    for sub in u.subs:
        if sub.what == "spans":
            continue
        ordered = u.ordered.get(sub)
        for k, x in enumerate(u.items):
            got = sub._select(x) if ordered is None else sub._select(x, ordered[k])
            if got is not None:
                u.out.append((sub, got, None))
    if u.spans is not None and u.batches:
        u.built = build_generation(u.batches, u.token)


def _join(u: Unit) -> None:
    j = u.spans.join  # type: ignore[union-attr]  # wanted: there are span subscribers
    out: list[object] = []
    marks = any(s.marks for s in u.subs)
    for x in u.items:
        if isinstance(x, Provisional):
            continue
        if isinstance(x, EventBatch):
            if x is u.batches[0]:
                assert u.built is not None
                out += j.join(u.built, u.batches)
                if marks:
                    out.append(SpanMark(u.events, j.open_counts()))
        elif isinstance(x, Gap):
            j.gap()
            out.append(x)
        elif isinstance(x, SegmentGap):
            out += [j.close(), x]
        else:
            out.append(x)
    if u.end:
        out.append(j.close())
    u.built = None
    u.span_items = out
    if all(s.what == "spans" for s in u.subs):
        u.items, u.batches = [], []  # only the spans go on: let the generation's events go


def _select_spans(u: Unit) -> None:
    for sub in u.subs:
        if sub.what != "spans":
            continue
        for x in u.span_items:
            got = sub._select(x)
            if got is not None:
                u.out.append((sub, got, None))


def _map_order(u: Unit) -> None:
    for k, (sub, got, _) in enumerate(u.out):
        if sub._mapped(got):
            u.todo.append((k, sub.map(got)))  # type: ignore[misc]  # _mapped: it has a map


def stages(
    fanout: Fanout,
    counters: Counters,
    token: trio.lowlevel.TrioToken | None,
    pool: ThreadPoolExecutor | None,
    jobs: int = 1,
    window: int = MAP_WINDOW,
) -> list[Stage[Unit]]:
    """The stages of ``fanout``'s units: ``deliver`` runs the maps' work in
    ``pool`` (of ``jobs`` threads), ``window`` batches a job ahead, hands
    the results to trio (``token``: its loop), and counts the spans built."""
    ahead_most = window * jobs

    def deliver(u: Unit) -> None:
        fanout.spans_built += sum(len(x) for x in u.span_items if isinstance(x, SpanBatch))
        counters.spans = fanout.spans_built
        work = dict(u.todo)
        u.todo.clear()
        running: dict[int, Future[object]] = {}
        ahead = 0  # the next item whose work may start
        ready: list[Prepared] = []
        for k, (sub, got, _) in enumerate(u.out):
            while ahead < len(u.out) and len(running) < ahead_most:
                if ahead in work:
                    assert pool is not None
                    running[ahead] = pool.submit(work.pop(ahead))
                ahead += 1
            future = running.pop(k, None)
            if future is None:
                ready.append((sub, got, None))
                continue
            ready.append((sub, future.result(), got))
            u.out[k] = (sub, None, None)  # the batch's lines are the subscriber's now
            trio.from_thread.run(fanout.deliver, ready, trio_token=token)
            ready = []
        if ready:
            trio.from_thread.run(fanout.deliver, ready, trio_token=token)

    def has_spans(u: Unit) -> bool:
        return u.spans is not None

    return [
        Stage("order", True, _order, lambda u: any(s._stateful for s in u.subs)),
        Stage("select", False, _select, lambda u: bool(u.items)),
        Stage("join", True, _join, has_spans),
        Stage("select spans", False, _select_spans, has_spans),
        Stage("map order", True, _map_order, lambda u: any(s.map is not None for s in u.subs)),
        Stage("deliver", True, deliver, note=f"the maps' work in the pool, a batch at a time, {window} x jobs ahead"),
    ]


def mermaid() -> str:
    """The pipeline as a mermaid flowchart, from the stages :func:`stages` makes."""
    lines = [
        "flowchart LR",
        '  read["read frames (trio)"] --> asm["assemble generations (the decoder\'s thread, in order)"]',
        '  asm --> fresh[["order each generation fresh, Go 1.22+ (pool of jobs threads)"]]',
        '  fresh --> carry["carry onto the state the one before ended in (the decoder\'s thread, in order)"]',
        '  carry --> cut["cut into units: a generation each (a few batches if no spans are built)"]',
    ]
    prev = "cut"
    for k, stage in enumerate(stages(Fanout(), Counters(), None, None)):
        node = f"s{k}"
        what = f"{stage.name} (in order{'; ' + stage.note if stage.note else ''})"
        shape = f'["{what}"]' if stage.ordered else f'[["{stage.name} (pool of jobs threads)"]]'
        lines.append(f"  {prev} --> {node}{shape}")
        prev = node
    lines.append(f'  {prev} --> subs["subscribers\' buffers (trio)"]')
    return "\n".join(lines)


if __name__ == "__main__":
    print(mermaid())
