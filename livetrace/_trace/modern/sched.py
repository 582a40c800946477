"""The scheduling rules of the ordering engine: the goroutine, proc and thread state machines, the bulk of it."""

from __future__ import annotations

from livetrace._trace.model.events import (
    GO_RUNNABLE,
    GO_RUNNING,
    GO_STATUS_STATE,
    GO_SYSCALL,
    GO_WAITING,
    PROC_IDLE,
    PROC_RUNNING,
    PROC_STATUS_STATE,
    PROC_SYSCALL,
    PROC_SYSCALL_ABANDONED,
    GoState,
    ProcState,
)
from livetrace._trace.modern.generation import Generation
from livetrace._trace.modern.state import (
    GO_STATUS_NAMES,
    MAY,
    MUST,
    MUST_NOT,
    NO_ID,
    PROC_STATUS_NAMES,
    USER_GO,
    Ctx,
    GState,
    OrderingError,
    OrderState,
    PState,
    check_ctx,
    code_name,
    signed,
)
from livetrace._trace.spec.modern import (
    EV_GO_BLOCK,
    EV_GO_CREATE_BLOCKED,
    EV_GO_DESTROY,
    EV_GO_START,
    EV_GO_STOP,
    EV_GO_SWITCH,
    EV_PROC_STEAL,
)


