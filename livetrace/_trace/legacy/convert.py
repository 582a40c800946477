"""Legacy traces in the modern event model.

A complete legacy trace (see :mod:`._legacy_decoder`) becomes one long
generation of :class:`Event` objects, with the kinds, arguments and
execution contexts Go's own v1-to-v2 conversion gives (``go tool trace
-d=parsed`` of Go 1.23+ on 1.11 to 1.21 traces). Go 1.5 to 1.10 traces, which
current Go no longer reads, go through the same mapping; what they cannot
express is listed in docs/decoder.md.

Where the two models differ, the modern one wins: the trace opens and closes
with a Sync; an instantaneous syscall becomes a 1 ns syscall; goroutines that
existed when tracing began get an ``Undetermined->...`` transition; no two
events share a timestamp (a tie moves the later event on by 1 ns).
"""

from __future__ import annotations

from collections.abc import Iterator

from livetrace._errors import TraceFormatError
from livetrace._trace.legacy.trace import LOCAL_TO_PLAIN, LegacyEvent, LegacyTrace
from livetrace._trace.model.events import (
    EVENT_NARGS,
    GO_RUNNABLE,
    GO_RUNNING,
    GO_SYSCALL,
    GO_WAITING,
    NO_TASK,
    PROC_IDLE,
    PROC_RUNNING,
    SYNC_CODE,
    Event,
)
from livetrace._trace.model.tables import Tables
from livetrace._trace.spec.legacy import (
    EV_CPU_SAMPLE,
    EV_GC_DONE,
    EV_GC_MARK_ASSIST_DONE,
    EV_GC_MARK_ASSIST_START,
    EV_GC_START,
    EV_GC_SWEEP_DONE,
    EV_GC_SWEEP_START,
    EV_GO_BLOCK,
    EV_GO_BLOCK_COND,
    EV_GO_BLOCK_GC,
    EV_GO_BLOCK_NET,
    EV_GO_BLOCK_RECV,
    EV_GO_BLOCK_SELECT,
    EV_GO_BLOCK_SEND,
    EV_GO_BLOCK_SYNC,
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
    EV_GOMAXPROCS,
    EV_HEAP_ALLOC,
    EV_HEAP_GOAL,
    EV_PROC_START,
    EV_PROC_STOP,
    EV_STW_DONE,
    EV_STW_START,
    EV_USER_LOG,
    EV_USER_REGION,
    EV_USER_TASK_CREATE,
    EV_USER_TASK_END,
    SPECS,
    STW_REASONS_1021,
)

# The modern event codes the conversion produces.
from livetrace._trace.spec.modern import (
    EV_CPU_SAMPLE as CPU_SAMPLE,
)
from livetrace._trace.spec.modern import (
    EV_GC_BEGIN as GC_BEGIN,
)
from livetrace._trace.spec.modern import (
    EV_GC_END as GC_END,
)
from livetrace._trace.spec.modern import (
    EV_GC_MARK_ASSIST_BEGIN as GC_MARK_ASSIST_BEGIN,
)
from livetrace._trace.spec.modern import (
    EV_GC_MARK_ASSIST_END as GC_MARK_ASSIST_END,
)
from livetrace._trace.spec.modern import (
    EV_GC_SWEEP_BEGIN as GC_SWEEP_BEGIN,
)
from livetrace._trace.spec.modern import (
    EV_GC_SWEEP_END as GC_SWEEP_END,
)
from livetrace._trace.spec.modern import (
    EV_GO_BLOCK as GO_BLOCK,
)
from livetrace._trace.spec.modern import (
    EV_GO_CREATE as GO_CREATE,
)
from livetrace._trace.spec.modern import (
    EV_GO_DESTROY as GO_DESTROY,
)
from livetrace._trace.spec.modern import (
    EV_GO_LABEL as GO_LABEL,
)
from livetrace._trace.spec.modern import (
    EV_GO_START as GO_START,
)
from livetrace._trace.spec.modern import (
    EV_GO_STATUS as GO_STATUS,
)
from livetrace._trace.spec.modern import (
    EV_GO_STOP as GO_STOP,
)
from livetrace._trace.spec.modern import (
    EV_GO_SYSCALL_BEGIN as GO_SYSCALL_BEGIN,
)
from livetrace._trace.spec.modern import (
    EV_GO_SYSCALL_END as GO_SYSCALL_END,
)
from livetrace._trace.spec.modern import (
    EV_GO_SYSCALL_END_BLOCKED as GO_SYSCALL_END_BLOCKED,
)
from livetrace._trace.spec.modern import (
    EV_GO_UNBLOCK as GO_UNBLOCK,
)
from livetrace._trace.spec.modern import (
    EV_HEAP_ALLOC as HEAP_ALLOC,
)
from livetrace._trace.spec.modern import (
    EV_HEAP_GOAL as HEAP_GOAL,
)
from livetrace._trace.spec.modern import (
    EV_PROC_START as PROC_START,
)
from livetrace._trace.spec.modern import (
    EV_PROC_STATUS as PROC_STATUS,
)
from livetrace._trace.spec.modern import (
    EV_PROC_STOP as PROC_STOP,
)
from livetrace._trace.spec.modern import (
    EV_PROCS_CHANGE as PROCS_CHANGE,
)
from livetrace._trace.spec.modern import (
    EV_STW_BEGIN as STW_BEGIN,
)
from livetrace._trace.spec.modern import (
    EV_STW_END as STW_END,
)
from livetrace._trace.spec.modern import (
    EV_USER_LOG as USER_LOG,
)
from livetrace._trace.spec.modern import (
    EV_USER_REGION_BEGIN as USER_REGION_BEGIN,
)
from livetrace._trace.spec.modern import (
    EV_USER_REGION_END as USER_REGION_END,
)
from livetrace._trace.spec.modern import (
    EV_USER_TASK_BEGIN as USER_TASK_BEGIN,
)
from livetrace._trace.spec.modern import (
    EV_USER_TASK_END as USER_TASK_END,
)
from livetrace._trace.version import TraceVersion

