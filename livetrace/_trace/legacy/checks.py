"""Go 1.21's checks of ordered legacy events: a trace can merge into one order and still contradict itself."""

from __future__ import annotations

from livetrace._errors import TraceFormatError
from livetrace._trace.legacy.trace import (
    G_DEAD,
    G_RUNNABLE,
    G_RUNNING,
    G_WAITING,
    LegacyEvent,
)
from livetrace._trace.spec.legacy import (
    BLOCKING,
    EV_FUTILE_WAKEUP,
    EV_GC_DONE,
    EV_GC_MARK_ASSIST_DONE,
    EV_GC_MARK_ASSIST_START,
    EV_GC_START,
    EV_GC_SWEEP_DONE,
    EV_GC_SWEEP_START,
    EV_GO_BLOCK_GC,
    EV_GO_BLOCK_NET,
    EV_GO_CREATE,
    EV_GO_END,
    EV_GO_IN_SYSCALL,
    EV_GO_PREEMPT,
    EV_GO_SCHED,
    EV_GO_SLEEP,
    EV_GO_START,
    EV_GO_START_LABEL,
    EV_GO_STOP,
    EV_GO_SYS_BLOCK,
    EV_GO_SYS_EXIT,
    EV_GO_SYSCALL,
    EV_GO_UNBLOCK,
    EV_GO_WAITING,
    EV_PROC_START,
    EV_PROC_STOP,
    EV_STW_DONE,
    EV_STW_START,
    EV_USER_REGION,
    EV_USER_TASK_CREATE,
    EV_USER_TASK_END,
    GC_P,
    GLOBAL_G0,
    NETPOLL_P,
    TIMER_P,
)
from livetrace._trace.version import TraceVersion

# The blocking events that end a futile wakeup.
FUTILE_BLOCKS = BLOCKING - {EV_GO_SLEEP, EV_GO_BLOCK_NET, EV_GO_BLOCK_GC}


def remove_futile(events: list[LegacyEvent]) -> list[LegacyEvent]:
    """Drop wakeups that only led to blocking again (marked FutileWakeup)."""
    if not any(e.typ == EV_FUTILE_WAKEUP for e in events):
        return events
    chains: dict[int, tuple[bool, list[LegacyEvent]]] = {}
    futile: set[int] = set()
    for e in events:
        if e.typ == EV_GO_UNBLOCK:
            chains[e.args[0]] = (False, [e])
        elif e.typ in (EV_GO_START, EV_GO_PREEMPT, EV_FUTILE_WAKEUP):
            was, chain = chains.get(e.g, (False, []))
            chains[e.g] = (was or e.typ == EV_FUTILE_WAKEUP, [*chain, e])
        elif e.typ in FUTILE_BLOCKS:
            was, chain = chains.pop(e.g, (False, []))
            if was:
                futile.add(id(e))
                futile.update(id(x) for x in chain)
    return [e for e in events if id(e) not in futile]


