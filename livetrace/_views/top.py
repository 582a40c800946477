"""What ``livetrace top`` shows, from spans and events: sans-IO.

:class:`TopStats` is fed a session's items in order, one of two ways, and
its notices; :meth:`TopStats.snapshot` sums up everything since the
previous snapshot as a :class:`Snapshot`. Either :meth:`TopStats.feed`
each :class:`EventBatch` (it builds their spans itself), or, as ``livetrace
top`` does, the session's spans (built in its pool) and what it needs of
the events apart: :meth:`TopStats.feed_events` each batch's
:func:`events_of` (which a subscription's map computes in the pool),
:meth:`TopStats.feed_spans` each :class:`SpanBatch` and
:meth:`TopStats.mark` each :class:`SpanMark` of a span subscription with
marks, the marks saying where the two streams meet (a snapshot covers
exactly the batches fed before it, and their spans). The sums:

- GC cycles and stop-the-world pauses that ended: count, p50/p99/max;
- scheduler latency, each runnable span that ended (runnable to running);
- goroutines by state now (the open spans: the builder's, or the last mark's);
- goroutines grouped by their start function (the root frame of a stack
  the goroutine itself recorded: when it blocked, entered a system call or
  stopped running; the frame Go's goroutine analysis names them by), with
  their time running, runnable, blocked (by reason) and in system calls;
  a span counts the part of it since the previous snapshot, so that one
  goroutine blocked for an hour does not swamp one interval;
- user regions and tasks that ended, by name: count, p50/p99/max;
- the last heap, heap goal and GOMAXPROCS the trace's metrics reported;
- what was lost: generations the helper shed, batches this consumer lost.

Spans are only known once they end, so times are of the spans that ended
in the interval.
"""

from __future__ import annotations

import functools
import math
from array import array
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from livetrace._items import Gap, Notice, SegmentGap, SpanMark, SubscriberGap, WindowGap
from livetrace._session.session import Session
from livetrace._session.subscribers import Fanout, Subscription
from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.model.batch import NARGS, EventBatch
from livetrace._trace.model.events import METRIC_NAMES
from livetrace._trace.model.tables import Tables
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.builder import SpanBuilder
from livetrace._trace.spans.model import Follow, SpanKind
from livetrace._trace.spec.modern import (
    EV_GO_CREATE,
    EV_GO_CREATE_BLOCKED,
    EV_HEAP_ALLOC,
    EV_HEAP_GOAL,
    EV_PROCS_CHANGE,
)
from livetrace._views.top_sums import Durations, TopSums

UNNAMED = "(no stack seen)"
# Goroutine names are forgotten after this many snapshots without a span.
NAME_TTL = 60
GOROUTINE_STATES = (SpanKind.RUNNING, SpanKind.RUNNABLE, SpanKind.BLOCKED, SpanKind.SYSCALL)
# Metric codes as one-byte patterns, and the creations (whose new stack is
# the goroutine's start function): the batches are searched, not looped over.
_METRIC_BYTES = {code: bytes([code]) for code in METRIC_NAMES}
# (A translate table marks the creations 1, then memchr finds them.)
_CREATIONS = bytes(1 if c in (EV_GO_CREATE, EV_GO_CREATE_BLOCKED) else 0 for c in range(256))


@dataclass(frozen=True)
class BatchEvents:
    """What top needs of a batch's events: its generation's tables, how many
    events, the first time of the trace's (at or past 0; -1 if none) and
    the last time, the last value of each metric, and the goroutines it
    created (their ids as uint64) with their new stacks, in order: in
    arrays, not a tuple each, which the garbage collector would visit (a
    busy service creates hundreds of thousands of goroutines a second)."""

    gen: Tables | None
    events: int
    first_time: int
    last_time: int
    metrics: dict[int, int]
    created: array[int]
    stacks: array[int]


