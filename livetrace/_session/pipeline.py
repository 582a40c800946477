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
   the pool a few batches at a time (MAP_GROUP_EVENTS, where the map joins its
   results), at most ``window`` x jobs pieces ahead of the delivery (a
   batch's lines are megabytes, a generation's gigabytes on a big service:
   only the window's are ever held); results done together are handed over
   together.

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
from livetrace._session.subscribers import Fanout, Prepared, Subscription, follows
from livetrace._trace.model.batch import EVENT_BYTES, EventBatch
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.join import GenerationSpans, SpanJoin, build_generation
from livetrace._trace.spans.model import Follow

__all__ = ["MAP_WINDOW", "SPAN_BYTES", "Cutter", "Unit", "joined", "mermaid", "stages", "unit_bytes"]


# Events in a unit when no spans are built (a unit is then a few batches): units cost a few
# hand-overs between threads each, and the events they hold are memory the decoder cannot reuse.
UNIT_EVENTS = 32768
# The bytes of the spans built from an event, where they are: their columns (77.5) and what the
# builder keeps for the join (18.6), measured once with glibc's mallinfo2, which counts the compiled
# core's own allocations as tracemalloc does not, on the 16-P trace's largest generation, 2.2M
# events (docs/decoder.md, "Bounded memory").
SPAN_BYTES = 96
# Pieces of the maps' work that run ahead of their delivery, per job.
MAP_WINDOW = 2
# Consecutive batches of one subscriber whose map joins its results (``map.join``) are one piece
# of work, up to MAP_GROUP_EVENTS events (a batch alone may hold more): one task of the pool and one
# hand-over each way for all of them, each of which holds the GIL (docs/decoder.md, "Where the GIL
# is held"). Counted in events, not batches: its results (a batch's lines) are written ahead of
# their delivery MAP_WINDOW pieces a job at most, and a batch of a Go 1.22+ trace holds 16,384.
MAP_GROUP_EVENTS = 16384


class _Spans:
    """The span subscribers' join, while there are some; ``token`` is the
    last generation's key, counted as :class:`SpanBuilder` counts them;
    ``follow``, what the builders of its generations follow."""

    def __init__(self) -> None:
        self.join = SpanJoin()
        self.token = -1
        self.follow = Follow(0)  # what its generations' builders follow: only widens, as SharedSpans'


class Unit:
    """A unit's items on their way (a generation's, or a few of its
    batches), and what each stage made of them."""

    __slots__ = (
        "batches",
        "built",
        "end",
        "events",
        "follow",
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
        self.follow = spans.follow if spans is not None else Follow(0)  # (as it was when the unit began)
        self.items: list[object] = []  # as decoded: batches, provisional batches, notices
        self.batches: list[EventBatch] = []  # the exact ones: one generation's
        self.events = 0  # in them
        self.token = -1
        self.end = False  # the last unit: the spans still open are closed
        self.ordered: dict[Subscription, list[object]] = {}
        self.built: GenerationSpans | None = None
        self.span_items: list[object] = []
        self.out: list[Prepared] = []
        # The maps' work: from out[first] to out[end - 1], one piece.
        self.todo: list[tuple[int, int, Callable[[], object]]] = []

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
        if self._spans is not None:
            self._spans.follow |= follows(subs)
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
        u.built = build_generation(u.batches, u.token, follow=u.follow)


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
    out, k = u.out, 0
    while k < len(out):
        sub, got, _ = out[k]
        if not sub._mapped(got):
            k += 1
            continue
        join = getattr(sub.map, "join", None)
        end, events = k + 1, len(got)  # type: ignore[arg-type]  # _mapped: a batch
        if join is not None:  # a subscriber's items of a unit are side by side in out
            while end < len(out) and out[end][0] is sub and sub._mapped(out[end][1]):
                events += len(out[end][1])  # type: ignore[arg-type]  # _mapped: a batch
                if events > MAP_GROUP_EVENTS:
                    break
                end += 1
        works = [sub.map(x) for _, x, _ in out[k:end]]  # type: ignore[misc]  # _mapped: it has a map
        u.todo.append((k, end, works[0] if join is None or len(works) == 1 else _joining(join, works)))
        k = end


def _joining(join: Callable[[list[object]], object], works: list[Callable[[], object]]) -> Callable[[], object]:
    return lambda: join([w() for w in works])


def stages(
    fanout: Fanout,
    counters: Counters,
    token: trio.lowlevel.TrioToken | None,
    pool: ThreadPoolExecutor | None,
    jobs: int = 1,
    window: int = MAP_WINDOW,
) -> list[Stage[Unit]]:
    """The stages of ``fanout``'s units: ``deliver`` runs the maps' work in
    ``pool`` (of ``jobs`` threads), ``window`` pieces a job ahead, hands
    the results to trio (``token``: its loop), and counts the spans built."""
    ahead_most = window * jobs

    def deliver(u: Unit) -> None:
        fanout.spans_built += sum(len(x) for x in u.span_items if isinstance(x, SpanBatch))
        counters.spans = fanout.spans_built
        work = {k: (end, fn) for k, end, fn in u.todo}
        u.todo.clear()
        running: dict[int, tuple[int, Future[object]]] = {}
        ahead = 0  # the next item whose work may start
        ready: list[Prepared] = []
        k = 0
        while k < len(u.out):
            while ahead < len(u.out) and len(running) < ahead_most:
                if ahead in work:
                    assert pool is not None
                    end, fn = work.pop(ahead)
                    running[ahead] = (end, pool.submit(fn))
                    ahead = end
                else:
                    ahead += 1
            sub, got, _ = u.out[k]
            piece = running.pop(k, None)
            if piece is None:
                ready.append((sub, got, None))
                k += 1
                continue
            end, future = piece
            sources = [x for _, x, _ in u.out[k:end]]
            ready.append((sub, future.result(), got if end == k + 1 else sources))
            for i in range(k, end):
                u.out[i] = (sub, None, None)  # the batches' lines are the subscriber's now
            k = end
            # What the pool has done already goes with it: one hand-over to trio (and, where
            # the map joins results, one item for the subscriber) for many batches.
            following = running.get(k)
            if following is not None and following[1].done() and len(ready) < ahead_most:
                continue
            trio.from_thread.run(fanout.deliver, joined(ready), trio_token=token)
            ready = []
        if ready:
            trio.from_thread.run(fanout.deliver, joined(ready), trio_token=token)

    def has_spans(u: Unit) -> bool:
        return u.spans is not None

    return [
        Stage("order", True, _order, lambda u: any(s._stateful for s in u.subs)),
        Stage("select", False, _select, lambda u: bool(u.items)),
        Stage("join", True, _join, has_spans),
        Stage("select spans", False, _select_spans, has_spans),
        Stage("map order", True, _map_order, lambda u: any(s.map is not None for s in u.subs)),
        # Apart: a lossless subscriber that reads slowly holds the delivery up (top takes every span),
        # and the line then started no other unit's work meanwhile: on 16 cores the pool sat idle.
        Stage(
            "deliver",
            True,
            deliver,
            note=f"its own thread; the maps' work in the pool, up to {MAP_GROUP_EVENTS} events a piece, "
            f"{window} x jobs ahead",
            apart=True,
        ),
    ]


def joined(ready: list[Prepared]) -> list[Prepared]:
    """ready, with each run of one subscriber's mapped results made one item
    where its map can join them (``map.join``: a list of results in order,
    to one; its source the list of their batches, as a piece of work that
    joined several has)."""
    out: list[Prepared] = []
    run: list[Prepared] = []

    def flush() -> None:
        if len(run) == 1:
            out.append(run[0])
        elif run:
            sub = run[0][0]
            sources = [b for _, _, s in run for b in (s if isinstance(s, list) else [s])]
            out.append((sub, sub.map.join([r for _, r, _ in run]), sources))  # type: ignore[union-attr]  # joinable
        run.clear()

    for p in ready:
        sub, _, source = p
        if source is None or getattr(sub.map, "join", None) is None:
            flush()
            out.append(p)
            continue
        if run and run[0][0] is not sub:
            flush()
        run.append(p)
    flush()
    return out


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
