"""The ordering engine: goroutine, proc and thread state machines that decide
when an event may happen.

Each thread's events are in order, but across threads only the partial
order that sequence numbers and states express holds. An event is ready
when its preconditions are met (the proc it starts is idle, the goroutine
it unblocks is waiting and this is the next sequence number, ...). A
handler either accepts the event, updates the states and emits it (maybe
with events it implies), returns None when it is not ready yet, or raises
when the trace contradicts itself.
"""

from __future__ import annotations

from collections.abc import Callable

from livetrace._errors import TraceFormatError
from livetrace._trace.model.events import (
    NEW_STACK_ARG,
    STACK_ARG,
    STRING_ARGS,
    GO_RUNNABLE,
    GO_RUNNING,
    GO_STATUS_STATE,
    GO_SYSCALL,
    GO_WAITING,
    NO_TASK,
    PROC_IDLE,
    PROC_RUNNING,
    PROC_STATUS_STATE,
    PROC_SYSCALL,
    PROC_SYSCALL_ABANDONED,
    Event,
    GoState,
    ProcState,
)
from livetrace._trace.modern.generation import Generation
from livetrace._trace.spec.modern import (
    EV_GC_ACTIVE,
    EV_GC_BEGIN,
    EV_GC_END,
    EV_GC_MARK_ASSIST_ACTIVE,
    EV_GC_MARK_ASSIST_BEGIN,
    EV_GC_MARK_ASSIST_END,
    EV_GC_SWEEP_ACTIVE,
    EV_GC_SWEEP_BEGIN,
    EV_GC_SWEEP_END,
    EV_GO_BLOCK,
    EV_GO_CREATE,
    EV_GO_CREATE_BLOCKED,
    EV_GO_CREATE_SYSCALL,
    EV_GO_DESTROY,
    EV_GO_DESTROY_SYSCALL,
    EV_GO_LABEL,
    EV_GO_START,
    EV_GO_STATUS,
    EV_GO_STATUS_STACK,
    EV_GO_STOP,
    EV_GO_SWITCH,
    EV_GO_SWITCH_DESTROY,
    EV_GO_SYSCALL_BEGIN,
    EV_GO_SYSCALL_END,
    EV_GO_SYSCALL_END_BLOCKED,
    EV_GO_UNBLOCK,
    EV_HEAP_ALLOC,
    EV_HEAP_GOAL,
    EV_PROC_START,
    EV_PROC_STATUS,
    EV_PROC_STEAL,
    EV_PROC_STOP,
    EV_PROCS_CHANGE,
    EV_STW_BEGIN,
    EV_STW_END,
    EV_USER_LOG,
    EV_USER_REGION_BEGIN,
    EV_USER_REGION_END,
    EV_USER_TASK_BEGIN,
    EV_USER_TASK_END,
    EXPERIMENT_ALLOC_FREE,
    SPECS,
    range_begins,
)

NO_ID = -1
MUST_NOT, MAY, MUST = 0, 1, 2
USER_GO = (MUST, MUST, MUST)  # thread, proc, goroutine

# The event that opens the range a given event belongs to.
RANGE_START = range_begins()
# The experimental events of the alloc/free experiment, all alike to the engine.
_ALLOC_FREE = tuple(s.code for s in SPECS if s is not None and s.experiment == EXPERIMENT_ALLOC_FREE)

_GO_STATUS_NAMES = ["Bad", "Runnable", "Running", "Syscall", "Waiting"]
_PROC_STATUS_NAMES = ["Bad", "Running", "Idle", "Syscall", "SyscallAbandoned"]

Ctx = tuple[int, int, int]  # thread, proc, goroutine


class _G:
    __slots__ = ("id", "status", "seq_gen", "seq", "regions", "ranges")

    def __init__(self, gid: int, status: int, gen: int) -> None:
        self.id, self.status, self.seq_gen, self.seq = gid, status, gen, 0
        self.regions: list[tuple[int, bytes]] = []
        self.ranges: list[tuple[int, int]] = []


class _P:
    __slots__ = ("id", "status", "seq_gen", "seq", "ranges")

    def __init__(self, pid: int, status: int, gen: int) -> None:
        self.id, self.status, self.seq_gen, self.seq = pid, status, gen, 0
        self.ranges: list[tuple[int, int]] = []