def events_of(batch: EventBatch) -> BatchEvents:
    """A batch's :class:`BatchEvents` (in any thread: it only reads the batch)."""
    n = len(batch)
    times, args = batch.times, batch.args
    codes = bytes(batch.codes)  # searched, not looped over
    metrics = {}
    for code, pattern in _METRIC_BYTES.items():
        i = codes.rfind(pattern)
        if i >= 0:
            metrics[code] = args[i * NARGS]
    created, stacks = array("Q"), array("Q")
    find = codes.translate(_CREATIONS).find
    i = find(1)
    while i >= 0:
        a = i * NARGS
        created.append(args[a])
        stacks.append(args[a + 1])
        i = find(1, i + 1)
    # A legacy trace opens with a Sync at time -1 (as Go's parsed dump has it), which is no
    # time of the trace: its span starts at the first event that has one.
    first = next((t for t in times if t >= 0), -1)
    return BatchEvents(batch.gen, n, first, times[n - 1] if n else -1, metrics, created, stacks)


# What top takes of the events are small summaries (events_of's), which run ahead of the
# spans by at most the pipeline's units in flight (a unit's batches are delivered before its
# spans): their subscription never holds the pipeline up, the spans' does.
EVENTS_BUFFER = 1 << 30


def _summarize(batch: EventBatch) -> Callable[[], BatchEvents]:
    return functools.partial(events_of, batch)


# Top sums every span but the logs of tasks and regions, which it never reads.
TOP_FOLLOWS = Follow.STATES


def subscribe_top(source: Session | Fanout, spans_buffer: int = 64) -> tuple[Subscription, Subscription]:
    """The two subscriptions top's numbers are made from, in this order (a
    batch's events are then handed over before its spans): ``events_of``
    of each batch, run in the session's pipeline, and every span with a
    :class:`SpanMark` after each unit's. Both lossless: a reader behind holds
    the decoding up, and the helper sheds whole generations (which are
    counted), rather than lose batches, which would break the spans open
    there."""
    events = source.subscribe(what="batches", lossless=True, buffer=EVENTS_BUFFER, map=_summarize)
    spans = source.subscribe(what="spans", lossless=True, buffer=spans_buffer, marks=True, follow=TOP_FOLLOWS)
    return events, spans


class TopFeeder:
    """Feeds a :class:`TopStats` from :func:`subscribe_top`'s two
    subscriptions, as ``top`` and the agent's summaries read them: each
    item of the span subscription, in order, to :meth:`feed`; ``take``
    gives what the events subscription holds by then (its
    :meth:`~livetrace._session.subscribers.Subscription.take_buffered`),
    asked for when a batch's events are wanted: at its first spans (they are
    in by then: a batch's events are handed over before its spans) and at
    its mark, which says how many events its spans are of. Before feeding
    an item, :meth:`ends_unit` says whether a snapshot taken then covers a
    whole unit (generation, legacy segment, pprof window). Sans-IO.

    A batch of no generation's tables (the Sync that ends a live modern
    trace) is a unit of its own with ``tableless_apart`` (top shows it
    apart, as a TopStats fed the batches does), else part of the one before
    (the agent's summaries: no row of one event and no generation)."""

    def __init__(self, stats: TopStats, take: Callable[[], list[object]], *, tableless_apart: bool = True) -> None:
        self.stats = stats
        self._take = take
        self._tableless_apart = tableless_apart
        self._waiting: deque[BatchEvents] = deque()
        self.between = True  # at a mark (or the start): the next spans are a new batch's
        self.events = 0  # of the batches fed
        self.last_generation = 0  # the latest generation fed (0: none, or a legacy trace)

    def _next_events(self) -> BatchEvents:
        if not self._waiting:
            self._waiting.extend(x for x in self._take() if isinstance(x, BatchEvents))
            if not self._waiting:
                raise RuntimeError("top: spans came before the summary of their events")
        return self._waiting[0]

    def ends_unit(self, item: object) -> bool:
        """Whether ``item`` is past the unit fed so far: a segment or window
        gap, or a batch's first spans (or its mark: a batch may have none) of
        other tables than the last batch fed. A mark of no events (a
        generation's end has one) is of no batch."""
        if isinstance(item, SegmentGap | WindowGap):
            return True
        if self.between and (isinstance(item, SpanBatch) or (isinstance(item, SpanMark) and item.events)):
            gen = self._next_events().gen
            if gen is None and not self._tableless_apart:
                return False
            return self.stats.unit is not None and gen is not self.stats.unit
        return False

    def feed(self, item: object) -> int:
        """One item of the span subscription; the events it fed (a mark's)."""
        stats = self.stats
        if isinstance(item, SpanBatch):
            if self.between:
                self._next_events()  # its events are in
                self.between = False
            stats.feed_spans(item)
        elif isinstance(item, SpanMark):
            told = item.events
            while told > 0:
                self._next_events()
                ev = self._waiting.popleft()
                stats.feed_events(ev)
                told -= ev.events
                self.events += ev.events
                if ev.gen is not None:
                    self.last_generation = max(self.last_generation, ev.gen.gen)
            stats.mark(item)
            self.between = True
            return item.events
        elif isinstance(item, Notice):
            stats.notice(item)
        return 0


