"""What a Perfetto timeline of a Go trace shows, from spans and events.

:class:`TimelineCollector` takes a trace's :class:`SpanBatch` objects (each
span becomes one slice, its *primary* slice, whose category is the span
kind's name) and its :class:`EventBatch` objects (for what spans do not
say: who unblocked whom, logs, metrics, a task's parent, which M started a
P). :meth:`TimelineCollector.timeline` lays them out as tracks:

- Procs: a track per P, its running spans (the P held by an M, named after
  the M) with the goroutines that ran on it nested inside (category
  ``on-proc``);
- Threads: a track per M, the Ps it held (category ``on-thread``);
- Goroutines: a track per goroutine, its running, runnable, blocked and
  syscall spans one after another, the log messages as instants, and a
  child track for its mark assists (which may span several states);
- Tasks: a track per user task, the task's span, and a child track per
  goroutine that ran its regions (regions of several goroutines of one task
  may overlap without nesting; one goroutine's nest);
- Runtime: GC cycles, stop-the-world pauses, and the counters: heap,
  heap goal, GOMAXPROCS, goroutines per state.

Flows join an unblocking goroutine (an ``unblock`` instant on its track) to
the next running slice of the goroutine it woke, and a task's slice to
each child task's slice.

Every track's slices are made to nest (the writer does it as it writes
them): sorted by start (longest first on a tie), a slice that would outlast
the one it starts in is cut at that one's end. Spans of one state of one
goroutine never overlap, so this only touches spans whose ends a gap or the
trace's edge made up.

A trace holds millions of spans, so the spans are kept as the batches'
columns and laid out a column at a time (``map``, ``compress``, sorts of
whole columns): a Python object or loop step per span would cost most of
the export. Only the rare spans (GC, stop-the-world, tasks, regions, mark
assists, Ps) go through a loop, and the wakes (to join the flows that end on
one slice).
"""

from __future__ import annotations

import gc
import re
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import accumulate, compress, count, islice, repeat
from operator import and_, attrgetter, eq, ge, getitem, itemgetter, lshift, lt, ne, neg, or_, rshift

from livetrace._trace.model.batch import NARGS, EventBatch
from livetrace._trace.model.events import METRIC_NAMES, NO_TASK
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import RES_GOROUTINE, RES_PROC, SPAN_KIND_NAMES, Follow, SpanKind
from livetrace._trace.spec.modern import (
    EV_GO_SWITCH,
    EV_GO_SWITCH_DESTROY,
    EV_GO_UNBLOCK,
    EV_PROC_START,
    EV_PROC_STATUS,
    EV_USER_LOG,
    EV_USER_TASK_BEGIN,
)

_WAKES = (EV_GO_UNBLOCK, EV_GO_SWITCH, EV_GO_SWITCH_DESTROY)
_PROC_STARTS = (EV_PROC_START, EV_PROC_STATUS)
_OTHER_CODES = frozenset((*_PROC_STARTS, EV_USER_LOG, EV_USER_TASK_BEGIN, *METRIC_NAMES))


def _table(members: Iterable[int]) -> bytes:
    """256 bytes for bytes.translate: 1 for the members, 0 for the rest."""
    s = frozenset(members)
    return bytes(1 if c in s else 0 for c in range(256))


_IS_WAKE = _table(_WAKES)
_IS_OTHER = _table(_OTHER_CODES)
_ANY = re.compile(b"[^\x00]")

# Counter tracks, by metric code: (name, unit of the track).
_METRIC_TRACKS = {code: name.split(":")[0] for code, name in METRIC_NAMES.items()}

# What the timeline's span builder follows: every span, but no logs (the timeline takes them from the events).
TIMELINE_FOLLOWS = Follow.STATES

