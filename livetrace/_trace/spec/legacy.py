"""The event table of the legacy trace format (Go 1.5 to 1.21, and the
pre-release ``gotrace`` streams before them), one row per type code, with the
names and argument labels Go 1.21's old parser prints.

Codes are append-only; a code exists from its ``since`` version on.
Versions are written as Go's old parser writes them: 1000*major + minor.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

(EV_NONE, EV_BATCH, EV_FREQUENCY, EV_STACK, EV_GOMAXPROCS, EV_PROC_START, EV_PROC_STOP, EV_GC_START, EV_GC_DONE,
 EV_STW_START, EV_STW_DONE, EV_GC_SWEEP_START, EV_GC_SWEEP_DONE, EV_GO_CREATE, EV_GO_START, EV_GO_END, EV_GO_STOP,
 EV_GO_SCHED, EV_GO_PREEMPT, EV_GO_SLEEP, EV_GO_BLOCK, EV_GO_UNBLOCK, EV_GO_BLOCK_SEND, EV_GO_BLOCK_RECV,
 EV_GO_BLOCK_SELECT, EV_GO_BLOCK_SYNC, EV_GO_BLOCK_COND, EV_GO_BLOCK_NET, EV_GO_SYSCALL, EV_GO_SYS_EXIT,
 EV_GO_SYS_BLOCK, EV_GO_WAITING, EV_GO_IN_SYSCALL, EV_HEAP_ALLOC, EV_HEAP_GOAL, EV_TIMER_GOROUTINE,
 EV_FUTILE_WAKEUP, EV_STRING, EV_GO_START_LOCAL, EV_GO_UNBLOCK_LOCAL, EV_GO_SYS_EXIT_LOCAL, EV_GO_START_LABEL,
 EV_GO_BLOCK_GC, EV_GC_MARK_ASSIST_START, EV_GC_MARK_ASSIST_DONE, EV_USER_TASK_CREATE, EV_USER_TASK_END,
 EV_USER_REGION, EV_USER_LOG, EV_CPU_SAMPLE) = range(50)
EV_COUNT = 50

# The pseudo-Ps Go's old parser puts some events on.
TIMER_P, NETPOLL_P, SYSCALL_P, GC_P, PROFILE_P = 1000001, 1000002, 1000003, 1000004, 1000005

VERSIONS = (1005, 1007, 1008, 1009, 1010, 1011, 1019, 1021)
# The pre-release Go 1.5 format (header "gotrace\0"; the runtime that wrote it
# is shared/seeds/000). No parser ever gave it a number: older than every
# numbered version, so the "before 1.x" rules hold for it (stacks are PCs, STW
# is per P and has no kind); where its wire differs, GOTRACE_LAYOUTS and
# has_global_seq say so.
GOTRACE = 1000


@dataclass(frozen=True)
class LegacySpec:
    name: str
    since: int
    stack: bool  # a stack id follows the arguments
    args: tuple[str, ...]
    sargs: tuple[str, ...] = ()


def _s(name: str, since: int, stack: bool, *args: str, sargs: tuple[str, ...] = ()) -> LegacySpec:
    return LegacySpec(name, since, stack, args, sargs)


SPECS: list[LegacySpec] = [
    _s("None", GOTRACE, False),
    _s("Batch", GOTRACE, False, "p", "ticks"),  # 1005: p, seq, ticks
    _s("Frequency", GOTRACE, False, "freq"),  # 1005: freq, unused
    _s("Stack", GOTRACE, False, "id", "siz"),
    _s("Gomaxprocs", GOTRACE, True, "procs"),
    _s("ProcStart", GOTRACE, False, "thread"),
    _s("ProcStop", GOTRACE, False),
    _s("GCStart", GOTRACE, True, "seq"),  # 1005: no seq
    _s("GCDone", GOTRACE, False),
    _s("STWStart", GOTRACE, False, "kindid", sargs=("kind",)),  # before 1010: no kind
    _s("STWDone", GOTRACE, False),
    _s("GCSweepStart", GOTRACE, True),
    _s("GCSweepDone", GOTRACE, False, "swept", "reclaimed"),  # before 1009: none
    _s("GoCreate", GOTRACE, True, "g", "stack"),
    _s("GoStart", GOTRACE, False, "g", "seq"),  # 1005: no seq
    _s("GoEnd", GOTRACE, False),
    _s("GoStop", GOTRACE, True),
    _s("GoSched", GOTRACE, True),
    _s("GoPreempt", GOTRACE, True),
    _s("GoSleep", GOTRACE, True),
    _s("GoBlock", GOTRACE, True),
    _s("GoUnblock", GOTRACE, True, "g", "seq"),  # 1005: no seq
    _s("GoBlockSend", GOTRACE, True),
    _s("GoBlockRecv", GOTRACE, True),
    _s("GoBlockSelect", GOTRACE, True),
    _s("GoBlockSync", GOTRACE, True),
    _s("GoBlockCond", GOTRACE, True),
    _s("GoBlockNet", GOTRACE, True),
    _s("GoSysCall", GOTRACE, True),
    _s("GoSysExit", GOTRACE, False, "g", "seq", "ts"),
    _s("GoSysBlock", GOTRACE, False),
    _s("GoWaiting", GOTRACE, False, "g"),
    _s("GoInSyscall", GOTRACE, False, "g"),
    _s("HeapAlloc", GOTRACE, False, "mem"),
    _s("HeapGoal", GOTRACE, False, "mem"),
    _s("TimerGoroutine", GOTRACE, False, "g"),  # 1005: g, unused
    _s("FutileWakeup", 1005, False),
    _s("String", 1007, False),
    _s("GoStartLocal", 1007, False, "g"),
    _s("GoUnblockLocal", 1007, True, "g"),
    _s("GoSysExitLocal", 1007, False, "g", "ts"),
    _s("GoStartLabel", 1008, False, "g", "seq", "labelid", sargs=("label",)),
    _s("GoBlockGC", 1008, True),
    _s("GCMarkAssistStart", 1009, True),
    _s("GCMarkAssistDone", 1009, False),
    _s("UserTaskCreate", 1011, True, "taskid", "pid", "typeid", sargs=("name",)),
    _s("UserTaskEnd", 1011, True, "taskid"),
    _s("UserRegion", 1011, True, "taskid", "mode", "typeid", sargs=("name",)),
    _s("UserLog", 1011, True, "id", "keyid", sargs=("category", "message")),
    _s("CPUSample", 1019, True, "ts", "p", "g"),
]
assert len(SPECS) == EV_COUNT

# Go 1.21's stop-the-world reasons; earlier versions only knew two kinds.
STW_REASONS_1021 = (
    "unknown", "GC mark termination", "GC sweep termination", "write heap dump", "goroutine profile",
    "goroutine profile cleanup", "all goroutines stack trace", "read mem stats", "AllThreadsSyscall", "GOMAXPROCS",
    "start trace", "stop trace", "CountPagesInUse (test)", "ReadMetricsSlow (test)", "ReadMemStatsSlow (test)",
    "PageCachePagesLeaked (test)", "ResetDebugLog (test)",
)
STW_KINDS_OLD = ("mark termination", "sweep termination")

BLOCKING = frozenset((EV_GO_SLEEP, EV_GO_BLOCK, EV_GO_BLOCK_SEND, EV_GO_BLOCK_RECV, EV_GO_BLOCK_SELECT,
                      EV_GO_BLOCK_SYNC, EV_GO_BLOCK_COND, EV_GO_BLOCK_NET, EV_GO_BLOCK_GC))
# Go 1.21's parser shows these on goroutine 0, whichever goroutine ran them;
# its successor (the v1 to v2 conversion) keeps the real one.
GLOBAL_G0 = frozenset((EV_GC_START, EV_GC_DONE, EV_STW_START, EV_STW_DONE))
# Events after which the P runs no goroutine.
ENDS_G = BLOCKING | {EV_GO_END, EV_GO_STOP, EV_GO_SCHED, EV_GO_PREEMPT, EV_GO_SYS_BLOCK}
# Metadata with a fixed layout and no time delta (stacks and strings have their own).
UNTIMED = (EV_BATCH, EV_FREQUENCY, EV_TIMER_GOROUTINE)

# Where a gotrace event differs from its row, from the traceEvent call sites
# of seed 000: how many of the row's arguments it has, and whether a stack id
# follows them. Its other events have the row's arguments and stack.
GOTRACE_LAYOUTS: dict[int, tuple[int, bool]] = {
    EV_PROC_START: (0, False),  # no thread id
    EV_GC_START: (0, True),  # no GC sequence number
    EV_STW_START: (0, False),  # "GC scan start" then: no kind
    EV_GC_SWEEP_DONE: (0, False),
    EV_GO_START: (1, False),  # the goroutine, no sequence number
    EV_GO_UNBLOCK: (1, True),
    EV_GO_SYS_EXIT: (1, False),  # the goroutine only: no sequence number, no real exit time
    EV_GO_SYS_BLOCK: (0, True),  # a stack, which every numbered version dropped
}


def has_global_seq(ver: int) -> bool:
    """Whether a global sequence delta precedes every time delta: only in
    Go 1.5 and 1.6 (gotrace had none yet, 1.7 dropped it)."""
    return 1005 <= ver < 1007


def gotrace_layout(typ: int) -> tuple[int, bool]:
    """(argument count, stack) of an event type in a gotrace stream."""
    spec = SPECS[typ]
    return GOTRACE_LAYOUTS.get(typ, (len(spec.args), spec.stack))


def has_stack(typ: int, ver: int) -> bool:
    """Whether a stack id ends an event of this type in version ver."""
    return gotrace_layout(typ)[1] if ver == GOTRACE else SPECS[typ].stack


def value_count(typ: int, ver: int) -> int:
    """How many values an event of this type has in a trace of version ver
    (its timestamp and, in 1005, sequence deltas included)."""
    spec = SPECS[typ]
    if ver == GOTRACE:
        nargs, stack = gotrace_layout(typ)
        return nargs + stack + (typ not in UNTIMED)  # a time delta first, as in 1.7+
    n = len(spec.args) + spec.stack
    if typ in UNTIMED:
        return n + 1 if ver < 1007 else n  # an unused value before 1.7
    n += 1 if ver >= 1007 else 2
    if typ == EV_GC_SWEEP_DONE and ver < 1009:
        n -= 2
    elif typ in (EV_GC_START, EV_GO_START, EV_GO_UNBLOCK) and ver < 1007:
        n -= 1
    elif typ == EV_STW_START and ver < 1010:
        n -= 1
    return n


@functools.cache
def layout(ver: int) -> tuple[bytes, bytes]:
    """Per event type, in a trace of version ver: how many values it has
    (``value_count``; 0 where the type does not exist yet), and whether the
    last of them is a stack id. Made once per version, for the decoders'
    per-event loops."""
    counts, stacks = bytearray(64), bytearray(64)
    for t in range(1, EV_COUNT):
        if SPECS[t].since <= ver:
            counts[t] = value_count(t, ver)
            stacks[t] = has_stack(t, ver)
    return bytes(counts), bytes(stacks)
