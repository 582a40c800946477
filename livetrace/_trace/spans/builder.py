"""The span builder: sans-IO, fed decoded batches, one for every format.

It keeps what is open across batches and generations in its core (the
compiled one, _ccore/spans/spans.c, or the pure-Python twin, spans/twin.py) and
does here only what both share: naming the tables each batch refers to,
the table of names, and the logs of open tasks and regions (spans/logs.py).
A generation can also be built on its own and joined to those before it
(spans/join.py), with the same results.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.tables import Tables
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.logs import Logs, user_logs
from livetrace._trace.spans.model import Follow, SpanKind
from livetrace._trace.spans.twin import SpanCore

_TASK = bytes([SpanKind.TASK])
_REGION = bytes([SpanKind.REGION])


def slim_tables(old: Tables, stacks: set[int]) -> Tables:
    """Of a past generation's tables, only what the start stacks of the
    spans still open need, so that a span open for long (a goroutine
    blocked for the whole session) holds its own stack, not a whole
    generation (its tables and, from a live modern decoder, its raw
    batches): else every generation since the oldest open span stayed in
    memory."""
    stacks = {sid for sid in stacks if sid in old.stacks}
    pcs = {pc for sid in stacks for pc in old.stacks[sid]}
    frames = {pc: old.frames[pc] for pc in pcs if pc in old.frames}
    strings = {0: b""} | {s: old.strings[s] for f in frames.values() for s in f[:2] if s in old.strings}
    # A plain Tables: a decoder's Generation (a Tables) also holds all its raw batches.
    kept = {f.name: getattr(old, f.name) for f in dataclasses.fields(Tables)}
    kept.update(stacks={0: ()} | {sid: old.stacks[sid] for sid in stacks}, frames=frames, strings=strings)
    return Tables(**kept)


def span_logs(
    cols: list[bytes], task_logs: dict[int, Logs], region_logs: list[Logs], *, fast: bool
) -> dict[int, tuple[tuple[bytes, bytes], ...]]:
    """The logs of a batch's task and region spans, by row: tasks by id, and
    regions in the order the core emitted them. ``fast``: the task spans'
    found in the core."""
    out: dict[int, tuple[tuple[bytes, bytes], ...]] = {}
    kinds = cols[0]
    if not any(task_logs.values()):  # (most tasks log nothing: no step for each)
        pass
    elif fast:
        out = ccore.span_task_logs(kinds, cols[12], task_logs, SpanKind.TASK)
    else:
        tasks = memoryview(cols[12]).cast("Q")
        i = kinds.find(_TASK)
        while i >= 0:
            got = task_logs.get(tasks[i])
            if got:
                out[i] = tuple(got)
            i = kinds.find(_TASK, i + 1)
    if any(region_logs):
        i = kinds.find(_REGION)
        for got in region_logs:  # the core emits exactly these regions, in this order
            if got:
                out[i] = tuple(got)
            i = kinds.find(_REGION, i + 1)
    return out


def _keys(column: bytes) -> Collection[int]:
    """The table keys a column (u32) holds. Nearly every batch's spans all
    start in one generation, and all end in one: one comparison of bytes
    then, not a Python int for each span."""
    first = column[:4]
    if column == first * (len(column) // 4):
        return (int.from_bytes(first, "little"),) if first else ()
    return set(memoryview(column).cast("I"))


class SpanBuilder:
    """Spans from decoded batches: :meth:`feed` each :class:`EventBatch` in
    order and get the spans that ended in it; :meth:`close` at the trace's
    end gives those still open, cut at its last event and marked
    ``clipped_end`` (Go's pprof-like profiles leave such intervals out, its
    goroutine analysis counts them to the trace's end: keep or drop them
    by that flag). :meth:`gap` after generations were lost (a live session
    that shed some) forgets the open spans, whose ends would be wrong.

    ``compiled`` as for :func:`open_decoder`: None takes the compiled core
    when there is one. ``follow`` (:class:`Follow`, from ``follow_for``
    of the kinds wanted): what it follows beside the ranges; the spans of
    the kinds that needs are those a builder that follows all gives, and
    no other goroutine's or P's span is made (nor, without the logs, any
    task's or region's logs). :meth:`widen` follows more from then on: the
    goroutines and Ps met after that start as a new builder meets them,
    and the tasks and regions open then with no logs from before.
    """

    def __init__(self, *, compiled: bool | None = None, follow: Follow = Follow.ALL) -> None:
        self._fast = use_compiled(compiled)
        self._core: SpanCore | ccore.SpanCore = (
            ccore.SpanCore(False, int(follow)) if self._fast else SpanCore(False, follow)
        )
        self.names: list[bytes] = [b""]  # the names batches' ids index; only grows
        self._tables: dict[int, Tables] = {}
        self._last: Tables | None = None
        self._token = -1
        self._logs = user_logs(compiled=compiled, following=bool(follow & Follow.LOGS))

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
        only the start stacks of the spans still open."""
        stacks = {sid for k, sid in self._core.open_stacks() if k == token}
        self._tables[token] = slim_tables(self._tables[token], stacks)

    def feed(self, batch: EventBatch) -> SpanBatch:
        """The spans that ended in this batch."""
        gen = batch.gen
        token = self._token_of(gen)
        codes, times, _, procs, goroutines, args, extra = batch.columns()
        strings = gen.strings if gen is not None else {}
        extra_strings = gen.extra_strings if gen is not None else [b""]
        task_logs, region_logs = self._logs.scan(codes, goroutines, args, strings)
        cols = self._core.feed(codes, times, procs, goroutines, args, extra, token, strings, extra_strings, self.names)
        return self._batch(cols, task_logs, region_logs)  # type: ignore[arg-type]  # no Prior unless split

    def close(self) -> SpanBatch:
        """The spans still open at the trace's end; the builder is then
        empty, as new."""
        still_open = sorted((r for rs in self._logs.regions.values() for r in rs), key=lambda r: r[1])
        return self._batch(self._core.close(), dict(self._logs.tasks), [r[2] for r in still_open], final=True)

    def open_counts(self) -> dict[SpanKind, int]:
        """How many spans are open now, by kind: the goroutines in each
        state, whether a GC or a stop-the-world is under way, the tasks
        and regions begun and not yet ended."""
        return {SpanKind(k): n for k, n in enumerate(self._core.open_counts())}

    @property
    def follow(self) -> Follow:
        return Follow(self._core.widen(0))

    def widen(self, more: Follow) -> None:
        """Follow ``more`` too, from the next batch on."""
        before = self.follow
        if Follow(self._core.widen(int(more))) & ~before & Follow.LOGS:
            self._logs.follow_open(self._core.export()[0])

    def gap(self) -> None:
        """Generations were lost: forget every open span."""
        self._core.gap()
        self._logs.clear()

    def _batch(
        self, cols: list[bytes], task_logs: dict[int, Logs], region_logs: list[Logs], final: bool = False
    ) -> SpanBatch:
        refs = {*_keys(cols[7]), *_keys(cols[8])}
        tables = {k: self._tables[k] for k in refs if k in self._tables}
        logs = span_logs(cols, task_logs, region_logs, fast=self._fast)
        if final:
            self._logs.clear()
            self._tables.clear()
            self._last = None
        return SpanBatch(cols, tables, self.names, logs, closed=final)
