"""The span builder: sans-IO, fed decoded batches, one for every format.

It keeps what is open across batches and generations in its core (the
compiled one, csrc/spans.c, or the pure-Python twin, spans/twin.py) and
does here only what both share: naming the tables each batch refers to,
the table of names, and the logs of open tasks (rare events, found with a
byte search rather than a per-event loop).
"""

from __future__ import annotations

import re
from typing import Protocol

from livetrace._trace.accel import compiled_core
from livetrace._trace.model.batch import NARGS, EventBatch
from livetrace._trace.model.tables import Tables
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import SpanKind
from livetrace._trace.spans.twin import SpanCore
from livetrace._trace.spec.modern import EV_USER_LOG, EV_USER_TASK_BEGIN, EV_USER_TASK_END

_TASK_EVENTS = re.compile(bytes([ord("["), EV_USER_TASK_BEGIN, EV_USER_TASK_END, EV_USER_LOG, ord("]")]))
_TASK = bytes([SpanKind.TASK])
Logs = list[tuple[bytes, bytes]]


class Core(Protocol):
    def feed(
        self,
        codes: memoryview,
        times: memoryview,
        goroutines: memoryview,
        args: memoryview,
        extra: memoryview,
        token: int,
        strings: dict[int, bytes],
        extra_strings: list[bytes],
        intern: dict[bytes, int],
        names: list[bytes],
        /,
    ) -> list[bytes]: ...
    def close(self) -> list[bytes]: ...
    def gap(self) -> None: ...
    def min_tables(self) -> int: ...


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
        cc = compiled_core(compiled)
        self._core: Core = SpanCore() if cc is None else cc.SpanCore()
        self.names: list[bytes] = [b""]  # the names batches' ids index; only grows
        self._intern: dict[bytes, int] = {b"": 0}
        self._tables: dict[int, Tables] = {}
        self._last: Tables | None = None
        self._token = -1
        self._task_logs: dict[int, Logs] = {}  # open task -> its logs

    def _token_of(self, gen: Tables | None) -> int:
        if gen is not None and gen is not self._last:
            self._last = gen
            self._token += 1
            self._tables[self._token] = gen
            oldest = self._core.min_tables()
            oldest = self._token if oldest < 0 else oldest
            for k in [k for k in self._tables if k < oldest]:  # tables no open span refers to
                del self._tables[k]
        return self._token

    def feed(self, batch: EventBatch) -> SpanBatch:
        """The spans that ended in this batch."""
        gen = batch.gen
        token = self._token_of(gen)
        codes, times, _, _, goroutines, args, extra = batch.columns()
        strings = gen.strings if gen is not None else {}
        extra_strings = gen.extra_strings if gen is not None else [b""]
        logs = self._scan_tasks(codes, args, gen)
        cols = self._core.feed(
            codes, times, goroutines, args, extra, token, strings, extra_strings, self._intern, self.names
        )
        return self._batch(cols, logs)

    def close(self) -> SpanBatch:
        """The spans still open at the trace's end; the builder is then
        empty, as new."""
        return self._batch(self._core.close(), dict(self._task_logs), final=True)

    def gap(self) -> None:
        """Generations were lost: forget every open span."""
        self._core.gap()
        self._task_logs.clear()

    def _scan_tasks(self, codes: memoryview, args: memoryview, gen: Tables | None) -> dict[int, Logs]:
        """Follow the batch's task begins, ends and logs; the logs of the
        tasks that end in it, by task id."""
        ended: dict[int, Logs] = {}
        raw = codes.tobytes()
        if gen is None or _TASK_EVENTS.search(raw) is None:
            return ended
        open_logs = self._task_logs
        for mt in _TASK_EVENTS.finditer(raw):
            i = mt.start()
            code, task = raw[i], args[i * NARGS]
            if code == EV_USER_TASK_BEGIN:
                open_logs[task] = []
            elif code == EV_USER_TASK_END:
                ended[task] = open_logs.pop(task, [])
            elif task in open_logs:
                s = gen.strings
                open_logs[task].append((s.get(args[i * NARGS + 1], b""), s.get(args[i * NARGS + 2], b"")))
        return ended

    def _batch(self, cols: list[bytes], logs: dict[int, Logs], final: bool = False) -> SpanBatch:
        refs = set(memoryview(cols[7]).cast("I")) | set(memoryview(cols[8]).cast("I"))
        tables = {k: self._tables[k] for k in refs if k in self._tables}
        span_logs = {}
        if logs:
            kinds, tasks = cols[0], memoryview(cols[12]).cast("Q")
            i = kinds.find(_TASK)
            while i >= 0:
                got = logs.get(tasks[i])
                if got:
                    span_logs[i] = tuple(got)
                i = kinds.find(_TASK, i + 1)
        if final:
            self._task_logs.clear()
            self._tables.clear()
            self._last = None
        return SpanBatch(cols, tables, self.names, span_logs)
