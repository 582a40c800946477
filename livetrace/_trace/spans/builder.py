"""The span builder: sans-IO, fed decoded batches, one for every format.

It keeps what is open across batches and generations in its core (the
compiled one, _ccore/spans/spans.c, or the pure-Python twin, spans/twin.py) and
does here only what both share: naming the tables each batch refers to,
the table of names, and the logs of open tasks and regions (rare events,
found with a byte search rather than a per-event loop: it follows region
begins and ends, and goroutine exits while regions are open, by the same
rules as the core, so that the k-th region span the core emits is the k-th
region this side saw end).
"""

from __future__ import annotations

import dataclasses
import re

from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.model.batch import NARGS, EventBatch
from livetrace._trace.model.tables import Tables
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import MAX_SPAN_LOGS, SpanKind
from livetrace._trace.spans.twin import SpanCore
from livetrace._trace.spec.modern import (
    EV_GO_DESTROY,
    EV_GO_DESTROY_SYSCALL,
    EV_USER_LOG,
    EV_USER_REGION_BEGIN,
    EV_USER_REGION_END,
    EV_USER_TASK_BEGIN,
    EV_USER_TASK_END,
)


def _any_of(*codes: int) -> re.Pattern[bytes]:
    return re.compile(b"[" + b"".join(re.escape(bytes([c])) for c in codes) + b"]")


_USER = (EV_USER_TASK_BEGIN, EV_USER_TASK_END, EV_USER_LOG, EV_USER_REGION_BEGIN, EV_USER_REGION_END)
_USER_EVENTS = _any_of(*_USER)
_USER_EVENTS_OR_EXITS = _any_of(*_USER, EV_GO_DESTROY, EV_GO_DESTROY_SYSCALL)
_REGION_BEGIN = bytes([EV_USER_REGION_BEGIN])
_TASK = bytes([SpanKind.TASK])
_REGION = bytes([SpanKind.REGION])
Logs = list[tuple[bytes, bytes]]


