"""Generations ordered apart, then carried into one stream.

The ordering engine's state crosses generations, so the sequential decoder
orders them one after the other. But a trace Go wrote restates, in each
generation, the status of every goroutine and proc it touches before their
first event there: ordered by a fresh engine, as if it were the trace's
first, a generation comes out almost as the sequential decoder gives it.
``fresh_generation`` does that (in any thread); ``carry``, fed the results in
generation order with the state the one before ended in, patches what the
carried state changes (the old states of the statuses, the thread contexts
left from before, a task's type at its end, the Sync count, times clamped
to be later than the last) and gives the state this one ends in, or says
that it cannot, and then ``ordered_generation`` orders it again from the
carried state, as the sequential decoder does (always correct, errors
included).

Why it is exact. The fresh engine differs from the carried one only in
what it finds when it first looks something up: a goroutine, proc, thread,
task or the GC state, all absent. It notes each such first look (the
``_Watched`` maps and the GC events), each decision that read a thread's
proc or goroutine left from before (``_Unk``: it compares as NO_ID, as the
fresh engine's would, and says when it was compared or hashed), the ranges
restated as active, the region ends with no begin, and the one check only
a later generation makes (a syscalling goroutine's thread). Where the
carried state has nothing for a key first looked up, the two engines took
the same path. Where it has something, the look must be a status that the
carried state agrees with (then only the event's old state differs), a
task's end (then only its type and parent), or a thread context never
decided on (then only the events' proc and goroutine): anything else, and
the generation is ordered again. Times: the carried engine stamps the i-th
event of the generation max(t_fresh, last + i + 1), the fresh one's already
being its own clamp from 0.

A fresh result comes from either engine: the twin's ``FreshOrdering``
notes as it goes; the compiled engine (``Engine(fresh=True)``) notes the
same in C (decode/fresh.h) and ``carry_compiled.py`` reads its notes into
a ``FreshOrdering``, so that one ``carry`` takes both. The generation that
cannot be carried is ordered again by either engine (``compiled``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from livetrace._errors import TraceFormatError
from livetrace._trace.accel import use_compiled
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import (
    GO_STATUS_STATE,
    GO_SYSCALL,
    NO_TASK,
    PROC_STATUS_STATE,
    PROC_SYSCALL,
    PROC_SYSCALL_ABANDONED,
    SYNC_CODE,
    Event,
    ProcState,
)
from livetrace._trace.modern.decoder import _CompiledEngine, _PythonEngine
from livetrace._trace.modern.generation import Generation
from livetrace._trace.modern.order import Ordering
from livetrace._trace.modern.state import (
    GC_NOT_RUNNING,
    GC_RUNNING,
    GC_UNDETERMINED,
    NO_ID,
    Ctx,
    GState,
    PState,
    signed,
)
from livetrace._trace.spec.modern import (
    EV_GC_ACTIVE,
    EV_GC_BEGIN,
    EV_GC_END,
    EV_GO_STATUS,
    EV_GO_STATUS_STACK,
    EV_PROC_STATUS,
    EV_USER_TASK_END,
)

if TYPE_CHECKING:
    from livetrace._trace._ccore import _EngineState as EngineState

_GC_CODES = (EV_GC_ACTIVE, EV_GC_BEGIN, EV_GC_END)
_GO_STATUS = (EV_GO_STATUS, EV_GO_STATUS_STACK)


@dataclass
class Carried:
    """What the sequential engine carries from one generation to the next."""

    gs: dict[int, GState] = field(default_factory=dict)
    ps: dict[int, PState] = field(default_factory=dict)
    ms: dict[int, list[int]] = field(default_factory=dict)
    tasks: dict[int, tuple[bytes, int]] = field(default_factory=dict)
    gc_seq: int = 0
    gc_state: int = GC_UNDETERMINED
    initial_gen: int = 0
    last: int = 0
    syncs: int = 0

    def engine(self, mask: bytes) -> _PythonEngine:
        """A sequential engine that starts from a copy of this state."""
        order = Ordering()
        order.gs = copy.deepcopy(self.gs)
        order.ps = copy.deepcopy(self.ps)
        order.ms = {m: list(v) for m, v in self.ms.items()}
        order.tasks = dict(self.tasks)
        order.gc_seq, order.gc_state, order.initial_gen = self.gc_seq, self.gc_state, self.initial_gen
        return _PythonEngine(mask, order, self.last, self.syncs)

    def values(self) -> EngineState:
        """As plain values: what the compiled engine's ``state`` gives and ``set_state`` takes."""
        return (
            [(g.id, g.status, g.seq_gen, g.seq, list(g.regions), list(g.ranges)) for g in self.gs.values()],
            [(p.id, p.status, p.seq_gen, p.seq, list(p.ranges)) for p in self.ps.values()],
            [(m, c[0], c[1]) for m, c in self.ms.items()],
            [(t, name, parent) for t, (name, parent) in self.tasks.items()],
            self.gc_seq,
            self.gc_state,
            self.initial_gen,
            self.last,
            self.syncs,
        )

    @classmethod
    def from_values(cls, v: EngineState) -> Carried:
        gs, ps, ms, tasks, gc_seq, gc_state, initial_gen, last, syncs = v
        out = cls(gc_seq=gc_seq, gc_state=gc_state, initial_gen=initial_gen, last=last, syncs=syncs)
        for gid, status, seq_gen, seq, regions, granges in gs:
            g = out.gs[gid] = GState(gid, status, seq_gen)
            g.seq, g.regions, g.ranges = seq, list(regions), list(granges)
        for pid, status, seq_gen, seq, pranges in ps:
            p = out.ps[pid] = PState(pid, status, seq_gen)
            p.seq, p.ranges = seq, list(pranges)
        out.ms = {m: [p, g] for m, p, g in ms}
        out.tasks = {t: (name, parent) for t, name, parent in tasks}
        return out

    @classmethod
    def of(cls, engine: _PythonEngine) -> Carried:
        o = engine._order
        return cls(
            o.gs,
            o.ps,
            o.ms,
            o.tasks,
            o.gc_seq,
            o.gc_state,
            o.initial_gen,
            engine.last,
            engine.syncs,
        )