class SchedRules(OrderState):
    """Procs, goroutines and threads: who runs what, and when a start,
    unblock or steal may happen (its state and sequence number allow it)."""

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
                raise OrderingError(
                    f"inconsistent status for proc {pid}: old {PROC_STATUS_NAMES[s.status]} "
                    f"vs. new {PROC_STATUS_NAMES[status]}"
                )
            s.seq_gen, s.seq = gen.gen, 0
        else:
            self.ps[pid] = PState(pid, status, gen.gen)
            old = ProcState.UNDETERMINED if gen.gen == self.initial_gen else ProcState.NOT_EXIST
        m, _, g = ctx
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
        check_ctx(ctx, (MUST, MUST_NOT, MAY))
        s.status, s.seq_gen, s.seq = PROC_RUNNING, gen.gen, a[1]
        self._emit(code, t, ctx, a, gen)
        return (ctx[0], pid, ctx[2])

    def _proc_stop(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        s = self.ps.get(ctx[1])
        if s is None:
            raise OrderingError(f"event {code_name(code)} for proc ({ctx[1]}) that doesn't exist")
        if s.status not in (PROC_RUNNING, PROC_SYSCALL):
            raise OrderingError(f"{code_name(code)} event for proc that's not Running or Syscall")
        check_ctx(ctx, (MUST, MUST, MAY))
        s.status = PROC_IDLE
        self._emit(code, t, ctx, a, gen)
        return (ctx[0], NO_ID, ctx[2])

    def _proc_steal(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        pid = a[0]
        s = self.ps.get(pid)
        if (
            s is None
            or s.status not in (PROC_SYSCALL, PROC_SYSCALL_ABANDONED)
            or not (s.seq_gen == gen.gen and a[1] == s.seq + 1)
        ):
            return None
        check_ctx(ctx, (MUST, MAY, MAY))
        old = s.status
        s.status, s.seq_gen, s.seq = PROC_IDLE, gen.gen, a[1]
        if old == PROC_SYSCALL_ABANDONED:
            self._emit(code, t, ctx, a, gen, (old,))
            return ctx
        victim = signed(a[2])
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
        gid, mid, status = a[0], signed(a[1]), a[2]
        if status >= len(GO_STATUS_STATE):
            raise OrderingError(f"invalid status for goroutine {gid}: {status}")
        old = GO_STATUS_STATE[status]
        s = self.gs.get(gid)
        if s is not None:
            if s.status != status:
                raise OrderingError(
                    f"inconsistent status for goroutine {gid}: old {GO_STATUS_NAMES[s.status]} "
                    f"vs. new {GO_STATUS_NAMES[status]}"
                )
            s.seq_gen, s.seq = gen.gen, 0
        elif gen.gen == self.initial_gen:
            self.gs[gid] = GState(gid, status, gen.gen)
            old = GoState.UNDETERMINED
        else:
            raise OrderingError(
                f"found goroutine status for new goroutine after the first generation: "
                f"id={gid} status={GO_STATUS_NAMES[status]}"
            )
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
                        raise OrderingError(
                            f"inconsistent thread for syscalling goroutine {gid}: thread has goroutine {ms[1]}"
                        )
                    g = ms[1]
                else:
                    self.ms[mid] = [NO_ID, gid]
                ctx = (mid, p, g)
        self._emit(code, t, ctx, a, gen, (old,))
        return new

    def _go_create(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        check_ctx(ctx, (MUST, MUST, MAY))
        s = self.gs.get(ctx[2])
        if s is not None and s.status != GO_RUNNING:
            raise OrderingError(f"{code_name(code)} event for goroutine that's not Running")
        newg = a[0]
        if newg in self.gs:
            raise OrderingError(f"tried to create goroutine ({newg}) that already exists")
        self.gs[newg] = GState(newg, GO_WAITING if code == EV_GO_CREATE_BLOCKED else GO_RUNNABLE, gen.gen)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _running_g(self, code: int, ctx: Ctx, want: int = GO_RUNNING) -> GState:
        s = self.gs.get(ctx[2])
        if s is None:
            raise OrderingError(f"event {code_name(code)} for goroutine ({ctx[2]}) that doesn't exist")
        if s.status != want:
            raise OrderingError(
                f"{code_name(code)} event for goroutine that's not {'Running' if want == GO_RUNNING else 'Syscall'}"
            )
        return s

    def _go_stop_exec(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        check_ctx(ctx, USER_GO)
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
        check_ctx(ctx, (MUST, MUST, MUST_NOT))
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
        check_ctx(ctx, USER_GO)
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
        check_ctx(ctx, USER_GO)
        s = self._running_g(code, ctx)
        s.status = GO_SYSCALL
        ps = self.ps.get(ctx[1])
        if ps is None:
            raise OrderingError(f"uninitialized proc {ctx[1]} found during {code_name(code)}")
        ps.status = PROC_SYSCALL
        if not (ps.seq_gen == gen.gen and a[0] == ps.seq + 1):
            raise OrderingError(
                f"failed to advance {code_name(code)}: can't make sequence: "
                f"{ps.seq} (gen={ps.seq_gen}) -> {a[0]} (gen={gen.gen})"
            )
        ps.seq = a[0]
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _syscall_end(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        check_ctx(ctx, USER_GO)
        s = self.gs.get(ctx[2])
        if s is None:
            raise OrderingError(f"event {code_name(code)} for goroutine ({ctx[2]}) that doesn't exist")
        if s.status != GO_SYSCALL:
            raise OrderingError(f"{code_name(code)} event for goroutine that's not Running")
        s.status = GO_RUNNING
        ps = self.ps.get(ctx[1])
        if ps is None:
            raise OrderingError(f"uninitialized proc {ctx[1]} found during {code_name(code)}")
        if ps.status != PROC_SYSCALL:
            raise OrderingError(
                f"expected proc {ctx[1]} in state Syscall, but got {PROC_STATUS_NAMES[ps.status]} instead"
            )
        ps.status = PROC_RUNNING
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _syscall_end_blocked(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        if ctx[1] != NO_ID:
            ps = self.ps.get(ctx[1])
            if ps is None:
                raise OrderingError(f"uninitialized proc {ctx[1]} found during {code_name(code)}")
            if ps.status == PROC_SYSCALL:
                return None  # the proc must be stolen first
        check_ctx(ctx, (MUST, MAY, MUST))
        s = self.gs.get(ctx[2])
        if s is None:
            raise OrderingError(f"event {code_name(code)} for goroutine ({ctx[2]}) that doesn't exist")
        if s.status != GO_SYSCALL:
            raise OrderingError(f"{code_name(code)} event for goroutine that's not Running")
        s.status = GO_RUNNABLE
        self._emit(code, t, ctx, a, gen)
        return (ctx[0], ctx[1], NO_ID)

    def _go_create_syscall(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        check_ctx(ctx, (MUST, MAY, MUST_NOT))
        newg = a[0]
        if newg in self.gs:
            raise OrderingError(f"tried to create goroutine ({newg}) in syscall that already exists")
        self.gs[newg] = GState(newg, GO_SYSCALL, gen.gen)
        self._emit(code, t, ctx, a, gen)
        return (ctx[0], ctx[1], newg)

    def _go_destroy_syscall(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        check_ctx(ctx, (MUST, MAY, MUST))
        s = self.gs.get(ctx[2])
        if s is None:
            raise OrderingError(f"event {code_name(code)} for goroutine ({ctx[2]}) that doesn't exist")
        if s.status != GO_SYSCALL:
            raise OrderingError(f"{code_name(code)} event for goroutine that's not Syscall")
        del self.gs[ctx[2]]
        new = (ctx[0], ctx[1], NO_ID)
        if ctx[1] != NO_ID:
            ps = self.ps.get(ctx[1])
            if ps is None:
                raise OrderingError(f"found invalid proc {ctx[1]} during {code_name(code)}")
            if ps.status != PROC_SYSCALL:
                raise OrderingError(
                    f"proc {ctx[1]} in unexpected state {PROC_STATUS_NAMES[ps.status]} during {code_name(code)}"
                )
            ps.status = PROC_SYSCALL_ABANDONED
            new = (ctx[0], NO_ID, NO_ID)
            # The proc this thread held is lost to it: say so as a steal.
            self._emit(EV_PROC_STEAL, t, ctx, [ctx[1], 0, 0], gen, (PROC_SYSCALL,))
        self._emit(code, t, ctx, a, gen)
        return new
