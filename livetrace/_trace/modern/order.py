"""The ordering engine: goroutine, proc and thread state machines that decide
when an event may happen.

Each thread's events are in order, but across threads only the partial
order that sequence numbers and states express holds. An event is ready
when its preconditions are met (the proc it starts is idle, the goroutine
it unblocks is waiting and this is the next sequence number, ...). A
handler either accepts the event, updates the states and emits it (maybe
with events it implies), returns None when it is not ready yet, or raises
when the trace contradicts itself.

This module is the engine's dispatch; the handlers live by subject in
sched.py (procs, goroutines, threads), gc.py (GC and ranges) and
annotations.py (tasks and regions), over the shared state of state.py.
"""

from __future__ import annotations

from collections.abc import Callable

from livetrace._trace.modern.annotations import AnnotationRules
from livetrace._trace.modern.gc import GCRules
from livetrace._trace.modern.generation import Generation
from livetrace._trace.modern.sched import SchedRules
from livetrace._trace.modern.state import NO_ID, Ctx, OrderingError
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
)

# The experimental events of the alloc/free experiment, all alike to the engine.
_ALLOC_FREE = tuple(s.code for s in SPECS if s is not None and s.experiment == EXPERIMENT_ALLOC_FREE)


class Ordering(SchedRules, GCRules, AnnotationRules):
    """State that persists across generations, and the rules that use it."""

    def __init__(self) -> None:
        super().__init__()
        self._dispatch: list[Callable[..., Ctx | None] | None] = [None] * 256
        for c, fn in self.handlers().items():
            self._dispatch[c] = fn

    def handlers(self) -> dict[int, Callable[..., Ctx | None]]:
        """The rule for each code that may stand in a thread's event batch."""
        by_codes: list[tuple[tuple[int, ...], Callable[..., Ctx | None]]] = [
            ((EV_PROCS_CHANGE, EV_GO_LABEL, EV_USER_LOG), self._annotation),
            ((EV_PROC_START,), self._proc_start),
            ((EV_PROC_STOP,), self._proc_stop),
            ((EV_PROC_STEAL,), self._proc_steal),
            ((EV_PROC_STATUS,), self._proc_status),
            ((EV_GO_CREATE, EV_GO_CREATE_BLOCKED), self._go_create),
            ((EV_GO_CREATE_SYSCALL,), self._go_create_syscall),
            ((EV_GO_START,), self._go_start),
            ((EV_GO_DESTROY, EV_GO_STOP, EV_GO_BLOCK), self._go_stop_exec),
            ((EV_GO_DESTROY_SYSCALL,), self._go_destroy_syscall),
            ((EV_GO_UNBLOCK,), self._go_unblock),
            ((EV_GO_SYSCALL_BEGIN,), self._syscall_begin),
            ((EV_GO_SYSCALL_END,), self._syscall_end),
            ((EV_GO_SYSCALL_END_BLOCKED,), self._syscall_end_blocked),
            ((EV_GO_STATUS, EV_GO_STATUS_STACK), self._go_status),
            ((EV_STW_BEGIN, EV_GC_MARK_ASSIST_BEGIN), self._go_range_begin),
            ((EV_STW_END, EV_GC_MARK_ASSIST_END), self._go_range_end),
            ((EV_GC_ACTIVE,), self._gc_active),
            ((EV_GC_BEGIN,), self._gc_begin),
            ((EV_GC_END,), self._gc_end),
            ((EV_GC_SWEEP_ACTIVE,), self._sweep_active),
            ((EV_GC_SWEEP_BEGIN,), self._sweep_begin),
            ((EV_GC_SWEEP_END,), self._sweep_end),
            ((EV_GC_MARK_ASSIST_ACTIVE,), self._go_range_active),
            ((EV_HEAP_ALLOC, EV_HEAP_GOAL), self._heap_metric),
            ((EV_USER_TASK_BEGIN,), self._task_begin),
            ((EV_USER_TASK_END,), self._task_end),
            ((EV_USER_REGION_BEGIN,), self._region_begin),
            ((EV_USER_REGION_END,), self._region_end),
            ((EV_GO_SWITCH, EV_GO_SWITCH_DESTROY), self._go_switch),
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
            raise OrderingError(f"bad event type found while ordering: {code}", generation=gen.gen)
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