def _name(code: int) -> str:
    spec = SPECS[code]
    return spec.name if spec else f"Invalid({code})"


class OrderingError(TraceFormatError):
    """The trace's events contradict each other."""


def _check(ctx: Ctx, reqs: tuple[int, int, int]) -> None:
    """Raise unless the context has (or lacks) a thread, proc and goroutine
    as the event requires."""
    if (ctx[0] == NO_ID, ctx[1] == NO_ID, ctx[2] == NO_ID) in _ALLOWED[reqs]:
        return
    for have, req, what in zip(ctx, reqs, ("a thread", "a proc", "a goroutine")):
        if req == MUST and have == NO_ID:
            raise OrderingError(f"expected {what} but didn't have one")
        if req == MUST_NOT and have != NO_ID:
            raise OrderingError(f"expected no {what.split()[1]} but had one")


def _allowed(reqs: tuple[int, int, int]) -> frozenset[tuple[bool, bool, bool]]:
    """Which (no thread, no proc, no goroutine) combinations satisfy reqs."""
    ok = (lambda missing, req: not (req == MUST and missing) and not (req == MUST_NOT and not missing))
    return frozenset((a, b, c) for a in (False, True) for b in (False, True) for c in (False, True)
                     if ok(a, reqs[0]) and ok(b, reqs[1]) and ok(c, reqs[2]))


_ALLOWED = {r: _allowed(r) for r in [(x, y, z) for x in range(3) for y in range(3) for z in range(3)]}


def _begin_range(ranges: list[tuple[int, int]], key: tuple[int, int]) -> None:
    if key in ranges:
        raise OrderingError(f"discovered event already in-flight for when starting event {_name(key[0])}")
    ranges.append(key)


def _active_range(ranges: list[tuple[int, int]], key: tuple[int, int], initial: bool) -> None:
    if initial:
        if key in ranges:
            raise OrderingError(f"found named active range already in first gen: {key}")
        ranges.append(key)
    elif key not in ranges:
        raise OrderingError(f"resource is missing active range: {_name(key[0])} {ranges}")


def _end_range(ranges: list[tuple[int, int]], code: int) -> int:
    start = RANGE_START[code]
    for i, (typ, desc) in enumerate(ranges):
        if typ == start:
            ranges[i] = ranges[-1]
            ranges.pop()
            return desc
    raise OrderingError(f"tried to end event {_name(start)}, but not in-flight")


