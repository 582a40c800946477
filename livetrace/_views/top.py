"""What ``livetrace top`` shows, from spans and events: sans-IO.

:class:`TopStats` is fed a session's :class:`EventBatch` objects in order
(it builds their spans itself, so that a snapshot covers exactly the
batches fed before it) and its notices; :meth:`TopStats.snapshot` sums up
everything since the previous snapshot as a :class:`Snapshot`:

- GC cycles and stop-the-world pauses that ended: count, p50/p99/max;
- scheduler latency, each runnable span that ended (runnable to running);
- goroutines by state now (the builder's open spans);
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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from livetrace._items import Gap, SegmentGap, SubscriberGap, WindowGap
from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.model.batch import NARGS, EventBatch
from livetrace._trace.model.events import METRIC_NAMES
from livetrace._trace.model.tables import Tables
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.builder import SpanBuilder
from livetrace._trace.spans.model import SpanKind
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


def _signed(v: int) -> int:
    """A goroutine id argument (uint64) as the goroutine columns hold one."""
    return v - (1 << 64) if v >= 1 << 63 else v


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
        self._spans = SpanBuilder(compiled=compiled)
        # The per-span sums, and each goroutine's start function (an id into _root_names).
        self._sums: TopSums | ccore.TopSums = ccore.TopSums() if use_compiled(compiled) else TopSums()
        self._root_names: list[str] = [""]
        self._root_ids: dict[str, int] = {"": 0}
        self._root_cache: dict[tuple[int, int], int] = {}  # (tables key, stack id) -> root function's id
        self._metrics: dict[int, int] = {}
        self._index = 0
        self._since: int | None = None  # the previous snapshot's end: spans count from there
        self.unit: Tables | None = None  # the tables of the last batch fed
        self._unit_key = 0  # the unit's key in the root cache: negative, apart from the span builder's
        self._reset()

    def _reset(self) -> None:
        self._first = self._last = -1
        self._start = self._end = -1
        self._events = 0
        self._shed = self._lost = self._gaps = 0

    # -- feeding --

    def feed(self, batch: EventBatch) -> None:
        if not len(batch):
            return
        gen = batch.gen
        if gen is not None:
            if gen is not self.unit:
                self.unit = gen
                self._unit_key -= 1
            self._first = gen.gen if self._first < 0 else self._first
            self._last = gen.gen
        times = batch.times
        if self._start < 0:
            # A legacy trace opens with a Sync at time -1 (as Go's parsed
            # dump has it), which is no time of the trace: its span starts
            # at the first event that has one.
            self._start = next((t for t in times if t >= 0), -1)
        self._end = max(self._end, times[len(batch) - 1])
        self._events += len(batch)
        codes = bytes(batch.codes)  # searched, not looped over
        self._feed_metrics(batch, codes)
        self._feed_creations(batch, codes)
        self._feed_spans(self._spans.feed(batch))

    def notice(self, item: object) -> None:
        """A session's notice: losses are counted, and a gap (generations
        shed, or the time between two segments or windows) ends the open
        spans, whose ends would be wrong."""
        if isinstance(item, SubscriberGap):
            self._lost += item.batches
            self._spans.gap()
        elif isinstance(item, WindowGap | SegmentGap):
            self._gaps += 1
            self._spans.gap()
        elif isinstance(item, Gap):
            self._shed += item.last_generation - item.first_generation + 1
            self._spans.gap()

    def _feed_metrics(self, batch: EventBatch, codes: bytes) -> None:
        args = batch.args
        for code, pattern in _METRIC_BYTES.items():
            i = codes.rfind(pattern)
            if i >= 0:
                self._metrics[code] = args[i * NARGS]

    def _feed_creations(self, batch: EventBatch, codes: bytes) -> None:
        """A goroutine created in the batch is named by its start function
        (the creation's new stack): one that exits without ever blocking
        records no stack of its own."""
        gen = self.unit
        if gen is None:
            return
        args, index, sums = batch.args, self._index, self._sums
        find = codes.translate(_CREATIONS).find
        i = find(1)
        while i >= 0:
            a = i * NARGS
            name = self._root(gen, self._unit_key, args[a + 1])
            if name:
                sums.name(_signed(args[a]), name, index)
            i = find(1, i + 1)

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
            self._since,
            self._index,
            root_of,
        )

    # -- reading --

    def snapshot(self) -> Snapshot:
        """Everything since the previous snapshot; the next one starts afresh."""
        rows, kinds, regions, tasks = self._sums.take()
        names = self._spans.names
        groups: dict[str, Group] = {}
        for _, nid, running, runnable, syscall, blocked in rows:
            name = self._root_names[nid] or UNNAMED
            grp = groups.get(name)
            if grp is None:
                grp = groups[name] = Group(name)
            grp.goroutines += 1
            grp.running += running
            grp.runnable += runnable
            grp.syscall += syscall
            for rid, ns in blocked:
                reason = names[rid].decode("utf-8", "replace")
                grp.blocked[reason] = grp.blocked.get(reason, 0) + ns
        open_now = self._spans.open_counts()
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