class SpanBuilder:
    """Spans from decoded batches: :meth:`feed` each :class:`EventBatch` in
    order and get the spans that ended in it; :meth:`close` at the trace's
    end gives those still open, cut at its last event and marked
    ``clipped_end`` (Go's pprof-like profiles leave such intervals out, its
    goroutine analysis counts them to the trace's end: keep or drop them
    by that flag). :meth:`gap` after generations were lost (a live session
    that shed some) forgets the open spans, whose ends would be wrong.

    ``compiled`` as for :func:`open_decoder`: None takes the compiled core
    when there is one.
    """

    def __init__(self, *, compiled: bool | None = None) -> None:
        self._core: SpanCore | ccore.SpanCore = ccore.SpanCore() if use_compiled(compiled) else SpanCore()
        self.names: list[bytes] = [b""]  # the names batches' ids index; only grows
        self._intern: dict[bytes, int] = {b"": 0}
        self._tables: dict[int, Tables] = {}
        self._last: Tables | None = None
        self._token = -1
        self._task_logs: dict[int, Logs] = {}  # open task -> its logs
        # goroutine -> its open regions, innermost last: (task, begin order, logs)
        self._regions: dict[int, list[tuple[int, int, Logs]]] = {}
        self._region_seq = 0

    def _token_of(self, gen: Tables | None) -> int:
        if gen is not None and gen is not self._last:
            previous = self._token
            self._last = gen
            self._token += 1
            self._tables[self._token] = gen
            oldest = self._core.min_tables()
            oldest = self._token if oldest < 0 else oldest
            for k in [k for k in self._tables if k < oldest]:  # tables no open span refers to
                del self._tables[k]
            if previous in self._tables:
                self._slim(previous)
        return self._token

    def _slim(self, token: int) -> None:
        """No span opens with the tables of ``token`` any more: keep of them
        only the start stacks of the spans still open, so that a span open
        for long (a goroutine blocked for the whole session) holds its own
        stack, not a whole generation (its tables and, from a live modern
        decoder, its raw batches): else every generation since the oldest
        open span stayed in memory."""
        old = self._tables[token]
        stacks = {sid for k, sid in self._core.open_stacks() if k == token and sid in old.stacks}
        pcs = {pc for sid in stacks for pc in old.stacks[sid]}
        frames = {pc: old.frames[pc] for pc in pcs if pc in old.frames}
        strings = {0: b""} | {s: old.strings[s] for f in frames.values() for s in f[:2] if s in old.strings}
        # A plain Tables: a decoder's Generation (a Tables) also holds all its raw batches.
        kept = {f.name: getattr(old, f.name) for f in dataclasses.fields(Tables)}
        kept.update(stacks={0: ()} | {sid: old.stacks[sid] for sid in stacks}, frames=frames, strings=strings)
        self._tables[token] = Tables(**kept)

    def feed(self, batch: EventBatch) -> SpanBatch:
        """The spans that ended in this batch."""
        gen = batch.gen
        token = self._token_of(gen)
        codes, times, _, procs, goroutines, args, extra = batch.columns()
        strings = gen.strings if gen is not None else {}
        extra_strings = gen.extra_strings if gen is not None else [b""]
        task_logs, region_logs = self._scan_user_events(codes, goroutines, args, strings)
        cols = self._core.feed(
            codes, times, procs, goroutines, args, extra, token, strings, extra_strings, self._intern, self.names
        )
        return self._batch(cols, task_logs, region_logs)

    def close(self) -> SpanBatch:
        """The spans still open at the trace's end; the builder is then
        empty, as new."""
        still_open = sorted((r for rs in self._regions.values() for r in rs), key=lambda r: r[1])
        return self._batch(self._core.close(), dict(self._task_logs), [r[2] for r in still_open], final=True)

    def open_counts(self) -> dict[SpanKind, int]:
        """How many spans are open now, by kind: the goroutines in each
        state, whether a GC or a stop-the-world is under way, the tasks
        and regions begun and not yet ended."""
        return {SpanKind(k): n for k, n in enumerate(self._core.open_counts())}

    def gap(self) -> None:
        """Generations were lost: forget every open span."""
        self._core.gap()
        self._task_logs.clear()
        self._regions.clear()

    def _scan_user_events(
        self, codes: memoryview, goroutines: memoryview, args: memoryview, strings: dict[int, bytes]
    ) -> tuple[dict[int, Logs], list[Logs]]:
        """Follow the batch's tasks, regions and logs: the logs of the tasks
        that end in it, by task id, and of the regions that end in it, in
        the order the core ends them."""
        ended_tasks: dict[int, Logs] = {}
        ended_regions: list[Logs] = []
        raw = codes.tobytes()
        regions = self._regions
        # Goroutine exits matter only while a region is open.
        pattern = _USER_EVENTS_OR_EXITS if regions or _REGION_BEGIN in raw else _USER_EVENTS
        open_tasks = self._task_logs
        for mt in pattern.finditer(raw):
            i = mt.start()
            code, g, a0 = raw[i], goroutines[i], args[i * NARGS]
            if code == EV_USER_LOG:
                entry = (strings.get(args[i * NARGS + 1], b""), strings.get(args[i * NARGS + 2], b""))
                logs = open_tasks.get(a0)
                if logs is not None and len(logs) < MAX_SPAN_LOGS:
                    logs.append(entry)
                for task, _, logs in regions.get(g, ()):
                    if task == a0 and len(logs) < MAX_SPAN_LOGS:
                        logs.append(entry)
            elif code == EV_USER_REGION_BEGIN:
                self._region_seq += 1
                regions.setdefault(g, []).append((a0, self._region_seq, []))
            elif code == EV_USER_REGION_END:
                stack = regions.get(g)
                ended_regions.append(stack.pop()[2] if stack else [])  # none open: the core clips one
                if stack == []:
                    del regions[g]
            elif code == EV_USER_TASK_BEGIN:
                open_tasks[a0] = []
            elif code == EV_USER_TASK_END:
                ended_tasks[a0] = open_tasks.pop(a0, [])
            else:  # a goroutine's exit ends its open regions, innermost first
                ended_regions.extend(r[2] for r in reversed(regions.pop(g, [])))
        return ended_tasks, ended_regions

    def _batch(
        self, cols: list[bytes], task_logs: dict[int, Logs], region_logs: list[Logs], final: bool = False
    ) -> SpanBatch:
        refs = set(memoryview(cols[7]).cast("I")) | set(memoryview(cols[8]).cast("I"))
        tables = {k: self._tables[k] for k in refs if k in self._tables}
        span_logs = {}
        kinds = cols[0]
        if task_logs:
            tasks = memoryview(cols[12]).cast("Q")
            i = kinds.find(_TASK)
            while i >= 0:
                got = task_logs.get(tasks[i])
                if got:
                    span_logs[i] = tuple(got)
                i = kinds.find(_TASK, i + 1)
        if any(region_logs):
            i = kinds.find(_REGION)
            for got in region_logs:  # the core emits exactly these regions, in this order
                if got:
                    span_logs[i] = tuple(got)
                i = kinds.find(_REGION, i + 1)
        if final:
            self._task_logs.clear()
            self._regions.clear()
            self._tables.clear()
            self._last = None
        return SpanBatch(cols, tables, self.names, span_logs)
