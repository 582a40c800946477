"""The event table of the legacy trace format (Go 1.5 to 1.21, and the
pre-release ``gotrace`` streams before them), one row per type code, with the
names and argument labels Go 1.21's old parser prints.

Codes are append-only; a code exists from its ``since`` version on. Where
an event's values differ between versions, :func:`value_count` says how,
after the version's predicates (:class:`TraceVersion`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from livetrace._trace.version import (
    GO1_5,
    GO1_7,
    GO1_8,
    GO1_9,
    GO1_11,
    GO1_19,
    GOTRACE,
    Family,
    TraceVersion,
)

(
    EV_NONE,
    EV_BATCH,
    EV_FREQUENCY,
    EV_STACK,
    EV_GOMAXPROCS,
    EV_PROC_START,
    EV_PROC_STOP,
    EV_GC_START,
    EV_GC_DONE,
    EV_STW_START,
    EV_STW_DONE,
    EV_GC_SWEEP_START,
    EV_GC_SWEEP_DONE,
    EV_GO_CREATE,
    EV_GO_START,
    EV_GO_END,
    EV_GO_STOP,
    EV_GO_SCHED,
    EV_GO_PREEMPT,
    EV_GO_SLEEP,
    EV_GO_BLOCK,
    EV_GO_UNBLOCK,
    EV_GO_BLOCK_SEND,
    EV_GO_BLOCK_RECV,
    EV_GO_BLOCK_SELECT,
    EV_GO_BLOCK_SYNC,
    EV_GO_BLOCK_COND,
    EV_GO_BLOCK_NET,
    EV_GO_SYSCALL,
    EV_GO_SYS_EXIT,
    EV_GO_SYS_BLOCK,
    EV_GO_WAITING,
    EV_GO_IN_SYSCALL,
    EV_HEAP_ALLOC,
    EV_HEAP_GOAL,
    EV_TIMER_GOROUTINE,
    EV_FUTILE_WAKEUP,
    EV_STRING,
    EV_GO_START_LOCAL,
    EV_GO_UNBLOCK_LOCAL,
    EV_GO_SYS_EXIT_LOCAL,
    EV_GO_START_LABEL,
    EV_GO_BLOCK_GC,
    EV_GC_MARK_ASSIST_START,
    EV_GC_MARK_ASSIST_DONE,
    EV_USER_TASK_CREATE,
    EV_USER_TASK_END,
    EV_USER_REGION,
    EV_USER_LOG,
    EV_CPU_SAMPLE,
) = range(50)
EV_COUNT = 50

# The pseudo-Ps Go's old parser puts some events on.
TIMER_P, NETPOLL_P, SYSCALL_P, GC_P, PROFILE_P = 1000001, 1000002, 1000003, 1000004, 1000005

# The pre-release Go 1.5 format (version GOTRACE, header "gotrace\0"; the
# runtime that wrote it is shared/seeds/000) is older than every numbered
# version, so the "before 1.x" rules hold for it (stacks are PCs, STW is per P
# and has no kind); where its wire differs, GOTRACE_LAYOUTS says so.


@dataclass(frozen=True)
class LegacySpec:
    name: str
    since: TraceVersion
    stack: bool  # a stack id follows the arguments
    args: tuple[str, ...]
    sargs: tuple[str, ...] = ()  # the strings Go's old parser prints after the arguments
    string_arg: int = -1  # the argument that names a string of the trace's table (its text: sargs[0])


def _s(
    name: str, since: TraceVersion, stack: bool, *args: str, sargs: tuple[str, ...] = (), string_arg: int = -1
) -> LegacySpec:
    return LegacySpec(name, since, stack, args, sargs, string_arg)


SPECS: list[LegacySpec] = [
    _s("None", GOTRACE, False),
    _s("Batch", GOTRACE, False, "p", "ticks"),  # 1.5/1.6: p, seq, ticks
    _s("Frequency", GOTRACE, False, "freq"),  # 1.5/1.6: freq, unused
    _s("Stack", GOTRACE, False, "id", "siz"),
    _s("Gomaxprocs", GOTRACE, True, "procs"),
    _s("ProcStart", GOTRACE, False, "thread"),
    _s("ProcStop", GOTRACE, False),
    _s("GCStart", GOTRACE, True, "seq"),  # 1.5/1.6: no seq
    _s("GCDone", GOTRACE, False),
    _s("STWStart", GOTRACE, False, "kindid", sargs=("kind",)),  # before 1.10: no kind
    _s("STWDone", GOTRACE, False),
    _s("GCSweepStart", GOTRACE, True),
    _s("GCSweepDone", GOTRACE, False, "swept", "reclaimed"),  # before 1.9: none
    _s("GoCreate", GOTRACE, True, "g", "stack"),
    _s("GoStart", GOTRACE, False, "g", "seq"),  # 1.5/1.6: no seq
    _s("GoEnd", GOTRACE, False),
    _s("GoStop", GOTRACE, True),
    _s("GoSched", GOTRACE, True),
    _s("GoPreempt", GOTRACE, True),
    _s("GoSleep", GOTRACE, True),
    _s("GoBlock", GOTRACE, True),
    _s("GoUnblock", GOTRACE, True, "g", "seq"),  # 1.5/1.6: no seq
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
    _s("TimerGoroutine", GOTRACE, False, "g"),  # 1.5/1.6: g, unused
    _s("FutileWakeup", GO1_5, False),
    _s("String", GO1_7, False),
    _s("GoStartLocal", GO1_7, False, "g"),
    _s("GoUnblockLocal", GO1_7, True, "g"),
    _s("GoSysExitLocal", GO1_7, False, "g", "ts"),
    _s("GoStartLabel", GO1_8, False, "g", "seq", "labelid", sargs=("label",), string_arg=2),
    _s("GoBlockGC", GO1_8, True),
    _s("GCMarkAssistStart", GO1_9, True),
    _s("GCMarkAssistDone", GO1_9, False),
    _s("UserTaskCreate", GO1_11, True, "taskid", "pid", "typeid", sargs=("name",), string_arg=2),
    _s("UserTaskEnd", GO1_11, True, "taskid"),
    _s("UserRegion", GO1_11, True, "taskid", "mode", "typeid", sargs=("name",), string_arg=2),
    _s("UserLog", GO1_11, True, "id", "keyid", sargs=("category", "message"), string_arg=1),
    _s("CPUSample", GO1_19, True, "ts", "p", "g"),
]
assert len(SPECS) == EV_COUNT
# Per type, the argument that names a string of the trace's table (-1: none).
STRING_ARG = tuple(s.string_arg for s in SPECS)

# Go 1.21's stop-the-world reasons; earlier versions only knew two kinds.
STW_REASONS_1021 = (
    "unknown",
    "GC mark termination",
    "GC sweep termination",
    "write heap dump",
    "goroutine profile",
    "goroutine profile cleanup",
    "all goroutines stack trace",
    "read mem stats",
    "AllThreadsSyscall",
    "GOMAXPROCS",
    "start trace",
    "stop trace",
    "CountPagesInUse (test)",
    "ReadMetricsSlow (test)",
    "ReadMemStatsSlow (test)",
    "PageCachePagesLeaked (test)",
    "ResetDebugLog (test)",
)
STW_KINDS_OLD = ("mark termination", "sweep termination")

BLOCKING = frozenset(
    (
        EV_GO_SLEEP,
        EV_GO_BLOCK,
        EV_GO_BLOCK_SEND,
        EV_GO_BLOCK_RECV,
        EV_GO_BLOCK_SELECT,
        EV_GO_BLOCK_SYNC,
        EV_GO_BLOCK_COND,
        EV_GO_BLOCK_NET,
        EV_GO_BLOCK_GC,
    )
)
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


def gotrace_layout(typ: int) -> tuple[int, bool]:
    """(argument count, stack) of an event type in a gotrace stream."""
    spec = SPECS[typ]
    return GOTRACE_LAYOUTS.get(typ, (len(spec.args), spec.stack))


def has_stack(typ: int, version: TraceVersion) -> bool:
    """Whether a stack id ends an event of this type."""
    return gotrace_layout(typ)[1] if version.family is Family.GOTRACE else SPECS[typ].stack


def value_count(typ: int, version: TraceVersion) -> int:
    """How many values an event of this type has in a trace of the given
    version (its timestamp and, in 1.5/1.6, sequence deltas included)."""
    spec = SPECS[typ]
    if version.family is Family.GOTRACE:
        nargs, stack = gotrace_layout(typ)
        return nargs + stack + (typ not in UNTIMED)  # a time delta first, as in 1.7+
    n = len(spec.args) + spec.stack
    if typ in UNTIMED:
        # 1.5/1.6: a batch starts the global sequence; the others carry an unused value.
        return n + version.has_global_seq
    n += 2 if version.has_global_seq else 1  # the time delta, and the sequence delta
    if typ == EV_GC_SWEEP_DONE and not version.has_sweep_stats:
        n -= 2
    elif (typ in (EV_GC_START, EV_GO_START, EV_GO_UNBLOCK) and not version.has_goroutine_seq) or (
        typ == EV_STW_START and not version.stw_has_kind
    ):
        n -= 1
    return n


@functools.cache
def layout(version: TraceVersion) -> tuple[bytes, bytes]:
    """Per event type, in a trace of the given version: how many values it
    has (``value_count``; 0 where the type does not exist yet), and whether
    the last of them is a stack id. Made once per version, for the decoders'
    per-event loops."""
    counts, stacks = bytearray(64), bytearray(64)
    for t in range(1, EV_COUNT):
        if SPECS[t].since <= version:
            counts[t] = value_count(t, version)
            stacks[t] = has_stack(t, version)
    return bytes(counts), bytes(stacks)