class _Unk(int):
    """A thread's proc or goroutine left from the generation before, unknown
    to a fresh engine: NO_ID to it, but every decision on it is noted."""

    m: int
    cell: int
    reads: set[tuple[int, int]]

    def __new__(cls, m: int, cell: int, reads: set[tuple[int, int]]) -> _Unk:
        self = super().__new__(cls, NO_ID)
        self.m, self.cell, self.reads = m, cell, reads
        return self

    def _read(self) -> None:
        self.reads.add((self.m, self.cell))

    def __eq__(self, other: object) -> bool:
        self._read()
        return int(self) == other

    def __ne__(self, other: object) -> bool:
        self._read()
        return int(self) != other

    def __hash__(self) -> int:
        self._read()
        return NO_ID.__hash__()

    def __deepcopy__(self, memo: dict[int, Any]) -> _Unk:
        return self


@dataclass
class _First:
    """A key's first look-up in a fresh generation, which found nothing."""

    code: int
    args: list[int]
    accepted: bool = False
    event: Event | None = None


class _Watched(dict[Any, Any]):
    """A fresh engine's map: notes each key's first look-up (finding nothing)."""

    def __init__(self, order: FreshOrdering) -> None:
        super().__init__()
        self.order = order
        self.firsts: dict[Any, _First] = {}
        self.iterated = False

    def _look(self, k: Any) -> None:
        if k not in self.firsts and not dict.__contains__(self, k):
            self.firsts[k] = self.order.first()

    def get(self, k: Any, default: Any = None) -> Any:
        self._look(k)
        return dict.get(self, k, default)

    def __getitem__(self, k: Any) -> Any:
        self._look(k)
        return dict.__getitem__(self, k)

    def __contains__(self, k: object) -> bool:
        self._look(k)
        return dict.__contains__(self, k)

    def pop(self, k: Any, *default: Any) -> Any:
        self._look(k)
        return dict.pop(self, k, *default)

    def __setitem__(self, k: Any, v: Any) -> None:
        if k not in self.firsts:
            self.firsts[k] = self.order.first()
        dict.__setitem__(self, k, v)

    def items(self) -> Any:
        self.iterated = True
        return dict.items(self)