_GOROUTINE_STATES = (SpanKind.RUNNING, SpanKind.RUNNABLE, SpanKind.BLOCKED, SpanKind.SYSCALL)
_IS_STATE = _table(_GOROUTINE_STATES)
_IS_RUNNING = _table((SpanKind.RUNNING,))
_IS_GOROUTINE = _table((RES_GOROUTINE,))
_FLIP = _table((0,))  # a 0/1 mask's complement
_first, _second = itemgetter(0), itemgetter(1)

# Track keys: (group, id...). Groups, in the order the timeline lists them.
ROOTS = ("Procs", "Threads", "Goroutines", "Tasks", "Runtime")

Key = tuple[object, ...]


@dataclass(slots=True)
class Track:
    key: Key
    name: str
    parent: Key | None
    rank: int  # order among its siblings
    # (span, step) where the layout first needed the track: the tracks' order
    # in the file is the order in which the spans, then the wakes and the
    # logs, first touch them.
    made: tuple[int, int]
    # The slices as columns (ns; labels index Timeline.labels), sorted by
    # start, longest first, then in span order; the writer nests them.
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    # Slice index -> ids of the flows it begins, and of those it ends.
    flows_out: dict[int, list[int]] = field(default_factory=dict)
    flows_in: dict[int, list[int]] = field(default_factory=dict)
    # The instants, sorted by time (then in the order made), and the flow
    # each begins (0: none).
    instant_times: list[int] = field(default_factory=list)
    instant_labels: list[int] = field(default_factory=list)
    instant_flows: list[int] = field(default_factory=list)
    counter: tuple[list[int], list[int]] | None = None  # (times, values) of a counter track

    def __len__(self) -> int:
        """Its slices and instants."""
        return len(self.starts) + len(self.instant_times)


@dataclass(slots=True)
class Timeline:
    tracks: list[Track]  # parents before their children
    labels: list[tuple[str, str]]  # (name, category) of slices and instants


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


class TimelineCollector:
    """Spans and events in, a :class:`Timeline` out; see the module's doc."""

    def __init__(self) -> None:
        # The spans' columns, of every batch one after another; reasons
        # and names as ids into self.strings.
        self.kinds = bytearray()
        self.resource_kinds = bytearray()
        self.resource_ids, self.starts, self.ends, self.procs = array("q"), array("q"), array("q"), array("q")
        self.tasks = array("Q")
        self.reasons: list[int] = []
        self.names: list[int] = []
        self.strings: list[bytes] = [b""]
        self._string_ids: dict[bytes, int] = {b"": 0}
        self.wakes: tuple[list[int], list[int], list[int]] = ([], [], [])  # (time, waker, woken) columns
        self.logs: list[tuple[int, int, bytes, bytes]] = []  # (time, goroutine, category, message)
        self.metrics: dict[int, list[tuple[int, int]]] = defaultdict(list)  # code -> (time, value)
        self.parents: dict[int, int] = {}  # task -> parent task
        self.proc_threads: dict[tuple[int, int], int] = {}  # (P, time it started running) -> M

    def feed_spans(self, batch: SpanBatch) -> None:
        if not len(batch):
            return
        self.kinds += batch.kinds
        self.resource_kinds += batch.resource_kinds
        for mine, theirs in (
            (self.resource_ids, batch.resource_ids),
            (self.starts, batch.starts),
            (self.ends, batch.ends),
            (self.procs, batch.procs),
            (self.tasks, batch.tasks),
        ):
            mine.frombytes(theirs.cast("B"))
        # Each batch's ids index its own names table: one id per string here.
        table, ids = batch.names_table, self._string_ids
        local: dict[int, int] = {}
        for i in {*batch.reasons, *batch.names}:
            if table[i] not in ids:
                ids[table[i]] = len(self.strings)
                self.strings.append(table[i])
            local[i] = ids[table[i]]
        self.reasons += map(local.__getitem__, batch.reasons)
        self.names += map(local.__getitem__, batch.names)

    def feed_events(self, batch: EventBatch) -> None:
        if not len(batch):
            return
        codes, times, threads, _, goroutines, args, _ = batch.columns()
        raw = bytes(codes)
        # Wakes are many (one per unblock): taken a column at a time.
        wakes = list(compress(range(len(raw)), raw.translate(_IS_WAKE)))
        if wakes:
            t, waker, woken = self.wakes
            t += map(times.__getitem__, wakes)
            waker += map(goroutines.__getitem__, wakes)
            woken += map(args[::NARGS].__getitem__, wakes)
        hits = [m.start() for m in _ANY.finditer(raw.translate(_IS_OTHER))]
        strings = batch.gen.strings if batch.gen is not None and hits else {}
        for i in hits:
            c, t_, a = raw[i], times[i], i * NARGS
            if c == EV_USER_LOG:
                self.logs.append((t_, goroutines[i], strings.get(args[a + 1], b""), strings.get(args[a + 2], b"")))
            elif c == EV_USER_TASK_BEGIN:
                if args[a + 1] not in (0, NO_TASK):
                    self.parents[args[a]] = args[a + 1]
            elif c in _PROC_STARTS:
                if threads[i] >= 0:
                    self.proc_threads[(args[a], t_)] = threads[i]
            else:
                self.metrics[c].append((t_, args[a]))

    def timeline(self) -> Timeline:
        with no_gc():
            return _Layout(self).build()


