"""Many subscribers of one session: one decode, a filter and a buffer each.

One pipeline per session (``live.Pump``) reads its frames and decodes them
once (in a worker thread: the compiled core releases the GIL); the
:class:`Fanout` hands every item to each :class:`Subscription` after running its
selector, also in the worker thread, so that a filter costs no Python
object per event it drops. Each subscription has its own buffer of
``buffer`` batches. A lossy one (the default) never holds anything up:
when its buffer is full the batch is dropped for it alone, and a
:class:`SubscriberGap` before its next batch says how much it lost and
from when. A lossless one (``lossless=True``; the recorder, and
:meth:`Session.event_batches`) waits for room, and so holds up the
decoder, then the reader, then the helper, whose policy applies (it sheds
generations rather than let the service wait).

Spans are built once too, while any subscriber asks for them, and each
span subscriber's filter selects from what was built. With one job the
fan-out keeps one :class:`SpanBuilder` (fed every exact batch, told of the
helper's gaps, closed at the end); with more, the pipeline builds each
generation's spans in its pool (``build_generation``) and joins them in
order (``SpanJoin``; see ``pipeline.py``), the same spans. A legacy trace's
provisional batches make no spans.

The fan-out is sans-socket: :class:`Fanout` takes decoded items, so it can
be fed from a file (bench/fanout.py does).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal

import trio

from livetrace._items import Gap, Notice, Provisional, SegmentGap, SpanMark, SubscriberGap
from livetrace._protocol.frames import Frame
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import Event
from livetrace._trace.select.events import EventSelector
from livetrace._trace.select.filter import Filter
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.builder import SpanBuilder
from livetrace._trace.spans.model import Follow, follow_for
from livetrace._trace.spans.select import select_spans

What = Literal["events", "batches", "spans", "frames"]
DEFAULT_BUFFER = 16
# A subscriber's work on each batch it gets (see Subscription): called in
# order, it returns the work to run in the pipeline's pool.
Map = Callable[[Any], Callable[[], Any]]
_UNORDERED = object()  # _select's: the in-order part not run yet


class _Loss:
    __slots__ = ("batches", "events", "first_gen", "first_time")

    def __init__(self, batch: object) -> None:
        self.batches = self.events = 0
        b = batch.events if isinstance(batch, Provisional) else batch
        self.first_time: int | None = None
        self.first_gen: int | None = None
        if isinstance(b, EventBatch):
            self.first_gen = b.gen.gen if b.gen is not None else None
            self.first_time = b.times[0] if len(b) else None
        elif isinstance(b, SpanBatch):
            self.first_time = min(b.starts) if len(b) else None

    def add(self, batch: object) -> None:
        self.batches += 1
        b = batch.events if isinstance(batch, Provisional) else batch
        self.events += len(b) if isinstance(b, (EventBatch, SpanBatch)) else 0

    def notice(self) -> SubscriberGap:
        return SubscriberGap(self.batches, self.events, self.first_time, self.first_gen)


class Subscription:
    """What one subscriber receives: an async iterable (and async context
    manager, which unsubscribes on exit) of, as asked for with ``what``:

    - ``"batches"``: :class:`EventBatch` objects holding only the events the
      filter keeps (never empty), and notices;
    - ``"events"``: the same one :class:`Event` at a time, and notices;
    - ``"spans"``: :class:`SpanBatch` objects holding the spans the filter
      keeps (never empty; ``kinds`` are :class:`SpanKind` values), and
      notices;
    - ``"frames"``: the raw frames (Chunk, Gap, SegmentEnd), undecoded:
      what a recorder writes.

    ``map`` (batches and spans only) is work to do on each batch in the
    session's pipeline, off the event loop and, with ``jobs`` above 1, in
    its pool of threads, several generations at once: ``map(batch)`` is
    called for each (non-empty, exact) batch the filter kept, in the
    order of the trace, and returns a function of no arguments that the
    pool then runs; the subscriber receives what that returns in place of
    the batch, in order. ``map`` itself should be cheap: it is where state
    that crosses batches goes (e.g. the first batch's time). The function
    it returns runs in any of the pool's threads, several at once (a
    generation's batches too), at most a few per job ahead of the
    delivery: it must not touch state that another batch's function does
    unless that state is safe across threads (kept per thread, say), and
    must not call into trio. A legacy trace's provisional batches are not
    mapped. Where the map has a ``join`` method, results the pool made
    before they could be handed over may come as one item:
    ``map.join(results)`` (of consecutive batches, in order) is what the
    subscriber receives for them, which counts as one item of its
    buffer (a loss of it, as each of its batches): fewer hand-overs
    between threads, each of which holds the GIL.

    ``marks`` (spans only): a :class:`SpanMark` after each generation's
    spans (each batch's, with one job), with how many spans are open
    there, and not the spans cut at the end (``SpanBatch.closed``), which
    did not end: what ``top`` reads, which takes the events it needs from
    a batch subscription and counts the goroutines' states at each mark.

    ``follow`` (spans only, :class:`Follow`): what the span builder must
    follow for this subscriber, where its filter's kinds say more than it
    reads (``top`` reads the tasks' and regions' spans, not their logs);
    its spans of kinds that need more than that are made without it. None:
    what its filter's kinds need (``follow_for``). Marks count the
    goroutines' and Ps' open spans: they add those.

    Notices (a helper's :class:`Gap`, a legacy trace's notices, and this
    subscriber's own :class:`SubscriberGap`) always come through. An error
    that ends the session is raised here, after what came before it.
    ``lost_batches`` and ``lost_events`` total what this subscriber lost.
    """

    def __init__(
        self,
        fanout: Fanout,
        flt: Filter | None,
        what: What,
        buffer: int,
        lossless: bool,
        provisional: bool,
        map: Map | None = None,
        marks: bool = False,
        follow: Follow | None = None,
    ) -> None:
        if what not in ("events", "batches", "spans", "frames"):
            raise ValueError(f"what must be 'events', 'batches', 'spans' or 'frames', not {what!r}")
        if map is not None and what not in ("batches", "spans"):
            raise ValueError("only a subscriber of batches or spans may map them")
        if marks and what != "spans":
            raise ValueError("only a subscriber of spans may ask for marks")
        if follow is not None and what != "spans":
            raise ValueError("only a subscriber of spans may say what their builder follows")
        if follow is not None and int(follow) & ~int(Follow.ALL):
            raise ValueError(f"follow must be Follow flags, not {follow!r}")
        if buffer < 1:
            raise ValueError("a subscriber's buffer holds at least one batch")
        self.filter = flt or Filter()
        self.what = what
        self.buffer = buffer
        self.lossless = lossless
        self.provisional = provisional and what == "batches"
        self.map = map
        self.marks = marks
        # What the span builder must follow for it.
        self.follows = Follow(0)
        if what == "spans":
            self.follows = follow_for(self.filter.kinds) if follow is None else Follow(follow)
            if marks:
                self.follows |= Follow.STATES
        self.lost_batches = 0
        self.lost_events = 0
        self._fanout = fanout
        self._stage = _stage(self.filter, what)
        # Unbounded channel, bounded by hand: batches count against the
        # buffer, notices and the final error always fit (at most one
        # loss notice waits between two batches).
        self._send, self._recv = trio.open_memory_channel[object](math.inf)
        self._queued = 0
        self._room = trio.Event()
        self._loss: _Loss | None = None
        self._closed = False
        self._current: Iterator[Event] | None = None

    # -- the fan-out's side --

    def _order(self, item: object) -> object:
        """The in-order part of :meth:`_select` (the state its filter keeps
        across batches), run on the items in order."""
        if isinstance(item, Provisional):
            return self._stage.order(item.events) if self.provisional else None
        return self._stage.order(item) if isinstance(item, EventBatch) else None

    def _select(self, item: object, ordered: object = _UNORDERED) -> object | None:
        """Off the event loop: what of item this subscriber gets (None:
        nothing), given what :meth:`_order` said of it (run here if not
        given). A span subscriber is offered the span builder's output
        (span batches and notices), not the decoded items."""
        if ordered is _UNORDERED:
            ordered = self._order(item)
        if isinstance(item, SpanMark):
            return item if self.marks else None
        if isinstance(item, Notice):
            return item
        if isinstance(item, SpanBatch):
            return None if self.marks and item.closed else self._stage.spans(item)
        if isinstance(item, Provisional):
            if not self.provisional:
                return None
            return self._stage.provisional(item, ordered)
        if isinstance(item, EventBatch):
            return self._stage.batch(item, ordered)
        return item  # a frame

    @property
    def _stateful(self) -> bool:
        """Whether :meth:`_order` keeps state across batches (a task filter's)."""
        return self._stage.stateful

    def _mapped(self, got: object) -> bool:
        """Whether got (what _select gave) goes through the subscriber's map."""
        return self.map is not None and isinstance(got, (EventBatch, SpanBatch))

    async def _offer(self, item: object, source: object = None) -> None:
        """Put item in the buffer (source: the batch it was mapped from, which
        is what a loss counts)."""
        if self._closed:
            return
        counted = not isinstance(item, Notice)
        lost = item if source is None else source
        if isinstance(lost, list):  # a joined item: its batches (see pipeline.joined)
            if counted and self._queued >= self.buffer and not self.lossless:
                for b in lost:
                    self._lose(b)
                return
            lost = lost[0]
        if counted and self._queued >= self.buffer:
            if self.lossless:
                while self._queued >= self.buffer and not self._closed:
                    self._room = trio.Event()
                    await self._room.wait()
                if self._closed:
                    return
            else:
                self._lose(lost)
                return
        if self._loss is not None:
            self._send.send_nowait(self._loss.notice())
            self._loss = None
        if counted:
            self._queued += 1
        self._send.send_nowait(item)

    def _lose(self, lost: object) -> None:
        if self._loss is None:
            self._loss = _Loss(lost)
        self._loss.add(lost)
        self.lost_batches += 1
        self.lost_events += len(lost.events if isinstance(lost, Provisional) else lost)  # type: ignore[arg-type]  # batches have a length

    def _finish(self, error: BaseException | None) -> None:
        if self._closed:
            return
        if self._loss is not None:
            self._send.send_nowait(self._loss.notice())
            self._loss = None
        if error is not None:
            self._send.send_nowait(error)
        self._send.close()

    # -- the subscriber's side --

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> object:
        while True:
            if self._current is not None:
                ev = next(self._current, None)
                if ev is not None:
                    return ev
                self._current = None
            try:
                item = await self._recv.receive()
            except (trio.EndOfChannel, trio.ClosedResourceError):
                raise StopAsyncIteration from None
            self._took(item)
            if self.what == "events" and isinstance(item, EventBatch):
                self._current = iter(item)
                continue
            return item

    def next_nowait(self) -> object:
        """The next item, as ``__anext__`` gives it, if one is in the buffer
        (``trio.WouldBlock`` if none is yet): a consumer that drains what
        came without a checkpoint an item. Batches and spans only."""
        if self.what == "events":
            raise ValueError("next_nowait gives batches or spans, not events one at a time")
        try:
            item = self._recv.receive_nowait()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise StopAsyncIteration from None
        self._took(item)
        return item

    def _took(self, item: object) -> None:
        """An item out of the buffer: the session's error raised, or its room given back (a notice
        takes none)."""
        if isinstance(item, BaseException):
            raise item
        if not isinstance(item, Notice):
            self._queued -= 1
            self._room.set()

    def take_buffered(self) -> list[object]:
        """What the buffer holds now, without waiting, and the notice of any
        loss not yet told: for a subscriber cut off (cancelled), which has
        these decoded already and may still use them. The session's error,
        if it came, is left out."""
        out: list[object] = []
        while True:
            try:
                item = self._recv.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                break
            if isinstance(item, BaseException):
                break
            if not isinstance(item, Notice):
                self._queued -= 1
            out.append(item)
        if self._loss is not None:
            out.append(self._loss.notice())
            self._loss = None
        self._room.set()
        return out

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Unsubscribe: nothing more is kept for this subscriber."""
        self._closed = True
        self._room.set()
        self._fanout.remove(self)
        self._send.close()
        await self._recv.aclose()


class _EventStage:
    """Events and batches: the filter's selector, its state kept across batches."""

    def __init__(self, flt: Filter) -> None:
        self._selector = EventSelector(flt)
        self.stateful = not self._selector.everything and flt.tasks is not None  # order has work to do

    def order(self, b: EventBatch) -> object:
        return self._selector.order(b)

    def batch(self, b: EventBatch, ordered: object) -> EventBatch | None:
        out = self._selector.pick(b, ordered)  # type: ignore[arg-type]  # what order gave
        return out if len(out) else None

    def provisional(self, p: Provisional, ordered: object) -> Provisional | None:
        out = self._selector.pick_provisional(p, ordered)  # type: ignore[arg-type]  # what order gave
        return out if len(out.events) else None

    def spans(self, b: SpanBatch) -> None:
        return None


class _SpanStage:
    """Spans: the filter, run by select_spans on what the shared builder made."""

    def __init__(self, flt: Filter) -> None:
        self._filter = flt

    def order(self, b: EventBatch) -> None:
        return None

    def batch(self, b: EventBatch, ordered: object) -> None:
        return None

    def provisional(self, p: Provisional, ordered: object) -> None:
        return None

    stateful = False

    def spans(self, b: SpanBatch) -> SpanBatch | None:
        out = select_spans(b, self._filter)
        return out if len(out) else None


class _FrameStage:
    stateful = False

    def order(self, b: EventBatch) -> None:
        return None

    def batch(self, b: EventBatch, ordered: object) -> None:
        return None

    def provisional(self, p: Provisional, ordered: object) -> None:
        return None

    def spans(self, b: SpanBatch) -> None:
        return None


def _stage(flt: Filter, what: What) -> _EventStage | _SpanStage | _FrameStage:
    if what == "frames":
        return _FrameStage()
    if what == "spans":
        return _SpanStage(flt)
    return _EventStage(flt)


class _SharedSpans:
    """The one span builder of a fan-out's span subscribers: it turns the
    decoded items into what they are offered, in order. Exact batches give
    the spans that ended in them; a helper's gap makes it forget the open
    spans (their ends are lost); a legacy segment gap, or the end, closes
    them at the trace's (or segment's) last event. Provisional batches
    (estimated times, a legacy trace's) make none."""

    def __init__(self, follow: Follow) -> None:
        self._builder = SpanBuilder(follow=follow)

    def widen(self, follow: Follow) -> None:
        """A subscriber that wants more came: what it adds is followed from now on."""
        if follow & ~self._builder.follow:
            self._builder.widen(follow)

    def step(self, item: object, marks: bool) -> list[object]:
        """What item makes (with ``marks``: a mark after each batch's spans)."""
        if isinstance(item, Provisional):
            return []
        if isinstance(item, EventBatch):
            spans = self._builder.feed(item)
            if not marks:
                return [spans]
            return [spans, SpanMark(len(item), tuple(self._builder.open_counts().values()))]
        if isinstance(item, Gap):
            self._builder.gap()
        elif isinstance(item, SegmentGap):
            return [self._builder.close(), item]
        return [item]

    def end(self) -> list[object]:
        return [self._builder.close()]


def follows(subs: Iterable[Subscription]) -> Follow:
    """What a span builder must follow for these subscribers (model.Follow):
    a view of GC pauses needs no goroutine's transitions, most of a trace."""
    f = Follow(0)
    for s in subs:
        f |= s.follows
    return f


# What a subscriber is handed: the item, and the batch it was mapped from (None: not mapped).
Prepared = tuple[Subscription, object, object]


class Fanout:
    """Hands decoded items to every subscription: :meth:`prepare` runs each
    one's selector (in a worker thread, off the event loop), :meth:`deliver`
    puts the results in their buffers; :meth:`publish` does both."""

    def __init__(self) -> None:
        # A tuple, replaced, never changed in place: trio's thread subscribes and removes
        # while the decoder's thread goes through it (a list shifted under that thread's
        # feet would skip the subscriber after the one removed, losing it an item untold).
        self._subs: tuple[Subscription, ...] = ()
        # The one-job path's span builder (prepare's, in its thread alone), while some
        # subscriber wants spans; with more jobs the pipeline builds them, and none is made.
        self._spans: _SharedSpans | None = None
        self.spans_built = 0  # by the span builders, over the fan-out's life

    def subscribe(
        self,
        flt: Filter | None = None,
        *,
        what: What = "events",
        buffer: int = DEFAULT_BUFFER,
        lossless: bool = False,
        provisional: bool = False,
        map: Map | None = None,
        marks: bool = False,
        follow: Follow | None = None,
    ) -> Subscription:
        sub = Subscription(self, flt, what, buffer, lossless, provisional, map, marks, follow)
        self._subs = (*self._subs, sub)
        return sub

    def remove(self, sub: Subscription) -> None:
        self._subs = tuple(s for s in self._subs if s is not sub)

    def _built(self, spans: list[object]) -> list[object]:
        self.spans_built += sum(len(x) for x in spans if isinstance(x, SpanBatch))
        return spans

    @property
    def decoding(self) -> bool:
        """Whether any subscriber wants decoded items (not only frames)."""
        return any(s.what != "frames" for s in self._subs)

    @property
    def provisional(self) -> bool:
        """Whether any subscriber wants a legacy trace's provisional batches."""
        return any(s.provisional for s in self._subs)

    @property
    def subscribers(self) -> tuple[Subscription, ...]:
        """Those of decoded items, now."""
        return tuple(s for s in self._subs if s.what != "frames")

    def _shared_spans(self) -> _SharedSpans | None:
        """The span builder, made when a subscriber first wants spans and
        forgotten when none does (a later one starts afresh), as the
        pipeline's ``Cutter`` does with its join."""
        if not any(s.what == "spans" for s in self._subs):
            self._spans = None
        elif self._spans is None:
            self._spans = _SharedSpans(follows(self._subs))
        else:
            self._spans.widen(follows(self._subs))
        return self._spans

    def prepare(self, item: object) -> list[Prepared]:
        """What each subscriber gets of item, in this thread, one item at a
        time (the pipeline with one job; see also ``pipeline.py``)."""
        shared = self._shared_spans()
        spans = [] if shared is None else self._built(shared.step(item, any(s.marks for s in self._subs)))
        return self._prepare(item, spans)

    def prepare_end(self) -> list[Prepared]:
        """After the last decoded item: the spans still open, closed."""
        shared = self._shared_spans()
        spans = [] if shared is None else self._built(shared.end())
        return self._prepare(None, spans)

    def _prepare(self, item: object, spans: list[object]) -> list[Prepared]:
        out: list[Prepared] = []
        for sub in self.subscribers:
            for x in spans if sub.what == "spans" else () if item is None else (item,):
                got = sub._select(x)
                if got is None:
                    continue
                if sub._mapped(got):
                    out.append((sub, sub.map(got)(), got))  # type: ignore[misc]  # _mapped: it has a map
                else:
                    out.append((sub, got, None))
        return out

    async def deliver(self, prepared: list[Prepared]) -> None:
        for sub, got, source in prepared:
            await sub._offer(got, source)

    async def publish(self, item: object) -> None:
        await self.deliver(self.prepare(item))

    async def publish_end(self) -> None:
        """The last item is published: close the open spans (then :meth:`finish`)."""
        await self.deliver(self.prepare_end())

    async def publish_frame(self, frame: Frame) -> None:
        for sub in self._subs:
            if sub.what == "frames":
                await sub._offer(frame)

    def finish(self, error: BaseException | None = None) -> None:
        """The stream is over (error: how it failed): each subscriber gets
        what is left in its buffer, then the error, then the end."""
        for sub in self._subs:
            sub._finish(error)