class Ordering:
    """State that persists across generations, and the rules that use it."""

    def __init__(self) -> None:
        self.gs: dict[int, _G] = {}
        self.ps: dict[int, _P] = {}
        self.ms: dict[int, list[int]] = {}  # thread -> [proc, goroutine]
        self.tasks: dict[int, tuple[bytes, int]] = {}  # id -> type, parent
        self.gc_seq = 0
        self.gc_state = 0  # 0 undetermined, 1 not running, 2 running
        self.initial_gen = 0
        self.out: list[Event] = []
        self._dispatch: list[Callable[..., Ctx | None] | None] = [None] * 256
        for c, fn in self.handlers().items():
            self._dispatch[c] = fn

    def handlers(self) -> dict[int, Callable[..., Ctx | None]]:
        """The rule for each code that may stand in a thread's event batch."""
        by_codes: list[tuple[tuple[int, ...], Callable[..., Ctx | None]]] = [
            ((EV_PROCS_CHANGE, EV_GO_LABEL, EV_USER_LOG), self._annotation), ((EV_PROC_START,), self._proc_start),
            ((EV_PROC_STOP,), self._proc_stop), ((EV_PROC_STEAL,), self._proc_steal),
            ((EV_PROC_STATUS,), self._proc_status), ((EV_GO_CREATE, EV_GO_CREATE_BLOCKED), self._go_create),
            ((EV_GO_CREATE_SYSCALL,), self._go_create_syscall), ((EV_GO_START,), self._go_start),
            ((EV_GO_DESTROY, EV_GO_STOP, EV_GO_BLOCK), self._go_stop_exec),
            ((EV_GO_DESTROY_SYSCALL,), self._go_destroy_syscall), ((EV_GO_UNBLOCK,), self._go_unblock),
            ((EV_GO_SYSCALL_BEGIN,), self._syscall_begin), ((EV_GO_SYSCALL_END,), self._syscall_end),
            ((EV_GO_SYSCALL_END_BLOCKED,), self._syscall_end_blocked),
            ((EV_GO_STATUS, EV_GO_STATUS_STACK), self._go_status),
            ((EV_STW_BEGIN, EV_GC_MARK_ASSIST_BEGIN), self._go_range_begin),
            ((EV_STW_END, EV_GC_MARK_ASSIST_END), self._go_range_end), ((EV_GC_ACTIVE,), self._gc_active),
            ((EV_GC_BEGIN,), self._gc_begin), ((EV_GC_END,), self._gc_end),
            ((EV_GC_SWEEP_ACTIVE,), self._sweep_active), ((EV_GC_SWEEP_BEGIN,), self._sweep_begin),
            ((EV_GC_SWEEP_END,), self._sweep_end), ((EV_GC_MARK_ASSIST_ACTIVE,), self._go_range_active),
            ((EV_HEAP_ALLOC, EV_HEAP_GOAL), self._heap_metric), ((EV_USER_TASK_BEGIN,), self._task_begin),
            ((EV_USER_TASK_END,), self._task_end), ((EV_USER_REGION_BEGIN,), self._region_begin),
            ((EV_USER_REGION_END,), self._region_end), ((EV_GO_SWITCH, EV_GO_SWITCH_DESTROY), self._go_switch),
            (_ALLOC_FREE, self._alloc_free),
        ]
        return {c: fn for codes, fn in by_codes for c in codes}

    def advance(self, code: int, time: int, args: list[int], m: int, gen: Generation) -> bool:
        """Try to make the event happen now; True if it did."""
        if self.initial_gen == 0:
            self.initial_gen = gen.gen
        if m == NO_ID:
            ctx: Ctx = (NO_ID, NO_ID, NO_ID)
            ms = None
        else:
            ms = self.ms.get(m)
            if ms is None:
                ms = self.ms[m] = [NO_ID, NO_ID]
            ctx = (m, ms[0], ms[1])
        fn = self._dispatch[code]
        if fn is None:
            raise OrderingError(f"bad event type found while ordering: {code}")
        try:
            new = fn(code, time, args, gen, ctx)
        except OrderingError as e:
            if e.generation is not None:
                raise
            raise OrderingError(e.reason, generation=gen.gen) from None
        if new is None:
            return False
        if ms is not None:
            ms[0], ms[1] = new[1], new[2]
        return True

    def _emit(self, code: int, time: int, ctx: Ctx, args: list[int], gen: Generation, extra: tuple[int, ...] = ()) -> None:
        ev = Event(code, time, ctx[0], ctx[1], ctx[2], args, gen, extra)
        check_ids(ev, gen)
        self.out.append(ev)

    # -- procs --

    def _proc_status(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        pid, status = a[0], a[1]
        if status >= len(PROC_STATUS_STATE):
            raise OrderingError(f"invalid status for proc {pid}: {status}")
        old = PROC_STATUS_STATE[status]
        s = self.ps.get(pid)
        if s is not None:
            if status == PROC_SYSCALL_ABANDONED and s.status == PROC_SYSCALL:
                old, a[1] = ProcState.RUNNING, PROC_SYSCALL
            elif status == PROC_SYSCALL_ABANDONED and s.status == PROC_SYSCALL_ABANDONED:
                old = ProcState.IDLE
            elif s.status != status:
                raise OrderingError(f"inconsistent status for proc {pid}: old {_PROC_STATUS_NAMES[s.status]} "
                                    f"vs. new {_PROC_STATUS_NAMES[status]}")
            s.seq_gen, s.seq = gen.gen, 0
        else:
            self.ps[pid] = _P(pid, status, gen.gen)
            old = ProcState.UNDETERMINED if gen.gen == self.initial_gen else ProcState.NOT_EXIST
        m, p, g = ctx
        new = (m, pid, g) if status in (PROC_RUNNING, PROC_SYSCALL) else ctx
        if status == PROC_SYSCALL_ABANDONED and old == ProcState.RUNNING:
            # The proc is about to be stolen: the event belongs to the
            # thread that still has it.
            found = False
            for mid, (mp, mg) in self.ms.items():
                if mp == pid:
                    ctx, found = (mid, pid, mg), True
            if not found:
                raise OrderingError(f"failed to find sched context for proc {pid} that's about to be stolen")
        self._emit(code, t, ctx, a, gen, (old,))
        return new

    def _proc_start(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        pid = a[0]
        s = self.ps.get(pid)
        if s is None or s.status != PROC_IDLE or not (s.seq_gen == gen.gen and a[1] == s.seq + 1) or ctx[1] != NO_ID:
            return None
        _check(ctx, (MUST, MUST_NOT, MAY))
        s.status, s.seq_gen, s.seq = PROC_RUNNING, gen.gen, a[1]
        self._emit(code, t, ctx, a, gen)
        return (ctx[0], pid, ctx[2])

    def _proc_stop(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        s = self.ps.get(ctx[1])
        if s is None:
            raise OrderingError(f"event {_name(code)} for proc ({ctx[1]}) that doesn't exist")
        if s.status not in (PROC_RUNNING, PROC_SYSCALL):
            raise OrderingError(f"{_name(code)} event for proc that's not Running or Syscall")
        _check(ctx, (MUST, MUST, MAY))
        s.status = PROC_IDLE
        self._emit(code, t, ctx, a, gen)
        return (ctx[0], NO_ID, ctx[2])

    def _proc_steal(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        pid = a[0]
        s = self.ps.get(pid)
        if (s is None or s.status not in (PROC_SYSCALL, PROC_SYSCALL_ABANDONED)
                or not (s.seq_gen == gen.gen and a[1] == s.seq + 1)):
            return None
        _check(ctx, (MUST, MAY, MAY))
        old = s.status
        s.status, s.seq_gen, s.seq = PROC_IDLE, gen.gen, a[1]
        if old == PROC_SYSCALL_ABANDONED:
            self._emit(code, t, ctx, a, gen, (old,))
            return ctx
        victim = _signed(a[2])
        if victim == ctx[0]:
            if ctx[1] != pid:
                raise OrderingError(f"tried to self-steal proc {pid} (thread {victim}), but got proc {ctx[1]} instead")
            self._emit(code, t, ctx, a, gen, (old,))
            return (ctx[0], NO_ID, ctx[2])
        vm = self.ms.get(victim)
        if vm is None:
            raise OrderingError(f"stole proc from non-existent thread {victim}")
        if vm[0] != pid:
            raise OrderingError(f"tried to steal proc {pid} from thread {victim}, but got proc {vm[0]} instead")
        vm[0] = NO_ID
        self._emit(code, t, ctx, a, gen, (old,))
        return ctx

    # -- goroutines --

    def _go_status(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        gid, mid, status = a[0], _signed(a[1]), a[2]
        if status >= len(GO_STATUS_STATE):
            raise OrderingError(f"invalid status for goroutine {gid}: {status}")
        old = GO_STATUS_STATE[status]
        s = self.gs.get(gid)
        if s is not None:
            if s.status != status:
                raise OrderingError(f"inconsistent status for goroutine {gid}: old {_GO_STATUS_NAMES[s.status]} "
                                    f"vs. new {_GO_STATUS_NAMES[status]}")
            s.seq_gen, s.seq = gen.gen, 0
        elif gen.gen == self.initial_gen:
            self.gs[gid] = _G(gid, status, gen.gen)
            old = GoState.UNDETERMINED
        else:
            raise OrderingError(f"found goroutine status for new goroutine after the first generation: "
                                f"id={gid} status={_GO_STATUS_NAMES[status]}")
        m, p, g = ctx
        new = ctx
        if status == GO_RUNNING:
            new = (m, p, gid)
        elif status == GO_SYSCALL:
            if mid == NO_ID:
                raise OrderingError(f"found goroutine {gid} in syscall without a thread")
            if mid == m:
                if gen.gen != self.initial_gen and g != gid:
                    raise OrderingError(f"inconsistent thread for syscalling goroutine {gid}: thread has goroutine {g}")
                new = (m, p, gid)
            else:
                ms = self.ms.get(mid)
                if ms is not None:
                    if ms[1] != gid:
                        raise OrderingError(f"inconsistent thread for syscalling goroutine {gid}: "
                                            f"thread has goroutine {ms[1]}")
                    g = ms[1]
                else:
                    self.ms[mid] = [NO_ID, gid]
                ctx = (mid, p, g)
        self._emit(code, t, ctx, a, gen, (old,))
        return new

    def _go_create(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        _check(ctx, (MUST, MUST, MAY))
        s = self.gs.get(ctx[2])
        if s is not None and s.status != GO_RUNNING:
            raise OrderingError(f"{_name(code)} event for goroutine that's not Running")
        newg = a[0]
        if newg in self.gs:
            raise OrderingError(f"tried to create goroutine ({newg}) that already exists")
        self.gs[newg] = _G(newg, GO_WAITING if code == EV_GO_CREATE_BLOCKED else GO_RUNNABLE, gen.gen)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _running_g(self, code: int, ctx: Ctx, want: int = GO_RUNNING) -> _G:
        s = self.gs.get(ctx[2])
        if s is None:
            raise OrderingError(f"event {_name(code)} for goroutine ({ctx[2]}) that doesn't exist")
        if s.status != want:
            raise OrderingError(f"{_name(code)} event for goroutine that's not "
                                f"{'Running' if want == GO_RUNNING else 'Syscall'}")
        return s

    def _go_stop_exec(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        _check(ctx, USER_GO)
        s = self._running_g(code, ctx)
        if code == EV_GO_DESTROY:
            del self.gs[ctx[2]]
        else:
            s.status = GO_RUNNABLE if code == EV_GO_STOP else GO_WAITING
        self._emit(code, t, ctx, a, gen)
        return (ctx[0], ctx[1], NO_ID)

    def _go_start(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        gid = a[0]
        s = self.gs.get(gid)
        if s is None or s.status != GO_RUNNABLE or not (s.seq_gen == gen.gen and a[1] == s.seq + 1):
            return None
        _check(ctx, (MUST, MUST, MUST_NOT))
        s.status, s.seq_gen, s.seq = GO_RUNNING, gen.gen, a[1]
        self._emit(code, t, ctx, a, gen)
        return (ctx[0], ctx[1], gid)

    def _go_unblock(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        s = self.gs.get(a[0])
        if s is None or s.status != GO_WAITING or not (s.seq_gen == gen.gen and a[1] == s.seq + 1):
            return None
        s.status, s.seq_gen, s.seq = GO_RUNNABLE, gen.gen, a[1]
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _go_switch(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        _check(ctx, USER_GO)
        cur = self._running_g(code, ctx)
        nextg = a[0]
        nxt = self.gs.get(nextg)
        if nxt is None or nxt.status != GO_WAITING or not (nxt.seq_gen == gen.gen and a[1] == nxt.seq + 1):
            return None
        self._emit(code, t, ctx, a, gen)
        if code == EV_GO_SWITCH:
            cur.status = GO_WAITING
            self._emit(EV_GO_BLOCK, t, ctx, [0, 0], gen)  # the switched-from goroutine blocks
        else:
            del self.gs[ctx[2]]
            self._emit(EV_GO_DESTROY, t, ctx, [], gen)
        nxt.status, nxt.seq_gen, nxt.seq = GO_RUNNING, gen.gen, a[1]
        self._emit(EV_GO_START, t, (ctx[0], ctx[1], NO_ID), [nextg, a[1]], gen)
        return (ctx[0], ctx[1], nextg)

    def _syscall_begin(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        _check(ctx, USER_GO)
        s = self._running_g(code, ctx)
        s.status = GO_SYSCALL
        ps = self.ps.get(ctx[1])
        if ps is None:
            raise OrderingError(f"uninitialized proc {ctx[1]} found during {_name(code)}")
        ps.status = PROC_SYSCALL
        if not (ps.seq_gen == gen.gen and a[0] == ps.seq + 1):
            raise OrderingError(f"failed to advance {_name(code)}: can't make sequence: {ps.seq} (gen={ps.seq_gen}) "
                                f"-> {a[0]} (gen={gen.gen})")
        ps.seq = a[0]
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _syscall_end(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        _check(ctx, USER_GO)
        s = self.gs.get(ctx[2])
        if s is None:
            raise OrderingError(f"event {_name(code)} for goroutine ({ctx[2]}) that doesn't exist")
        if s.status != GO_SYSCALL:
            raise OrderingError(f"{_name(code)} event for goroutine that's not Running")
        s.status = GO_RUNNING
        ps = self.ps.get(ctx[1])
        if ps is None:
            raise OrderingError(f"uninitialized proc {ctx[1]} found during {_name(code)}")
        if ps.status != PROC_SYSCALL:
            raise OrderingError(f"expected proc {ctx[1]} in state Syscall, but got {_PROC_STATUS_NAMES[ps.status]} instead")
        ps.status = PROC_RUNNING
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _syscall_end_blocked(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        if ctx[1] != NO_ID:
            ps = self.ps.get(ctx[1])
            if ps is None:
                raise OrderingError(f"uninitialized proc {ctx[1]} found during {_name(code)}")
            if ps.status == PROC_SYSCALL:
                return None  # the proc must be stolen first
        _check(ctx, (MUST, MAY, MUST))
        s = self.gs.get(ctx[2])
        if s is None:
            raise OrderingError(f"event {_name(code)} for goroutine ({ctx[2]}) that doesn't exist")
        if s.status != GO_SYSCALL:
            raise OrderingError(f"{_name(code)} event for goroutine that's not Running")
        s.status = GO_RUNNABLE
        self._emit(code, t, ctx, a, gen)
        return (ctx[0], ctx[1], NO_ID)

    def _go_create_syscall(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        _check(ctx, (MUST, MAY, MUST_NOT))
        newg = a[0]
        if newg in self.gs:
            raise OrderingError(f"tried to create goroutine ({newg}) in syscall that already exists")
        self.gs[newg] = _G(newg, GO_SYSCALL, gen.gen)
        self._emit(code, t, ctx, a, gen)
        return (ctx[0], ctx[1], newg)

    def _go_destroy_syscall(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        _check(ctx, (MUST, MAY, MUST))
        s = self.gs.get(ctx[2])
        if s is None:
            raise OrderingError(f"event {_name(code)} for goroutine ({ctx[2]}) that doesn't exist")
        if s.status != GO_SYSCALL:
            raise OrderingError(f"{_name(code)} event for goroutine that's not Syscall")
        del self.gs[ctx[2]]
        new = (ctx[0], ctx[1], NO_ID)
        if ctx[1] != NO_ID:
            ps = self.ps.get(ctx[1])
            if ps is None:
                raise OrderingError(f"found invalid proc {ctx[1]} during {_name(code)}")
            if ps.status != PROC_SYSCALL:
                raise OrderingError(f"proc {ctx[1]} in unexpected state {_PROC_STATUS_NAMES[ps.status]} "
                                    f"during {_name(code)}")
            ps.status = PROC_SYSCALL_ABANDONED
            new = (ctx[0], NO_ID, NO_ID)
            # The proc this thread held is lost to it: say so as a steal.
            self._emit(EV_PROC_STEAL, t, ctx, [ctx[1], 0, 0], gen, (PROC_SYSCALL,))
        self._emit(code, t, ctx, a, gen)
        return new

    # -- user annotations --

    def _task_begin(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        tid = a[0]
        if tid in self.tasks:
            raise OrderingError(f"task ID conflict: {tid}")
        if a[1] == 0:  # the background task is no parent
            a[1] = NO_TASK
        name = gen.strings.get(a[2])
        if name is None:
            raise OrderingError(f"invalid string ID {a[2]} for {code} event")
        self.tasks[tid] = (name, a[1])
        _check(ctx, USER_GO)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _task_end(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        task = self.tasks.pop(a[0], None)
        if task is not None:
            extra = (task[1], gen.add_extra_string(task[0]))
        else:
            extra = (NO_TASK, 0)
        _check(ctx, USER_GO)
        self._emit(code, t, ctx, a, gen, extra)
        return ctx

    def _region(self, code: int, a: list[int], gen: Generation, ctx: Ctx) -> tuple[_G, tuple[int, bytes]]:
        _check(ctx, USER_GO)
        name = gen.strings.get(a[1])
        if name is None:
            raise OrderingError(f"invalid string ID {a[1]} for {code} event")
        s = self.gs.get(ctx[2])
        if s is None:
            raise OrderingError(f"encountered Ev{_name(code)} without known state for current goroutine {ctx[2]}")
        return s, (a[0], name)

    def _region_begin(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        s, r = self._region(code, a, gen, ctx)
        s.regions.append(r)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _region_end(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        s, r = self._region(code, a, gen, ctx)
        # Regions that began before the trace did end without a begin.
        if s.regions:
            if s.regions[-1] != r:
                raise OrderingError(f"misuse of region in goroutine {s.id}: region end {r} when the inner-most "
                                    f"active region start event is {s.regions[-1]}")
            s.regions.pop()
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _annotation(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        _check(ctx, USER_GO)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _heap_metric(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        _check(ctx, (MUST, MUST, MAY))
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _alloc_free(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        _check(ctx, (MUST, MAY, MAY))
        self._emit(code, t, ctx, a, gen)
        return ctx

    # -- GC and ranges --

    def _gc_active(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        seq = a[0]
        if gen.gen == self.initial_gen:
            if self.gc_state != 0:
                raise OrderingError("GCActive in the first generation isn't first GC event")
            self.gc_seq, self.gc_state = seq, 2
            self._emit(code, t, ctx, a, gen)
            return ctx
        if seq != self.gc_seq + 1:
            return None
        if self.gc_state != 2:
            raise OrderingError("encountered GCActive while GC was not in progress")
        self.gc_seq = seq
        _check(ctx, USER_GO)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _gc_begin(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        seq = a[0]
        if self.gc_state == 0:
            self.gc_seq, self.gc_state = seq, 2
            self._emit(code, t, ctx, a, gen)
            return ctx
        if seq != self.gc_seq + 1:
            return None
        if self.gc_state == 2:
            raise OrderingError("encountered GCBegin while GC was already in progress")
        self.gc_seq, self.gc_state = seq, 2
        _check(ctx, USER_GO)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _gc_end(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        seq = a[0]
        if seq != self.gc_seq + 1:
            return None
        if self.gc_state == 1:
            raise OrderingError("encountered GCEnd when GC was not in progress")
        if self.gc_state == 0:
            raise OrderingError("encountered GCEnd when GC was in an undetermined state")
        self.gc_seq, self.gc_state = seq, 1
        _check(ctx, USER_GO)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _sweep_begin(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        _check(ctx, (MUST, MUST, MAY))
        _begin_range(self.ps[ctx[1]].ranges, (code, 0))
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _sweep_active(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        ps = self.ps.get(a[0])
        if ps is None:
            raise OrderingError(f"encountered GCSweepActive for unknown proc {a[0]}")
        _active_range(ps.ranges, (RANGE_START[code], 0), gen.gen == self.initial_gen)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _sweep_end(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        _check(ctx, (MUST, MUST, MAY))
        _end_range(self.ps[ctx[1]].ranges, code)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _go_range_begin(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        _check(ctx, USER_GO)
        s = self.gs.get(ctx[2])
        if s is None:
            raise OrderingError(f"encountered event of type {code} without known state for current goroutine {ctx[2]}")
        _begin_range(s.ranges, (code, a[0] if code == EV_STW_BEGIN else 0))
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _go_range_active(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        s = self.gs.get(a[0])
        if s is None:
            raise OrderingError(f"uninitialized goroutine {a[0]} found during {_name(code)}")
        _active_range(s.ranges, (RANGE_START[code], 0), gen.gen == self.initial_gen)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _go_range_end(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        _check(ctx, USER_GO)
        s = self.gs.get(ctx[2])
        if s is None:
            raise OrderingError(f"encountered event of type {code} without known state for current goroutine {ctx[2]}")
        desc = _end_range(s.ranges, code)
        if code == EV_STW_END:  # the end of a stop-the-world names what its begin named
            a = [desc]
        self._emit(code, t, ctx, a, gen)
        return ctx


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def check_ids(ev: Event, gen: Generation) -> None:
    """The stacks and strings an event names must be in its generation."""
    code, args = ev.code, ev.args
    i = STACK_ARG[code]
    if i >= 0 and args[i] not in gen.stacks:
        raise TraceFormatError(f"found invalid stack ID {args[i]} for event {SPECS[code].name}",  # type: ignore[union-attr]
                               generation=gen.gen)
    i = NEW_STACK_ARG[code]
    if i >= 0 and args[i] not in gen.stacks:
        raise TraceFormatError(f"found invalid stack ID {args[i]} for event {SPECS[code].name}",  # type: ignore[union-attr]
                               generation=gen.gen)
    for j in STRING_ARGS.get(code, ()):
        if args[j] not in gen.strings:
            raise TraceFormatError(f"found invalid string ID {args[j]} for event {SPECS[code].name}",  # type: ignore[union-attr]
                                   generation=gen.gen)