def percentile(ordered: Sequence[int], p: float) -> int:
    """The nearest-rank p-th percentile of a sorted list (0 if empty)."""
    if not ordered:
        return 0
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


@dataclass(frozen=True)
class Summary:
    """Durations (ns): how many, and their p50, p99 and largest."""

    count: int = 0
    p50: int = 0
    p99: int = 0
    max: int = 0
    total: int = 0

    @classmethod
    def of(cls, durations: list[int]) -> Summary:
        d = sorted(durations)
        return cls(len(d), percentile(d, 50), percentile(d, 99), d[-1] if d else 0, sum(d))

    @classmethod
    def of_sorted(cls, durations: Durations) -> Summary:
        """From sorted int64 durations and their sum (TopSums.take's)."""
        data, total = durations
        d = memoryview(data).cast("q")
        return cls(len(d), percentile(d, 50), percentile(d, 99), d[-1] if len(d) else 0, total)


@dataclass
class Group:
    """The goroutines that share a start function: time (ns) in each state."""

    name: str
    goroutines: int = 0
    running: int = 0
    runnable: int = 0
    syscall: int = 0
    blocked: dict[str, int] = field(default_factory=dict)  # reason -> ns

    @property
    def blocked_total(self) -> int:
        return sum(self.blocked.values())


@dataclass
class Snapshot:
    """One refresh of ``top``: see the module's doc. Times in ns on the
    trace's clock; ``first``/``last`` are the units (generations, legacy
    segments, pprof windows: their tables' ``gen``) whose batches it
    covers, ``start``/``end`` the times of its first and last events."""

    index: int
    first: int
    last: int
    start: int
    end: int
    events: int
    gc: Summary
    stw: Summary
    sched: Summary
    mark_assist: Summary
    states: dict[str, int]
    groups: list[Group]
    regions: dict[str, Summary]
    tasks: dict[str, Summary]
    heap: int | None
    heap_goal: int | None
    gomaxprocs: int | None
    shed_generations: int
    lost_batches: int
    gaps: int  # segment or window boundaries crossed (nothing traced there)