U64 = (1 << 64) - 1

# Why a goroutine stopped or blocked, as the modern model names it.
STOP_REASONS = {EV_GO_SCHED: "runtime.Gosched", EV_GO_PREEMPT: "preempted"}
BLOCK_REASONS = {
    EV_GO_STOP: "forever",
    EV_GO_SLEEP: "sleep",
    EV_GO_BLOCK: "",
    EV_GO_BLOCK_SEND: "chan send",
    EV_GO_BLOCK_RECV: "chan receive",
    EV_GO_BLOCK_SELECT: "select",
    EV_GO_BLOCK_SYNC: "sync",
    EV_GO_BLOCK_COND: "sync.(*Cond).Wait",
    EV_GO_BLOCK_NET: "network",
    EV_GO_BLOCK_GC: "GC mark assist wait for work",
}
# Go 1.21's stop-the-world reasons under the names the modern model gives them.
STW_REASONS = ("", *STW_REASONS_1021[1:6], "all goroutine stack trace", *STW_REASONS_1021[7:])
# Legacy events that become a modern one with the same arguments.
SAME_ARGS = {
    EV_GC_START: GC_BEGIN,
    EV_GC_SWEEP_START: GC_SWEEP_BEGIN,
    EV_GC_SWEEP_DONE: GC_SWEEP_END,
    EV_GO_CREATE: GO_CREATE,
    EV_GO_UNBLOCK: GO_UNBLOCK,
    EV_HEAP_ALLOC: HEAP_ALLOC,
    EV_HEAP_GOAL: HEAP_GOAL,
    EV_GC_MARK_ASSIST_START: GC_MARK_ASSIST_BEGIN,
    EV_GOMAXPROCS: PROCS_CHANGE,
    EV_GO_END: GO_DESTROY,
    EV_GC_DONE: GC_END,
    EV_GC_MARK_ASSIST_DONE: GC_MARK_ASSIST_END,
    EV_GO_SYS_EXIT: GO_SYSCALL_END_BLOCKED,
}
# How many arguments each of those has in the modern model; where the legacy
# event has a stack, it is the last one.
NARGS = {code: EVENT_NARGS[code] for code in SAME_ARGS.values()}


class StackTable(dict[int, tuple[int, ...]]):
    """A stack table where an id the trace never defined has no frames,
    as in Go's tables."""

    def __missing__(self, key: int) -> tuple[int, ...]:
        return ()


def legacy_table(trace: LegacyTrace) -> Tables:
    """The tables of a complete legacy trace."""
    g = Tables(1)
    g.strings = dict(trace.strings)
    g.strings[0] = b""
    stacks = StackTable({0: ()})
    if not trace.version.stacks_are_pcs:
        for sid, vals in trace.stacks.items():
            stacks[sid & 0xFFFFFFFF] = vals[0::4]
        g.frames = dict(trace.frames)
        for pc, (func, file, _) in g.frames.items():
            for sid in (func, file):
                if sid not in g.strings:
                    raise TraceFormatError(
                        f"the stack frame at PC 0x{pc:x} names string {sid}, which the trace does not define"
                    )
    else:
        # PCs only: frames without names, but where a binary named them (symbolize).
        g.frames = dict(trace.frames)
        for sid, pcs in trace.stacks.items():
            stacks[sid & 0xFFFFFFFF] = pcs
            for pc in pcs:
                g.frames.setdefault(pc, (0, 0, 0))
    g.stacks = stacks
    return g


