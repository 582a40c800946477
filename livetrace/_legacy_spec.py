"""The event table of the legacy trace format (Go 1.5 to 1.21), one row per
type code, with the names and argument labels Go 1.21's old parser prints.

Codes are append-only; a code exists from its ``since`` version on.
Versions are written as Go's old parser writes them: 1000*major + minor.
"""

from __future__ import annotations

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
    _s("None", 1005, False),
    _s("Batch", 1005, False, "p", "ticks"),  # 1005: p, seq, ticks
    _s("Frequency", 1005, False, "freq"),  # 1005: freq, unused
    _s("Stack", 1005, False, "id", "siz"),
    _s("Gomaxprocs", 1005, True, "procs"),
    _s("ProcStart", 1005, False, "thread"),
    _s("ProcStop", 1005, False),
    _s("GCStart", 1005, True, "seq"),  # 1005: no seq
    _s("GCDone", 1005, False),
    _s("STWStart", 1005, False, "kindid", sargs=("kind",)),  # before 1010: no kind
    _s("STWDone", 1005, False),
    _s("GCSweepStart", 1005, True),
    _s("GCSweepDone", 1005, False, "swept", "reclaimed"),  # before 1009: none
    _s("GoCreate", 1005, True, "g", "stack"),
    _s("GoStart", 1005, False, "g", "seq"),  # 1005: no seq
    _s("GoEnd", 1005, False),
    _s("GoStop", 1005, True),
    _s("GoSched", 1005, True),
    _s("GoPreempt", 1005, True),
    _s("GoSleep", 1005, True),
    _s("GoBlock", 1005, True),
    _s("GoUnblock", 1005, True, "g", "seq"),  # 1005: no seq
    _s("GoBlockSend", 1005, True),
    _s("GoBlockRecv", 1005, True),
    _s("GoBlockSelect", 1005, True),
    _s("GoBlockSync", 1005, True),
    _s("GoBlockCond", 1005, True),
    _s("GoBlockNet", 1005, True),
    _s("GoSysCall", 1005, True),
    _s("GoSysExit", 1005, False, "g", "seq", "ts"),
    _s("GoSysBlock", 1005, False),
    _s("GoWaiting", 1005, False, "g"),
    _s("GoInSyscall", 1005, False, "g"),
    _s("HeapAlloc", 1005, False, "mem"),
    _s("HeapGoal", 1005, False, "mem"),
    _s("TimerGoroutine", 1005, False, "g"),  # 1005: g, unused
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
# Events after which the P runs no goroutine.
ENDS_G = BLOCKING | {EV_GO_END, EV_GO_STOP, EV_GO_SCHED, EV_GO_PREEMPT, EV_GO_SYS_BLOCK}


def value_count(typ: int, ver: int) -> int:
    """How many values an event of this type has in a trace of version ver
    (its timestamp and, in 1005, sequence deltas included)."""
    spec = SPECS[typ]
    n = len(spec.args) + spec.stack
    if typ in (EV_BATCH, EV_FREQUENCY, EV_TIMER_GOROUTINE):
        return n + 1 if ver < 1007 else n  # an unused value before 1.7
    n += 1 if ver >= 1007 else 2
    if typ == EV_GC_SWEEP_DONE and ver < 1009:
        n -= 2
    elif typ in (EV_GC_START, EV_GO_START, EV_GO_UNBLOCK) and ver < 1007:
        n -= 1
    elif typ == EV_STW_START and ver < 1010:
        n -= 1
    return n