class TopStats:
    """Feed batches and notices; take a :meth:`snapshot` whenever a view
    wants one (``top`` does at the end of a generation, segment or window)."""

    def __init__(self, *, compiled: bool | None = None) -> None:
        self._spans = SpanBuilder(compiled=compiled, follow=TOP_FOLLOWS)
        # The per-span sums, and each goroutine's start function (an id into _root_names).
        self._sums: TopSums | ccore.TopSums = ccore.TopSums() if use_compiled(compiled) else TopSums()
        self._root_names: list[str] = [""]
        self._root_ids: dict[str, int] = {"": 0}
        self._root_cache: dict[tuple[int, int], int] = {}  # (tables key, stack id) -> root function's id
        # The names of blocked reasons, regions and tasks the sums count by (their ids), and
        # the ids of the names table of the last span batch (each generation's spans built in
        # a pool have a table of their own; a builder's only grows).
        self._names: list[bytes] = [b""]
        self._name_ids: dict[bytes, int] = {b"": 0}
        self._table: Sequence[bytes] | None = None
        self._table_ids = array("I")
        self._open: tuple[int, ...] | None = None  # the last mark's open spans (None: the builder's)
        self._metrics: dict[int, int] = {}
        self._index = 0
        self._since: int | None = None  # the previous snapshot's end: spans count from there
        self.unit: Tables | None = None  # the tables of the last batch fed
        self._unit_key = 0  # the unit's key in the root cache: negative, apart from the span builder's
        self._reset()

    @property
    def losses(self) -> int:
        """What the next snapshot will say was lost: generations shed, batches missed."""
        return self._shed + self._lost

    def _reset(self) -> None:
        self._first = self._last = -1
        self._start = self._end = -1
        self._events = 0
        self._shed = self._lost = self._gaps = 0

    # -- feeding --

    def feed(self, batch: EventBatch) -> None:
        """A batch's events, and the spans that ended in it (built here)."""
        if not len(batch):
            return
        self.feed_events(events_of(batch))
        self._feed_spans(self._spans.feed(batch))

    def feed_events(self, ev: BatchEvents) -> None:
        """What top needs of a batch's events (its spans come apart, through
        :meth:`feed_spans`)."""
        if not ev.events:
            return
        gen = ev.gen
        if gen is not None:
            if gen is not self.unit:
                self.unit = gen
                self._unit_key -= 1
            self._first = gen.gen if self._first < 0 else self._first
            self._last = gen.gen
        if self._start < 0:
            self._start = ev.first_time
        self._end = max(self._end, ev.last_time)
        self._events += ev.events
        self._metrics.update(ev.metrics)
        self._feed_creations(ev.created, ev.stacks)

    def feed_spans(self, spans: SpanBatch) -> None:
        """Spans that ended, from a span subscription (pool-built, joined)."""
        self._feed_spans(spans)

    def mark(self, mark: SpanMark) -> None:
        """A span subscription's mark: the spans open there are the
        goroutines' states now."""
        self._open = mark.open

    def notice(self, item: object) -> None:
        """A session's notice: losses are counted, and a gap (generations
        shed, or the time between two segments or windows) ends the open
        spans, whose ends would be wrong."""
        if isinstance(item, SubscriberGap):
            self._lost += item.batches
        elif isinstance(item, WindowGap | SegmentGap):
            self._gaps += 1
        elif isinstance(item, Gap):
            self._shed += item.last_generation - item.first_generation + 1
        else:
            return
        self._spans.gap()
        if self._open is not None:
            self._open = (0,) * len(SpanKind)

    def _feed_creations(self, created: array[int], stacks: array[int]) -> None:
        """A goroutine created in the batch is named by its start function
        (the creation's new stack): one that exits without ever blocking
        records no stack of its own. The stacks are few, the creations many:
        each stack is named once, and the creations handed over at once."""
        gen = self.unit
        if gen is None or not created:
            return
        key = self._unit_key
        roots = {stack: self._root(gen, key, stack) for stack in set(stacks)}
        self._sums.name_all(created, array("Q", map(roots.__getitem__, stacks)), self._index)

    def _root(self, tables: Tables, key: int, stack: int) -> int:
        """The id of the root frame's function of a stack of ``tables`` (cached by ``key``)."""
        nid = self._root_cache.get((key, stack))
        if nid is None:
            pcs = tables.stacks.get(stack, ())
            frame = tables.frames.get(pcs[-1]) if pcs else None
            name = tables.strings.get(frame[0], b"").decode("utf-8", "replace") if frame else ""
            nid = self._root_ids.get(name)
            if nid is None:
                nid = self._root_ids[name] = len(self._root_names)
                self._root_names.append(name)
            self._root_cache[(key, stack)] = nid
        return nid

    def _ids(self, table: Sequence[bytes]) -> memoryview:
        """The ids of the names of a span batch's names table."""
        if table is not self._table:
            self._table, self._table_ids = table, array("I")
        ids = self._table_ids
        for name in table[len(ids) :]:
            nid = self._name_ids.get(name)
            if nid is None:
                nid = self._name_ids[name] = len(self._names)
                self._names.append(name)
            ids.append(nid)
        return memoryview(ids)

    def _feed_spans(self, spans: SpanBatch) -> None:
        if not len(spans):
            return
        tables = spans.tables

        def root_of(tok: int, stack: int) -> int:
            return self._root(tables[tok], tok, stack)

        self._sums.feed(
            spans.kinds,
            spans.resource_kinds,
            spans.resource_ids,
            spans.starts,
            spans.ends,
            spans.reasons,
            spans.names,
            spans.start_stacks,
            spans.end_stacks,
            spans.start_tables,
            spans.end_tables,
            self._ids(spans.names_table),
            self._since,
            self._index,
            root_of,
        )

    # -- reading --

    def snapshot(self) -> Snapshot:
        """Everything since the previous snapshot; the next one starts afresh."""
        rows, kinds, regions, tasks = self._sums.take()
        names = self._names
        groups: dict[str, Group] = {}
        for nid, goroutines, running, runnable, syscall, blocked in rows:
            name = self._root_names[nid] or UNNAMED
            grp = groups.get(name)
            if grp is None:
                grp = groups[name] = Group(name)
            grp.goroutines += goroutines
            grp.running += running
            grp.runnable += runnable
            grp.syscall += syscall
            for rid, ns in blocked:
                reason = names[rid].decode("utf-8", "replace")
                grp.blocked[reason] = grp.blocked.get(reason, 0) + ns
        if self._open is None:
            open_now = self._spans.open_counts()
        else:
            open_now = {SpanKind(k): n for k, n in enumerate(self._open)}
        none = Summary()
        snap = Snapshot(
            index=self._index,
            first=self._first,
            last=self._last,
            start=self._start,
            end=self._end,
            events=self._events,
            gc=Summary.of_sorted(kinds[SpanKind.GC]) if SpanKind.GC in kinds else none,
            stw=Summary.of_sorted(kinds[SpanKind.STW]) if SpanKind.STW in kinds else none,
            sched=Summary.of_sorted(kinds[SpanKind.RUNNABLE]) if SpanKind.RUNNABLE in kinds else none,
            mark_assist=Summary.of_sorted(kinds[SpanKind.MARK_ASSIST]) if SpanKind.MARK_ASSIST in kinds else none,
            states={str(k): open_now[k] for k in GOROUTINE_STATES},
            groups=list(groups.values()),
            regions=_by_name(regions, names),
            tasks=_by_name(tasks, names),
            heap=self._metrics.get(EV_HEAP_ALLOC),
            heap_goal=self._metrics.get(EV_HEAP_GOAL),
            gomaxprocs=self._metrics.get(EV_PROCS_CHANGE),
            shed_generations=self._shed,
            lost_batches=self._lost,
            gaps=self._gaps,
        )
        if self._end >= 0:
            self._since = self._end
        self._index += 1
        self._forget_names()
        self._reset()
        return snap

    def _forget_names(self) -> None:
        """Names of goroutines not seen for NAME_TTL snapshots (most have
        exited: a service may start millions over a long session)."""
        old = self._index - NAME_TTL
        if old > 0:
            self._sums.forget(old)
        if len(self._root_cache) > 65536:
            self._root_cache.clear()


def _by_name(by_id: Mapping[int, Durations], names: Sequence[bytes]) -> dict[str, Summary]:
    """Summaries by name: ids whose names read alike (bytes that are not
    UTF-8, each read as U+FFFD) are one."""
    merged: dict[str, list[Durations]] = {}
    for nid, d in by_id.items():
        merged.setdefault(names[nid].decode("utf-8", "replace"), []).append(d)
    return {
        name: Summary.of_sorted(ds[0])
        if len(ds) == 1
        else Summary.of([x for data, _ in ds for x in memoryview(data).cast("q")])
        for name, ds in merged.items()
    }