class _Strings:
    """Interns the strings the conversion adds to the trace's own, under ids
    from ``first`` on."""

    def __init__(self, table: dict[int, bytes], first: int) -> None:
        self._table = table
        self._ids: dict[bytes, int] = {}
        self._next = first

    def id(self, s: bytes) -> int:
        sid = self._ids.get(s)
        if sid is None:
            sid = self._ids[s] = self._next
            self._table[sid] = s
            self._next += 1
        return sid


def _next_same_g(events: list[LegacyEvent]) -> list[int]:
    """For each event, the index of the next event on the same goroutine
    (len(events) if none): a syscall blocked if that one is GoSysBlock."""
    out = [0] * len(events)
    later: dict[int, int] = {}
    n = len(events)
    for i in range(n - 1, -1, -1):
        g = events[i].g
        out[i] = later.get(g, n)
        later[g] = i
    return out


def blocked_syscalls(events: list[LegacyEvent]) -> set[int]:
    """Indexes of the GoSysCall events whose goroutine's next event (in this
    list) is GoSysBlock."""
    if not any(e.typ == EV_GO_SYSCALL for e in events):
        return set()
    after = _next_same_g(events)
    n = len(events)
    return {
        i
        for i, e in enumerate(events)
        if e.typ == EV_GO_SYSCALL and after[i] < n and events[after[i]].typ == EV_GO_SYS_BLOCK
    }