@contextmanager
def no_gc() -> Iterator[None]:
    """The cyclic garbage collector off: the layout and the writer make
    millions of tuples and lists (none in a cycle), and every so many the
    collector would walk all that survived, more than doubling the time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class _Labels(dict[tuple[str, str], int]):
    """(name, category) -> label id, made on first use."""

    def __missing__(self, label: tuple[str, str]) -> int:
        self[label] = n = len(self)
        return n


class _Cache(dict[object, int]):
    """A label id per key, made by a function of the key on first use."""

    def __init__(self, labels: _Labels, make: object) -> None:
        super().__init__()
        self.labels, self.make = labels, make

    def __missing__(self, key: object) -> int:
        self[key] = n = self.labels[self.make(key)]  # type: ignore[operator]
        return n


class _Layout:
    def __init__(self, c: TimelineCollector) -> None:
        self.c = c
        self.tracks: dict[Key, Track] = {}
        self.labels = _Labels()
        # Slices of the tracks laid out span by span: (start, -end, span, label), sorted at the end.
        self.pending: dict[Key, list[tuple[int, int, int, int]]] = defaultdict(list)
        self.task_slices: dict[int, tuple[Key, int]] = {}  # task -> (track, span) of its slice
        # span -> ids of the flows its slice begins, and of those it ends (tasks)
        self.span_flows: tuple[dict[int, list[int]], dict[int, list[int]]] = ({}, {})
        # goroutine -> (starts, indexes on its track) of its running slices, by start
        self.runs: dict[int, tuple[list[int], list[int]]] = {}
        self.flow = 0
        self.n = len(c.kinds)
        self.S, self.E = c.starts.tolist(), c.ends.tolist()
        self.R, self.P = c.resource_ids.tolist(), c.procs.tolist()
        for rank, root in enumerate(ROOTS):
            self.track((root,), root, None, rank, (-1, rank))

    def track(self, key: Key, name: str, parent: Key | None, rank: int, made: tuple[int, int]) -> Track:
        """The track, made with these (name, parent, rank) if it is new;
        a track keeps the earliest ``made`` of all who ask for it."""
        t = self.tracks.get(key)
        if t is None:
            t = self.tracks[key] = Track(key, name, parent, rank, made)
        elif made < t.made:
            t.made = made
        return t

    def goroutine(self, g: int, made: tuple[int, int]) -> Track:
        return self.track(("G", g), f"G{g}", ("Goroutines",), g, made)

    def build(self) -> Timeline:
        c, n = self.c, self.n
        states = _and(c.kinds.translate(_IS_STATE), c.resource_kinds.translate(_IS_GOROUTINE))
        self._other_spans(compress(range(n), states.translate(_FLIP)))
        self._goroutine_states(states)
        self._on_proc(compress(range(n), _and(states, c.kinds.translate(_IS_RUNNING))))
        self._wake_flows()
        self._task_flows()
        self._logs()
        self._counters(states)
        for key, items in self.pending.items():
            self._settle(self.tracks[key], items)
        tracks = sorted(self.tracks.values(), key=attrgetter("made"))
        return Timeline(tracks, list(self.labels))

    def _other_spans(self, spans: Iterable[int]) -> None:
        """The spans other than goroutine states, one at a time (a few
        thousand in a trace): the order of their tracks' first use counts."""
        c, S, E, R = self.c, self.S, self.E, self.R
        strings, track, label, pending = c.strings, self.track, self.labels.__getitem__, self.pending
        for i in spans:
            k, rk, rid, s, e, task = c.kinds[i], c.resource_kinds[i], R[i], S[i], E[i], c.tasks[i]
            kind = SPAN_KIND_NAMES[k]
            made, then = (i, 0), (i, 1)
            if k == SpanKind.GC:
                key = track(("GC",), "GC", ("Runtime",), 0, made).key
                pending[key].append((s, -e, i, label(("GC", kind))))
            elif k == SpanKind.STW:
                reason = _text(strings[c.reasons[i]])
                key = track(("STW",), "Stop-the-world", ("Runtime",), 1, made).key
                name = f"stop-the-world ({reason})" if reason else "stop-the-world"
                pending[key].append((s, -e, i, label((name, kind))))
            elif k == SpanKind.TASK:
                name = _text(strings[c.names[i]])
                key = track(("T", task), f"task {task} {name}", ("Tasks",), task, made).key
                pending[key].append((s, -e, i, label((name or f"task {task}", kind))))
                self.task_slices[task] = (key, i)
            elif k == SpanKind.REGION:
                parent = ("T", task) if task else ("T", 0)
                track(parent, f"task {task}" if task else "no task", ("Tasks",), task, made)
                key = track((*parent, rid), f"G{rid}", parent, rid, then).key
                pending[key].append((s, -e, i, label((_text(strings[c.names[i]]), kind))))
            elif k == SpanKind.MARK_ASSIST:
                g = self.goroutine(rid, made)
                key = track(("GA", rid), "mark assist", g.key, 0, then).key
                pending[key].append((s, -e, i, label(("mark assist", kind))))
            elif rk == RES_PROC:
                m = c.proc_threads.get((rid, s))
                key = track(("P", rid), f"P{rid}", ("Procs",), rid, made).key
                pending[key].append((s, -e, i, label((f"M{m}" if m is not None else "running", kind))))
                if m is not None:
                    key = track(("M", m), f"M{m}", ("Threads",), m, then).key
                    pending[key].append((s, -e, i, label((f"P{rid}", "on-thread"))))
            # A goroutine state of a span with no goroutine: no track shows it.

    def _goroutine_states(self, states: bytes) -> None:
        """Each goroutine's running, runnable, blocked and syscall spans,
        a column at a time: grouped by goroutine, in span order (which is
        start order, as they do not overlap: checked, else sorted)."""
        c = self.c
        strings = c.strings

        def state(key: tuple[int, int]) -> tuple[str, str]:
            kind = SPAN_KIND_NAMES[key[0]]
            reason = _text(strings[key[1]]) if key[0] == SpanKind.BLOCKED else ""
            return (f"blocked ({reason})" if reason else kind), kind

        # The columns of these spans, read in order; then each gathered by
        # goroutine (reads all over memory: as few as can be).
        kinds = compress(c.kinds, states)
        labels = list(map(_Cache(self.labels, state).__getitem__, zip(kinds, compress(c.reasons, states), strict=True)))
        spans, gs = list(compress(range(self.n), states)), list(compress(self.R, states))
        order = sorted(range(len(spans)), key=gs.__getitem__)  # stable: span order within a goroutine
        starts, ends = list(compress(self.S, states)), list(compress(self.E, states))
        starts, ends = list(map(starts.__getitem__, order)), list(map(ends.__getitem__, order))
        labels = list(map(labels.__getitem__, order))
        running = self.labels[(SPAN_KIND_NAMES[SpanKind.RUNNING],) * 2]
        counts = Counter(gs)
        lo = 0
        for g in sorted(counts):
            hi = lo + counts[g]
            t = self.goroutine(g, (spans[order[lo]], 0))
            st, en, la = starts[lo:hi], ends[lo:hi], labels[lo:hi]
            runs = list(compress(range(hi - lo), map(eq, la, repeat(running))))
            if not all(map(lt, st, st[1:])):
                span = [spans[i] for i in order[lo:hi]]
                by = sorted(range(hi - lo), key=list(zip(st, map(neg, en), span, strict=True)).__getitem__)
                st, en, la = [st[i] for i in by], [en[i] for i in by], [la[i] for i in by]
                at = {i: p for p, i in enumerate(by)}
                runs = sorted((at[i] for i in runs), key=lambda p: (st[p], span[by[p]]))
            t.starts, t.ends, t.labels = st, en, la
            if runs:
                self.runs[g] = (list(map(st.__getitem__, runs)), runs)
            lo = hi

    def _on_proc(self, running: Iterable[int]) -> None:
        """On each P's track, the goroutines that ran on it: nested in the
        P's own running slices when they are sorted out."""
        P, S, E = self.P, self.S, self.E
        spans = sorted((i for i in running if P[i] >= 0), key=P.__getitem__)
        procs = list(map(P.__getitem__, spans))
        label = _Cache(self.labels, lambda g: (f"G{g}", "on-proc")).__getitem__
        lo = 0
        for p in dict.fromkeys(procs):
            hi = bisect_right(procs, p, lo)
            on = spans[lo:hi]
            key = self.track(("P", p), f"P{p}", ("Procs",), p, (on[0], 1)).key
            starts, ends, gs = map(S.__getitem__, on), map(neg, map(E.__getitem__, on)), map(self.R.__getitem__, on)
            self.pending[key] += zip(starts, ends, on, map(label, gs), strict=True)
            lo = hi

    def _wake_flows(self) -> None:
        """A flow from each wake to the first running slice of the woken
        goroutine that starts at or after it; the wake an ``unblock``
        instant on the waker's track."""
        times, wakers, woken = self.c.wakes
        no_runs: tuple[list[int], list[int]] = ([], [])
        runs = list(map(self.runs.get, woken, repeat(no_runs)))
        starts = list(map(_first, runs))
        run = list(map(bisect_left, starts, times))
        ok = list(compress(range(len(times)), map(and_, map(lt, run, map(len, starts)), map(ge, wakers, repeat(0)))))
        first = self.flow + 1
        self.flow += len(ok)
        # The flows' ends, on the woken's running slices (two wakes may end on one).
        slices = map(getitem, map(_second, map(runs.__getitem__, ok)), map(run.__getitem__, ok))
        ended: dict[int, dict[int, list[int]]] = defaultdict(dict)
        for g, p, f in zip(map(woken.__getitem__, ok), slices, count(first)):
            d = ended[g]
            if p in d:
                d[p].append(f)
            else:
                d[p] = [f]
        for g, d in ended.items():
            self.tracks[("G", g)].flows_in = d
        # The instants, grouped by waker (in wake order within a waker).
        by = sorted(ok, key=wakers.__getitem__)
        ws = list(map(wakers.__getitem__, by))
        label = _Cache(self.labels, lambda g: (f"unblock G{g}", "unblock")).__getitem__
        flow_of = dict(zip(ok, count(first)))
        lo, n = 0, self.n
        for g in dict.fromkeys(ws):
            hi = bisect_right(ws, g, lo)
            mine = by[lo:hi]
            t = self.goroutine(g, (n + mine[0], 0))
            t.instant_times += map(times.__getitem__, mine)
            t.instant_labels += map(label, map(woken.__getitem__, mine))
            t.instant_flows += map(flow_of.__getitem__, mine)
            lo = hi

    def _task_flows(self) -> None:
        out, in_ = self.span_flows
        for child, parent in self.c.parents.items():
            cs, ps = self.task_slices.get(child), self.task_slices.get(parent)
            if cs is not None and ps is not None:
                self.flow += 1
                out.setdefault(ps[1], []).append(self.flow)
                in_.setdefault(cs[1], []).append(self.flow)

    def _logs(self) -> None:
        base = self.n + len(self.c.wakes[0])
        for j, (t, g, category, message) in enumerate(self.c.logs):
            name = f"{_text(category)}: {_text(message)}" if category else _text(message)
            made = (base + j, 0)
            tr = self.goroutine(g, made) if g >= 0 else self.track(("Logs",), "Logs", ("Runtime",), 2, made)
            tr.instant_times.append(t)
            tr.instant_labels.append(self.labels[(name, "log")])
            tr.instant_flows.append(0)
        for tr in self.tracks.values():
            if tr.instant_times and not all(map(ge, tr.instant_times[1:], tr.instant_times)):
                by = sorted(range(len(tr.instant_times)), key=tr.instant_times.__getitem__)
                tr.instant_times = [tr.instant_times[i] for i in by]
                tr.instant_labels = [tr.instant_labels[i] for i in by]
                tr.instant_flows = [tr.instant_flows[i] for i in by]

    def _counters(self, states: bytes) -> None:
        made = (self.n + len(self.c.wakes[0]) + len(self.c.logs), 0)
        rank = 10
        for code, name in _METRIC_TRACKS.items():
            values = self.c.metrics.get(code)
            if values:
                ts, vs = zip(*sorted(values), strict=True)
                self.track(("C", name), name, ("Runtime",), rank, made).counter = (list(ts), list(vs))
            rank += 1
        for k in _GOROUTINE_STATES:
            mask = _and(states, self.c.kinds.translate(_table((k,))))
            if 1 not in mask:
                continue
            name = f"goroutines {SPAN_KIND_NAMES[k]}"
            counts = _count(list(compress(self.S, mask)), list(compress(self.E, mask)))
            self.track(("C", name), name, ("Runtime",), rank, made).counter = counts
            rank += 1

    def _settle(self, t: Track, items: list[tuple[int, int, int, int]]) -> None:
        """A track laid out span by span: its slices sorted, as columns."""
        items.sort()
        starts, negends, spans, labels = zip(*items, strict=True)
        t.starts, t.ends, t.labels = list(starts), list(map(neg, negends)), list(labels)
        out, in_ = self.span_flows
        if t.key[0] == "T" and (out or in_):  # the tasks' slices
            t.flows_out = {p: out[s] for p, s in enumerate(spans) if s in out}
            t.flows_in = {p: in_[s] for p, s in enumerate(spans) if s in in_}


def _and(a: bytes | bytearray, b: bytes | bytearray) -> bytes:
    """Two 0/1 masks of one length, and-ed: as integers, which is one C
    loop over machine words rather than a step per byte."""
    return (int.from_bytes(a, "little") & int.from_bytes(b, "little")).to_bytes(len(a), "little")


def _count(starts: list[int], ends: list[int]) -> tuple[list[int], list[int]]:
    """How many spans are open, at each time one starts or ends: (times,
    values), the value after all that start and end at that time."""
    # A mark is time * 2, + 1 for a start: ends sort before starts at one time.
    marks = [*map(lshift, ends, repeat(1)), *map(or_, map(lshift, starts, repeat(1)), repeat(1))]
    marks.sort()
    values = list(accumulate(map((-1, 1).__getitem__, map(and_, marks, repeat(1)))))
    times = list(map(rshift, marks, repeat(1)))
    last = [*map(ne, times, islice(times, 1, None)), True]  # the last mark at each time
    return list(compress(times, last)), list(compress(values, last))