def check_states(ver: TraceVersion, events: list[LegacyEvent]) -> None:
    """Go's consistency checks over the ordered events; also puts GC starts
    on the GC pseudo-P and network wakeups on the netpoll one."""
    gs: dict[int, list[int | None]] = {0: [G_RUNNING, None]}  # g -> [state, type of its last event that matters here]
    ps: dict[int, list[int]] = {}  # p -> [running, g, in STW, sweeping]
    gc_on = stw_on = False
    tasks: set[int] = set()
    regions: dict[int, list[tuple[int, bytes]]] = {}
    assists: set[int] = set()
    stw_per_p = ver.stw_per_p

    def err(msg: str, e: LegacyEvent) -> TraceFormatError:
        return TraceFormatError(f"{msg} (offset {e.off}, time {e.ts})", offset=e.off)

    def running(p: list[int], g: list[int | None], e: LegacyEvent, allow_g0: bool) -> None:
        if g[0] != G_RUNNING:
            raise err(f"g {e.g} is not running while {e.name}", e)
        if p[1] != e.g:
            raise err(f"p {e.p} is not running g {e.g} while {e.name}", e)
        if not allow_g0 and e.g == 0:
            raise err(f"g 0 did {e.name}", e)

    for e in events:
        t = e.typ
        g = gs.setdefault(0 if t in GLOBAL_G0 else e.g, [G_DEAD, None])
        p = ps.setdefault(e.p, [False, 0, False, False])
        if t == EV_PROC_START:
            if p[0]:
                raise err(f"p {e.p} is running before start", e)
            p[0] = True
        elif t == EV_PROC_STOP:
            if not p[0]:
                raise err(f"p {e.p} is not running before stop", e)
            if p[1]:
                raise err(f"p {e.p} is running a goroutine {p[1]} during stop", e)
            p[0] = False
        elif t == EV_GC_START:
            if gc_on:
                raise err("previous GC is not ended before a new one", e)
            gc_on = True
            e.p = GC_P
        elif t == EV_GC_DONE:
            if not gc_on:
                raise err("bogus GC end", e)
            gc_on = False
        elif t in (EV_STW_START, EV_STW_DONE):
            on = p[2] if stw_per_p else stw_on
            if t == EV_STW_START and on:
                raise err("previous STW is not ended before a new one", e)
            if t == EV_STW_DONE and not on:
                raise err("bogus STW end", e)
            if stw_per_p:
                p[2] = t == EV_STW_START
            else:
                stw_on = t == EV_STW_START
        elif t == EV_GC_SWEEP_START:
            if p[3]:
                raise err("previous sweeping is not ended before a new one", e)
            p[3] = True
        elif t == EV_GC_SWEEP_DONE:
            if not p[3]:
                raise err("bogus sweeping end", e)
            p[3] = False
        elif t == EV_GC_MARK_ASSIST_START:
            if e.g in assists:
                raise err("previous mark assist is not ended before a new one", e)
            assists.add(e.g)
        elif t == EV_GC_MARK_ASSIST_DONE:
            assists.discard(e.g)
        elif t in (EV_GO_WAITING, EV_GO_IN_SYSCALL):
            if g[0] != G_RUNNABLE:
                raise err(
                    f"g {e.g} is not runnable before {'EvGoWaiting' if t == EV_GO_WAITING else 'EvGoInSyscall'}", e
                )
            g[0], g[1] = G_WAITING, t
        elif t == EV_GO_CREATE:
            running(p, g, e, True)
            if e.args[0] in gs:
                raise err(f"g {e.args[0]} already exists", e)
            gs[e.args[0]] = [G_RUNNABLE, t]
        elif t in (EV_GO_START, EV_GO_START_LABEL):
            if g[0] != G_RUNNABLE:
                raise err(f"g {e.g} is not runnable before start", e)
            if p[1]:
                raise err(f"p {e.p} is already running g {p[1]} while start g {e.g}", e)
            g[0], g[1] = G_RUNNING, None
            p[1] = e.g
        elif t in (EV_GO_END, EV_GO_STOP):
            running(p, g, e, False)
            g[0], p[1] = G_DEAD, 0
            if t == EV_GO_END:
                regions.pop(e.g, None)
        elif t in (EV_GO_SCHED, EV_GO_PREEMPT):
            running(p, g, e, False)
            g[0], g[1], p[1] = G_RUNNABLE, t, 0
        elif t == EV_GO_UNBLOCK:
            if g[0] != G_RUNNING:
                raise err(f"g {e.g} is not running while unpark", e)
            if e.p != TIMER_P and p[1] != e.g:
                raise err(f"p {e.p} is not running g {e.g} while unpark", e)
            target = gs.setdefault(e.args[0], [G_DEAD, None])
            if target[0] != G_WAITING:
                raise err(f"g {e.args[0]} is not waiting before unpark", e)
            if target[1] == EV_GO_BLOCK_NET and e.p != TIMER_P:
                e.p = NETPOLL_P
            target[0], target[1] = G_RUNNABLE, t
        elif t == EV_GO_SYSCALL:
            running(p, g, e, False)
            g[1] = t
        elif t == EV_GO_SYS_BLOCK:
            running(p, g, e, False)
            g[0], p[1] = G_WAITING, 0
        elif t == EV_GO_SYS_EXIT:
            if g[0] != G_WAITING:
                raise err(f"g {e.g} is not waiting during syscall exit", e)
            g[0], g[1] = G_RUNNABLE, t
        elif t in BLOCKING:
            running(p, g, e, False)
            g[0], g[1], p[1] = G_WAITING, t, 0
        elif t == EV_USER_TASK_CREATE:
            if e.args[0] in tasks:
                raise TraceFormatError(f"task id conflicts (id:{e.args[0]})", offset=e.off)
            tasks.add(e.args[0])
        elif t == EV_USER_TASK_END:
            tasks.discard(e.args[0])
        elif t == EV_USER_REGION:
            stack = regions.setdefault(e.g, [])
            if e.args[1] == 0:
                stack.append((e.args[0], e.sargs[0]))
            elif e.args[1] == 1:
                if stack:
                    if stack[-1] != (e.args[0], e.sargs[0]):
                        raise TraceFormatError(f"misuse of region in goroutine {e.g}", offset=e.off)
                    stack.pop()
            else:
                raise TraceFormatError(f"invalid user region mode: {e.args[1]}", offset=e.off)