class ModelConverter:
    """Turns legacy events, in order, into modern ones. It keeps what the
    conversion needs to know of the past (the opening snapshot, which Ps
    have run and on which thread, open tasks); times are left as given."""

    def __init__(self, table: Tables, version: TraceVersion, first_string_id: int, strict: bool = True) -> None:
        """``strict``: the trace is complete, so a string or stack it names
        and lacks is an error (a string) or no stack."""
        self.table = table
        self._strings = _Strings(table.strings, first_string_id)
        self._version = version
        self._strict = strict
        self._pre_init = True
        self._created_pre_init: dict[int, None] = {}  # in creation order
        self._seen_procs: set[int] = set()
        self._proc_ms: dict[int, int] = {}
        self._tasks: dict[int, tuple[bytes, int]] = {}
        self._stw_reason = 0

    def string_id(self, s: bytes) -> int:
        """The id of a string the conversion adds, interned now if new."""
        return self._strings.id(s)

    def _stk(self, e: LegacyEvent) -> int:
        # Go drops ids of stacks the footer does not have; before the footer
        # (not strict) every id stands.
        s = e.stk & 0xFFFFFFFF
        return s if not self._strict or self.table.stacks[s] else 0

    def convert(self, e: LegacyEvent, time: int, blocked: bool = False) -> list[Event]:
        """The modern events for e (none, one or two), at ``time``; blocked
        says whether a GoSysCall blocked."""
        table, strings, stk = self.table, self._strings, self._stk
        # Live, before the final merge, the "Local" variants are still there.
        t, a, p = LOCAL_TO_PLAIN.get(e.typ, e.typ), e.args, e.p
        m = self._proc_ms.get(p, -1) if p != -1 else -1
        g = e.g or -1
        code = SAME_ARGS.get(t)
        if code is not None:
            k = NARGS[code]
            args = a[:k] + [0] * (k - len(a[:k]))
            if SPECS[t].stack and k:
                args[k - 1] = stk(e)
            if t == EV_GOMAXPROCS and self._pre_init:
                # The first Gomaxprocs ends the trace's opening snapshot: the
                # goroutines created in it and not seen since are runnable.
                self._pre_init = False
                out = [
                    Event(GO_STATUS, time, -1, -1, -1, [gid, U64, GO_RUNNABLE], table, (0,))
                    for gid in self._created_pre_init
                ]
                self._created_pre_init.clear()
                return out
            if t == EV_GO_CREATE and self._pre_init:
                self._created_pre_init[a[0]] = None
                return []
            return [Event(code, time, m, p, g, args, table)]
        if t == EV_PROC_START:
            self._proc_ms[p] = a[0]
            m = a[0] if p != -1 else -1
            if p in self._seen_procs:
                return [Event(PROC_START, time, m, p, g, [p, 0], table)]
            self._seen_procs.add(p)
            return [Event(PROC_STATUS, time, m, p, g, [p, PROC_RUNNING], table, (0,))]
        if t == EV_PROC_STOP:
            self._proc_ms.pop(p, None)
            if p in self._seen_procs:
                return [Event(PROC_STOP, time, m, p, g, [], table)]
            self._seen_procs.add(p)
            return [Event(PROC_STATUS, time, m, p, g, [p, PROC_IDLE], table, (0,))]
        if t == EV_STW_START:
            v = self._version
            if not v.has_stw_reasons:
                # Before 1.10 the kind was not traced, and 1.10 to 1.20 knew two.
                reason = STW_REASONS[a[0] + 1] if v.stw_has_kind and a[0] < 2 else ""
            else:
                reason = STW_REASONS[a[0]] if a[0] < len(STW_REASONS) else ""
            self._stw_reason = strings.id(reason.encode())
            return [Event(STW_BEGIN, time, m, p, g, [self._stw_reason, 0], table)]
        if t == EV_STW_DONE:
            return [Event(STW_END, time, m, p, g, [self._stw_reason], table)]
        if t in STOP_REASONS:
            return [Event(GO_STOP, time, m, p, g, [strings.id(STOP_REASONS[t].encode()), stk(e)], table)]
        if t in BLOCK_REASONS:
            return [Event(GO_BLOCK, time, m, p, g, [strings.id(BLOCK_REASONS[t].encode()), stk(e)], table)]
        if t == EV_GO_START:
            if self._pre_init:
                self._created_pre_init.pop(a[0], None)
                return [Event(GO_STATUS, time, m, p, g, [a[0], U64, GO_RUNNING], table, (0,))]
            return [Event(GO_START, time, m, p, g, [a[0], a[1]], table)]
        if t == EV_GO_START_LABEL:
            # Go's conversion gives these the P's thread or 0, and the
            # goroutine as it is, even before the snapshot ends.
            m = self._proc_ms.get(p, 0)
            self._check_string(e, a[2])
            return [
                Event(GO_START, time, m, p, e.g, [a[0], a[1]], table),
                Event(GO_LABEL, time, m, p, e.g, [a[2]], table),
            ]
        if t == EV_GO_SYSCALL:
            if blocked:
                return [Event(GO_SYSCALL_BEGIN, time, m, p, g, [0, stk(e)], table)]
            # An instantaneous syscall: give it the shortest duration there is.
            m = self._proc_ms.get(p, 0)
            return [
                Event(GO_SYSCALL_BEGIN, time, m, p, e.g, [0, stk(e)], table),
                Event(GO_SYSCALL_END, time + 1, m, p, e.g, [], table),
            ]
        if t == EV_GO_SYS_BLOCK:
            return []  # the syscall's begin already said it blocked
        if t in (EV_GO_WAITING, EV_GO_IN_SYSCALL):
            self._created_pre_init.pop(a[0], None)
            status = GO_WAITING if t == EV_GO_WAITING else GO_SYSCALL
            return [Event(GO_STATUS, time, m, p, g, [a[0], U64, status], table, (0,))]
        if t == EV_USER_TASK_CREATE:
            self._check_string(e, a[2])
            self._tasks[a[0]] = (table.strings.get(a[2], b""), a[1])
            return [Event(USER_TASK_BEGIN, time, m, p, g, [a[0], a[1] or NO_TASK, a[2], stk(e)], table)]
        if t == EV_USER_TASK_END:
            name, parent = self._tasks.pop(a[0], (b"", NO_TASK))
            return [Event(USER_TASK_END, time, m, p, g, [a[0], stk(e)], table, (parent, table.add_extra_string(name)))]
        if t == EV_USER_REGION:
            self._check_string(e, a[2])
            code = USER_REGION_BEGIN if a[1] == 0 else USER_REGION_END
            return [Event(code, time, m, p, g, [a[0], a[2], stk(e)], table)]
        if t == EV_USER_LOG:
            self._check_string(e, a[1])
            return [Event(USER_LOG, time, m, p, g, [a[0], a[1], strings.id(e.sargs[1]), stk(e)], table)]
        if t == EV_CPU_SAMPLE:
            return [Event(CPU_SAMPLE, time, -1, p, g, [stk(e)], table)]
        raise TraceFormatError(
            f"{SPECS[t].name} cannot be converted to the modern event model (offset 0x{e.off:x})", offset=e.off
        )

    def _check_string(self, e: LegacyEvent, sid: int) -> None:
        if self._strict and sid not in self.table.strings:
            raise TraceFormatError(
                f"{SPECS[e.typ].name} names string {sid}, which the trace does not define (offset 0x{e.off:x})",
                offset=e.off,
            )


def legacy_events(trace: LegacyTrace) -> Iterator[Event]:
    """The events of a complete legacy trace in the modern event model,
    opened and closed by a Sync, in Go's order."""
    table = legacy_table(trace)
    events = trace.events
    if not events:
        return
    conv = ModelConverter(table, trace.version, max(table.strings, default=0) + 1)
    yield Event(SYNC_CODE, events[0].ts - 1, -1, -1, -1, [1], table)
    blocked = blocked_syscalls(events)
    last = -1
    for i, e in enumerate(events):
        for ev in conv.convert(e, e.ts, i in blocked):
            if ev.time <= last:
                ev.time = last + 1
            last = ev.time
            yield ev
    yield Event(SYNC_CODE, last + 1, -1, -1, -1, [2], table)
