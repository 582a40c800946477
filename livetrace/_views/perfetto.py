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

Every track's slices are made to nest: sorted by start (longest first on a
tie), a slice that would outlast the one it starts in is cut at that one's
end. Spans of one state of one goroutine never overlap, so this only
touches spans whose ends a gap or the trace's edge made up.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import defaultdict
from dataclasses import dataclass, field

from livetrace._trace.model.batch import NARGS, EventBatch
from livetrace._trace.model.events import METRIC_NAMES, NO_TASK
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import RES_GOROUTINE, RES_PROC, SPAN_KIND_NAMES, SpanKind
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
_WANTED_CODES = frozenset((*_WAKES, *_PROC_STARTS, EV_USER_LOG, EV_USER_TASK_BEGIN, *METRIC_NAMES))
_WANTED = bytes(1 if c in _WANTED_CODES else 0 for c in range(256))
_ANY = re.compile(b"[^\x00]")

# Counter tracks, by metric code: (name, unit of the track).
_METRIC_TRACKS = {code: name.split(":")[0] for code, name in METRIC_NAMES.items()}
_GOROUTINE_STATES = (SpanKind.RUNNING, SpanKind.RUNNABLE, SpanKind.BLOCKED, SpanKind.SYSCALL)

# Track keys: (group, id...). Groups, in the order the timeline lists them.
ROOTS = ("Procs", "Threads", "Goroutines", "Tasks", "Runtime")


@dataclass(slots=True)
class Slice:
    start: int
    end: int  # == start for an instant
    name: str
    category: str
    instant: bool = False
    flows_out: list[int] = field(default_factory=list)
    flows_in: list[int] = field(default_factory=list)


@dataclass(slots=True)
class Track:
    key: tuple[object, ...]
    name: str
    parent: tuple[object, ...] | None
    rank: int  # order among its siblings
    slices: list[Slice] = field(default_factory=list)
    counter: list[tuple[int, int]] | None = None  # (time, value) of a counter track


@dataclass(slots=True)
class Timeline:
    tracks: list[Track]  # parents before their children


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


class TimelineCollector:
    """Spans and events in, a :class:`Timeline` out; see the module's doc."""

    def __init__(self) -> None:
        # kind, resource kind, resource id, start, end, reason, name, task, proc
        self.spans: list[tuple[int, int, int, int, int, bytes, bytes, int, int]] = []
        self.wakes: list[tuple[int, int, int]] = []  # (time, waker, woken)
        self.logs: list[tuple[int, int, bytes, bytes]] = []  # (time, goroutine, category, message)
        self.metrics: dict[int, list[tuple[int, int]]] = defaultdict(list)  # code -> (time, value)
        self.parents: dict[int, int] = {}  # task -> parent task
        self.proc_threads: dict[tuple[int, int], int] = {}  # (P, time it started running) -> M

    def feed_spans(self, batch: SpanBatch) -> None:
        names = batch.names_table
        for k, rk, rid, s, e, r, n, t, p in zip(
            batch.kinds,
            batch.resource_kinds,
            batch.resource_ids,
            batch.starts,
            batch.ends,
            batch.reasons,
            batch.names,
            batch.tasks,
            batch.procs,
            strict=True,
        ):
            self.spans.append((k, rk, rid, s, e, names[r], names[n], t, p))

    def feed_events(self, batch: EventBatch) -> None:
        if not len(batch):
            return
        codes, times, threads, _, goroutines, args, _ = batch.columns()
        raw = bytes(codes)
        hits = [m.start() for m in _ANY.finditer(raw.translate(_WANTED))]
        if not hits:
            return
        strings = batch.gen.strings if batch.gen is not None else {}
        for i in hits:
            c, t, a = raw[i], times[i], i * NARGS
            if c in _WAKES:
                self.wakes.append((t, goroutines[i], args[a]))
            elif c == EV_USER_LOG:
                self.logs.append((t, goroutines[i], strings.get(args[a + 1], b""), strings.get(args[a + 2], b"")))
            elif c == EV_USER_TASK_BEGIN:
                if args[a + 1] not in (0, NO_TASK):
                    self.parents[args[a]] = args[a + 1]
            elif c in _PROC_STARTS:
                if threads[i] >= 0:
                    self.proc_threads[(args[a], t)] = threads[i]
            else:
                self.metrics[c].append((t, args[a]))

    def timeline(self) -> Timeline:
        return _Layout(self).build()