class FreshOrdering(Ordering):
    """The ordering engine of a generation decoded as if it were the first,
    noting where the state from before could have mattered."""

    def __init__(self) -> None:
        super().__init__()
        self.gs: _Watched = _Watched(self)
        self.ps: _Watched = _Watched(self)
        self.ms: _Watched = _Watched(self)
        self.tasks: _Watched = _Watched(self)
        self.reads: set[tuple[int, int]] = set()  # (thread, 0 proc / 1 goroutine) left from before, decided on
        self.gc_first: _First | None = None
        self.actives: dict[tuple[str, int], list[tuple[int, int]]] = {}  # ranges restated as active
        self.ranged: set[tuple[str, int]] = set()  # keys whose ranges began or ended
        self.early: set[tuple[str, int]] = set()  # ... before one was restated
        self.unmatched: dict[int, list[tuple[int, bytes]]] = {}  # region ends with no begin, per goroutine
        self.syscall_self: list[tuple[int, int]] = []  # (thread's goroutine, goroutine) a later generation compares
        self.syscall_other: dict[int, tuple[int, Event | None]] = {}  # thread -> (goroutine, its status event)
        self.own: set[int] = set()  # threads first met at their own event
        self.unknown_ctx: list[Event] = []  # events emitted with a context left from before
        self.task_ends: list[Event] = []
        # The compiled engine's: goroutines and tasks first met where they were
        # made (the twin has them in its firsts).
        self.created: set[int] = set()
        self.begun: set[int] = set()
        self._attempt: _First | None = None

    def first(self) -> _First:
        assert self._attempt is not None
        return self._attempt

    def advance(self, code: int, time: int, args: list[int], m: int, gen: Generation) -> bool:
        if m != NO_ID and not dict.__contains__(self.ms, m):
            dict.__setitem__(self.ms, m, [_Unk(m, 0, self.reads), _Unk(m, 1, self.reads)])
            self.ms.firsts.setdefault(m, _First(code, list(args)))
            self.own.add(m)
        attempt = self._attempt = _First(code, list(args))
        if code in _GC_CODES and self.gc_first is None:
            self.gc_first = attempt
        ok = super().advance(code, time, args, m, gen)
        if ok:
            attempt.accepted = True
            attempt.event = self.out[-1] if self.out else None
        return ok

    # The handlers whose outcome a later generation decides differently.

    def _go_status(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        gid, mid, status = a[0], signed(a[1]), a[2]
        fresh_thread = False
        if status == GO_SYSCALL and mid != NO_ID:
            if mid == ctx[0]:
                self.syscall_self.append((ctx[2], gid))
            else:
                fresh_thread = mid not in self.ms.firsts
        new = super()._go_status(code, t, a, gen, ctx)
        if fresh_thread:
            cells = dict.get(self.ms, mid)
            if cells is not None and type(cells[0]) is not _Unk:
                cells[0] = _Unk(mid, 0, self.reads)  # the thread's proc is the carried one's
            self.syscall_other[mid] = (gid, self.out[-1] if self.out else None)
        return new

    def _emit(
        self, code: int, time: int, ctx: Ctx, args: list[int], gen: Generation, extra: tuple[int, ...] = ()
    ) -> None:
        super()._emit(code, time, ctx, args, gen, extra)
        if type(ctx[1]) is _Unk or type(ctx[2]) is _Unk:
            self.unknown_ctx.append(self.out[-1])
        if code == EV_USER_TASK_END:
            self.task_ends.append(self.out[-1])

    def _range_op(self, kind: str, key: int) -> None:
        self.ranged.add((kind, key))

    def _active(self, kind: str, key: int, r: tuple[int, int]) -> None:
        if (kind, key) in self.ranged:
            self.early.add((kind, key))
        self.actives.setdefault((kind, key), []).append(r)

    def _sweep_begin(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        self._range_op("p", ctx[1])
        return super()._sweep_begin(code, t, a, gen, ctx)

    def _sweep_end(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        self._range_op("p", ctx[1])
        return super()._sweep_end(code, t, a, gen, ctx)

    def _go_range_begin(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        self._range_op("g", ctx[2])
        return super()._go_range_begin(code, t, a, gen, ctx)

    def _go_range_end(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        self._range_op("g", ctx[2])
        return super()._go_range_end(code, t, a, gen, ctx)

    def _sweep_active(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        ps = dict.get(self.ps, a[0])
        n = len(ps.ranges) if ps is not None else 0
        new = super()._sweep_active(code, t, a, gen, ctx)
        self._active("p", a[0], ps.ranges[n])  # type: ignore[union-attr]
        return new

    def _go_range_active(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        gs = dict.get(self.gs, a[0])
        n = len(gs.ranges) if gs is not None else 0
        new = super()._go_range_active(code, t, a, gen, ctx)
        self._active("g", a[0], gs.ranges[n])  # type: ignore[union-attr]
        return new

    def _region_end(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        s = dict.get(self.gs, ctx[2]) if type(ctx[2]) is not _Unk else None
        empty = s is not None and not s.regions
        new = super()._region_end(code, t, a, gen, ctx)
        if empty:
            name = gen.strings.get(a[1])
            assert name is not None
            self.unmatched.setdefault(ctx[2], []).append((a[0], name))
        return new


class _FreshEngine(_PythonEngine):
    """A pure-Python engine over a FreshOrdering that keeps every event it stamps."""

    def __init__(self, mask: bytes) -> None:
        super().__init__(mask, FreshOrdering())
        self.stamped: list[Event] = []

    def _stamp(self, ev: Event) -> Event:
        self.stamped.append(ev)
        return super()._stamp(ev)


class Fresh:
    """A generation ordered by a fresh engine: its notes (``order``) and
    events, or the error that stopped it. ``stamp`` and ``batches`` are the
    patch of what the notes do not cover: the times and the Sync."""

    def __init__(self, gen: Generation, order: FreshOrdering, error: TraceFormatError | None) -> None:
        self.gen, self.order, self.error = gen, order, error

    def stamp(self, last: int, syncs: int) -> int:
        """Times as an engine that stamped ``last`` before gives them, the
        Sync's count ``syncs``: the new last time."""
        raise NotImplementedError

    def patch_contexts(self, state: Carried) -> None:
        """The proc and goroutine of the events emitted with a thread's cells left from before."""
        _patch_contexts(self.order.unknown_ctx, state)

    def task_ends(self) -> list[tuple[int, tuple[int, ...]]]:
        """(task, (parent, derived string)) of every TaskEnd the fresh engine emitted, in order."""
        return [(ev.args[0], ev.extra) for ev in self.order.task_ends]

    def set_task_end(self, k: int, extra: tuple[int, int]) -> None:
        """The k-th TaskEnd's parent and derived string."""
        self.order.task_ends[k].extra = extra

    def batches(self) -> list[EventBatch]:
        """The events, patched, cut into batches as the sequential engine cuts them."""
        raise NotImplementedError


class _TwinFresh(Fresh):
    def __init__(
        self, gen: Generation, chunks: list[list[Event]], eng: _FreshEngine, error: TraceFormatError | None
    ) -> None:
        super().__init__(gen, eng._order, error)  # type: ignore[arg-type]  # a _FreshEngine's is a FreshOrdering
        self.chunks, self.stamped = chunks, eng.stamped

    def stamp(self, last: int, syncs: int) -> int:
        for i, ev in enumerate(self.stamped):
            floor = last + i + 1
            if ev.time >= floor:
                break
            ev.time = floor
        if self.stamped and self.stamped[0].code == SYNC_CODE:
            self.stamped[0].args = [syncs]
        return self.stamped[-1].time if self.stamped else last

    def batches(self) -> list[EventBatch]:
        return [EventBatch.from_events(self.gen, c) for c in self.chunks]


def fresh_generation(gen: Generation, mask: bytes) -> Fresh:
    """Orders a generation as if it were the trace's first, on the twin (any
    thread; the compiled engine's is carry_compiled.py's)."""
    eng = _FreshEngine(mask)
    chunks: list[list[Event]] = []
    try:
        chunks.extend(eng.event_lists(gen))
    except TraceFormatError as e:
        return _TwinFresh(gen, chunks, eng, e)
    return _TwinFresh(gen, chunks, eng, None)


def ordered_generation(
    gen: Generation, state: Carried, mask: bytes, *, compiled: bool | None = None
) -> tuple[list[EventBatch], Carried]:
    """The sequential decoder's batches of a generation, from the carried state."""
    gen.extra_strings[1:] = []
    fast = use_compiled(compiled)
    eng: _CompiledEngine | _PythonEngine
    if fast:
        eng = _CompiledEngine(mask)
        eng.set_state(state.values())
    else:
        eng = state.engine(mask)
    batches: list[EventBatch] = []
    try:
        batches.extend(eng.generation(gen))
    except TraceFormatError as e:
        e.partial = [ev for b in batches for ev in b] + (e.partial or [])  # as the sequential decoder's feed gives them
        raise
    return batches, Carried.from_values(eng.state()) if isinstance(eng, _CompiledEngine) else Carried.of(eng)


def carry(fresh: Fresh, state: Carried) -> tuple[list[EventBatch], Carried] | None:
    """The sequential decoder's batches of a generation a fresh engine ordered,
    and the state it ends in; None where the state from before could have
    changed the ordering (then ``ordered_generation``)."""
    if fresh.error is not None:
        return None
    gen, o = fresh.gen, fresh.order
    later = state.initial_gen != 0
    ms_out = _threads(o, state) if later else _plain_threads(o)
    if ms_out is None:
        return None
    if later:
        gs_out = _goroutines(o, state)
        ps_out = _procs(o, state) if gs_out is not None else None
        tasks_out = _tasks(o, state) if ps_out is not None else None
        gc = _gc(o, state) if tasks_out is not None else None
        if gs_out is None or ps_out is None or tasks_out is None or gc is None:
            return None
        fresh.patch_contexts(state)
        _patch_task_ends(o, state, gen, fresh)
    else:
        gs_out, ps_out, tasks_out = dict(o.gs), dict(o.ps), dict(o.tasks)
        gc = (o.gc_seq, o.gc_state)
        fresh.patch_contexts(state)
    syncs = state.syncs + 1
    last = fresh.stamp(state.last, syncs)
    out = Carried(
        gs_out,
        ps_out,
        ms_out,
        tasks_out,
        gc[0],
        gc[1],
        state.initial_gen or o.initial_gen,
        last,
        syncs,
    )
    return fresh.batches(), out


def _cell(state: Carried, m: int, i: int) -> int:
    cells = state.ms.get(m)
    return cells[i] if cells is not None else NO_ID


def _resolve(v: int, state: Carried) -> int:
    return _cell(state, v.m, v.cell) if isinstance(v, _Unk) else v


def _plain_threads(o: FreshOrdering) -> dict[int, list[int]]:
    return {m: [int(c[0]), int(c[1])] for m, c in dict.items(o.ms)}


def _threads(o: FreshOrdering, state: Carried) -> dict[int, list[int]] | None:
    if o.ms.iterated:
        return None
    for m, cell in o.reads:
        if _cell(state, m, cell) != NO_ID:
            return None
    for m in o.ms.firsts:
        if m in state.ms and m not in o.own and m not in o.syscall_other:
            return None  # another thread's look-up of it (a steal's victim), which the carried engine finds
    for m, (gid, ev) in o.syscall_other.items():
        if m not in state.ms:
            continue
        if state.ms[m][1] != gid:
            return None  # the carried engine finds the thread on another goroutine
        if ev is not None:
            ev.g = gid
    for g, gid in o.syscall_self:
        if _resolve(g, state) != gid:
            return None
    out = {m: list(c) for m, c in state.ms.items()}
    for m, c in dict.items(o.ms):
        out[m] = [_resolve(c[0], state), _resolve(c[1], state)]
    return out


def _goroutines(o: FreshOrdering, state: Carried) -> dict[int, GState] | None:
    out = dict(state.gs)
    for gid, first in o.gs.firsts.items():
        before = state.gs.get(gid)
        if type(gid) is _Unk:
            continue  # the goroutine left on a thread: its reads said whether it mattered
        if before is None:
            if first.code in _GO_STATUS and first.accepted:
                return None  # a status for a goroutine the trace has not seen: the carried engine's error
            if not first.accepted and gid not in o.created:
                # Looked for before it existed, and not made by a create of this generation: its status made it
                # afterwards, which the carried engine refuses as above.
                return None
        else:
            if first.code not in _GO_STATUS or not first.accepted or first.args[2] != before.status:
                return None
            ev = first.event
            assert ev is not None
            ev.extra = (GO_STATUS_STATE[before.status],)
        now = dict.get(o.gs, gid)
        if now is None:
            out.pop(gid, None)
            continue
        if before is not None:
            stack = list(before.regions)
            for r in o.unmatched.get(gid, ()):
                if stack:
                    if stack[-1] != r:
                        return None
                    stack.pop()
            now.regions[:0] = stack
            if not _same_ranges(o, "g", gid, before.ranges):
                return None
        elif o.actives.get(("g", gid)):
            return None
        out[gid] = now
    if o.created:
        if not o.created.isdisjoint(state.gs):
            return None  # the carried engine finds it exists already
        for gid in o.created.intersection(dict.keys(o.gs)):
            if o.actives.get(("g", gid)):
                return None
            out[gid] = dict.__getitem__(o.gs, gid)
    return out


def _same_ranges(o: FreshOrdering, kind: str, key: int, before: list[tuple[int, int]]) -> bool:
    """The ranges open before are the ones restated, in order, before any began or ended."""
    restated = o.actives.get((kind, key), [])
    return restated == before and (not before or (kind, key) not in o.early)


def _procs(o: FreshOrdering, state: Carried) -> dict[int, PState] | None:
    out = dict(state.ps)
    for pid, first in o.ps.firsts.items():
        if type(pid) is _Unk:
            continue
        before = state.ps.get(pid)
        ev = first.event
        if before is None:
            if first.code == EV_PROC_STATUS and first.accepted:
                assert ev is not None
                ev.extra = (ProcState.NOT_EXIST,)
            if o.actives.get(("p", pid)):
                return None
        else:
            if first.code != EV_PROC_STATUS or not first.accepted:
                return None
            status = first.args[1]
            if status == PROC_SYSCALL_ABANDONED and before.status == PROC_SYSCALL:
                return None  # the carried engine gives the event to the thread that still has the proc
            assert ev is not None
            if status == PROC_SYSCALL_ABANDONED and before.status == PROC_SYSCALL_ABANDONED:
                ev.extra = (ProcState.IDLE,)
            elif status == before.status:
                ev.extra = (PROC_STATUS_STATE[status],)
            else:
                return None
            if not _same_ranges(o, "p", pid, before.ranges):
                return None
        now = dict.get(o.ps, pid)
        if now is None:
            out.pop(pid, None)
        else:
            out[pid] = now
    return out


def _tasks(o: FreshOrdering, state: Carried) -> dict[int, tuple[bytes, int]] | None:
    if not o.begun.isdisjoint(state.tasks):
        return None  # a task begun again: the carried engine's conflict
    out = dict(state.tasks)
    for tid, first in o.tasks.firsts.items():
        if tid in state.tasks:
            if first.code != EV_USER_TASK_END:
                return None  # a task begun again: the carried engine's conflict
            out.pop(tid)
    out.update(dict.items(o.tasks))
    return out


def _gc(o: FreshOrdering, state: Carried) -> tuple[int, int] | None:
    first = o.gc_first
    if first is None:
        return state.gc_seq, state.gc_state
    if not first.accepted:
        return None
    seq = first.args[0]
    if state.gc_state != GC_UNDETERMINED:
        if seq != state.gc_seq + 1:
            return None
        want = GC_RUNNING if first.code == EV_GC_ACTIVE else GC_NOT_RUNNING if first.code == EV_GC_BEGIN else -1
        if state.gc_state != want:
            return None
        ev = first.event
        assert ev is not None
        if NO_ID in (ev.m, _resolve(ev.p, state), _resolve(ev.g, state)):
            return None  # the carried engine checks the context the fresh one did not
    elif first.code != EV_GC_BEGIN:
        return None
    return o.gc_seq, o.gc_state


def _patch_contexts(events: list[Event], state: Carried) -> None:
    for ev in events:
        if isinstance(ev.p, _Unk):
            ev.p = _cell(state, ev.p.m, 0)
        if isinstance(ev.g, _Unk):
            ev.g = _cell(state, ev.g.m, 1)


def _patch_task_ends(o: FreshOrdering, state: Carried, gen: Generation, fresh: Fresh) -> None:
    """Tasks begun before end with their type and parent; the generation's
    derived strings are interned again in event order, as the carried engine did."""
    ended = {tid for tid, first in o.tasks.firsts.items() if tid in state.tasks}
    if not ended:
        return
    old = list(gen.extra_strings)
    gen.extra_strings[1:] = []
    for k, (tid, extra) in enumerate(fresh.task_ends()):
        if tid in ended and extra == (NO_TASK, 0):
            name, parent = state.tasks[tid]
            ended.discard(tid)  # a second end finds nothing, as in the carried engine
            new = (parent, gen.add_extra_string(name))
        elif extra[1]:
            new = (extra[0], gen.add_extra_string(old[extra[1]]))
        else:
            continue
        if new != extra:
            fresh.set_task_end(k, new)


class Carrier:
    """The in-order step: takes each generation's fresh result in order and
    gives the sequential decoder's batches, carrying the state between them."""

    def __init__(self, mask: bytes, *, compiled: bool | None = None) -> None:
        self.mask = mask
        self.compiled = compiled  # which engine orders a generation again
        self.state = Carried()
        self.generations = 0
        self.reordered = 0  # generations the carry could not patch, ordered again

    def take(self, fresh: Fresh) -> list[EventBatch]:
        self.generations += 1
        done = carry(fresh, self.state)
        if done is None:
            self.reordered += 1
            batches, self.state = ordered_generation(fresh.gen, self.state, self.mask, compiled=self.compiled)
        else:
            batches, self.state = done
        return batches

    def final_sync(self) -> Event:
        """The Sync the stream's end makes."""
        eng = self.state.engine(self.mask)
        sync = eng.final_sync()
        self.state.last, self.state.syncs = eng.last, eng.syncs
        return sync