class _Layout:
    def __init__(self, c: TimelineCollector) -> None:
        self.c = c
        self.tracks: dict[tuple[object, ...], Track] = {}
        self.flow = 0
        for rank, root in enumerate(ROOTS):
            self.track((root,), root, None, rank)

    def track(self, key: tuple[object, ...], name: str, parent: tuple[object, ...] | None, rank: int) -> Track:
        t = self.tracks.get(key)
        if t is None:
            t = self.tracks[key] = Track(key, name, parent, rank)
        return t

    def goroutine(self, g: int) -> Track:
        return self.track(("G", g), f"G{g}", ("Goroutines",), g)

    def next_flow(self) -> int:
        self.flow += 1
        return self.flow

    def build(self) -> Timeline:
        running_starts: dict[int, list[tuple[int, Slice]]] = defaultdict(list)
        task_slices: dict[int, Slice] = {}
        deltas: dict[int, list[tuple[int, int]]] = {k: [] for k in _GOROUTINE_STATES}
        track = self.track
        for k, rk, rid, s, e, reason, name, task, proc in self.c.spans:
            kind = SPAN_KIND_NAMES[k]
            if k == SpanKind.GC:
                track(("GC",), "GC", ("Runtime",), 0).slices.append(Slice(s, e, "GC", kind))
            elif k == SpanKind.STW:
                label = f"stop-the-world ({_text(reason)})" if reason else "stop-the-world"
                track(("STW",), "Stop-the-world", ("Runtime",), 1).slices.append(Slice(s, e, label, kind))
            elif k == SpanKind.TASK:
                sl = Slice(s, e, _text(name) or f"task {task}", kind)
                task_slices[task] = sl
                track(("T", task), f"task {task} {_text(name)}", ("Tasks",), task).slices.append(sl)
            elif k == SpanKind.REGION:
                parent = ("T", task) if task else ("T", 0)
                track(parent, f"task {task}" if task else "no task", ("Tasks",), task)
                child = track((*parent, rid), f"G{rid}", parent, rid)
                child.slices.append(Slice(s, e, _text(name), kind))
            elif k == SpanKind.MARK_ASSIST:
                g = self.goroutine(rid)
                track(("GA", rid), "mark assist", g.key, 0).slices.append(Slice(s, e, "mark assist", kind))
            elif rk == RES_PROC:
                m = self.c.proc_threads.get((rid, s))
                label = f"M{m}" if m is not None else "running"
                track(("P", rid), f"P{rid}", ("Procs",), rid).slices.append(Slice(s, e, label, kind))
                if m is not None:
                    track(("M", m), f"M{m}", ("Threads",), m).slices.append(Slice(s, e, f"P{rid}", "on-thread"))
            elif rk == RES_GOROUTINE:
                label = f"blocked ({_text(reason)})" if k == SpanKind.BLOCKED and reason else kind
                sl = Slice(s, e, label, kind)
                self.goroutine(rid).slices.append(sl)
                deltas[k].append((s, 1))
                deltas[k].append((e, -1))
                if k == SpanKind.RUNNING:
                    running_starts[rid].append((s, sl))
                    if proc >= 0:
                        track(("P", proc), f"P{proc}", ("Procs",), proc).slices.append(
                            Slice(s, e, f"G{rid}", "on-proc")
                        )
        self._wake_flows(running_starts)
        self._task_flows(task_slices)
        self._logs()
        self._counters(deltas)
        tracks = list(self.tracks.values())
        for t in tracks:
            t.slices = nested(t.slices)
        return Timeline(tracks)

    def _wake_flows(self, running_starts: dict[int, list[tuple[int, Slice]]]) -> None:
        for runs in running_starts.values():
            runs.sort(key=lambda r: r[0])
        starts = {g: [s for s, _ in runs] for g, runs in running_starts.items()}
        for t, waker, woken in self.c.wakes:
            runs = running_starts.get(woken, [])
            if waker < 0 or not runs:
                continue
            i = bisect_left(starts[woken], t)
            if i == len(runs):
                continue
            f = self.next_flow()
            runs[i][1].flows_in.append(f)
            self.goroutine(waker).slices.append(Slice(t, t, f"unblock G{woken}", "unblock", True, [f]))

    def _task_flows(self, task_slices: dict[int, Slice]) -> None:
        for child, parent in self.c.parents.items():
            cs, ps = task_slices.get(child), task_slices.get(parent)
            if cs is not None and ps is not None:
                f = self.next_flow()
                ps.flows_out.append(f)
                cs.flows_in.append(f)

    def _logs(self) -> None:
        for t, g, category, message in self.c.logs:
            name = f"{_text(category)}: {_text(message)}" if category else _text(message)
            tr = self.goroutine(g) if g >= 0 else self.track(("Logs",), "Logs", ("Runtime",), 2)
            tr.slices.append(Slice(t, t, name, "log", True))

    def _counters(self, deltas: dict[int, list[tuple[int, int]]]) -> None:
        rank = 10
        for code, name in _METRIC_TRACKS.items():
            values = self.c.metrics.get(code)
            if values:
                self.track(("C", name), name, ("Runtime",), rank).counter = sorted(values)
            rank += 1
        for k, ds in deltas.items():
            if not ds:
                continue
            ds.sort()
            points: list[tuple[int, int]] = []
            n = 0
            for t, d in ds:
                n += d
                if points and points[-1][0] == t:
                    points[-1] = (t, n)
                else:
                    points.append((t, n))
            name = f"goroutines {SPAN_KIND_NAMES[k]}"
            self.track(("C", name), name, ("Runtime",), rank).counter = points
            rank += 1


def nested(slices: list[Slice]) -> list[Slice]:
    """The slices sorted by start (longest first; instants after the
    slices that begin with them), each slice's end cut, where it must be,
    to the end of the slice it starts in."""
    slices.sort(key=lambda s: (s.start, s.instant, -s.end))
    open_ends: list[int] = []
    for s in slices:
        if s.instant:
            continue
        while open_ends and open_ends[-1] <= s.start:
            open_ends.pop()
        if open_ends and s.end > open_ends[-1]:
            s.end = open_ends[-1]
        open_ends.append(s.end)
    return slices
