"""The event table of the modern (Go 1.22+) trace format, one row per type code.

Codes are append-only across versions, so one table serves every version;
a version only cuts it at its last code (see ``LAST_CODE``).

A row says how the record is read off the wire (its arguments, a stack's
frames or a string's data after them) and what it is in the event model:
its kind, the arguments and extra facts an :class:`Event` of it carries,
and its part in a range. Argument names follow one rule the derived tables
rely on: ``stack`` is the stack of the event's own context, ``new_stack``
that of the goroutine it creates, and a name ending in ``_string`` is the
id of a string of the generation's table.
"""

from __future__ import annotations

from dataclasses import dataclass

from livetrace._trace.spec.kinds import Kind, RangeRole
from livetrace._trace.version import GO1_22, GO1_23, GO1_25, GO1_26, TraceVersion

# One constant per row (tests/test_spec.py checks them against the names).
EV_EVENT_BATCH = 1
EV_STACKS = 2
EV_STACK = 3
EV_STRINGS = 4
EV_STRING = 5
EV_CPU_SAMPLES = 6
EV_CPU_SAMPLE = 7
EV_FREQUENCY = 8
EV_PROCS_CHANGE = 9
EV_PROC_START = 10
EV_PROC_STOP = 11
EV_PROC_STEAL = 12
EV_PROC_STATUS = 13
EV_GO_CREATE = 14
EV_GO_CREATE_SYSCALL = 15
EV_GO_START = 16
EV_GO_DESTROY = 17
EV_GO_DESTROY_SYSCALL = 18
EV_GO_STOP = 19
EV_GO_BLOCK = 20
EV_GO_UNBLOCK = 21
EV_GO_SYSCALL_BEGIN = 22
EV_GO_SYSCALL_END = 23
EV_GO_SYSCALL_END_BLOCKED = 24
EV_GO_STATUS = 25
EV_STW_BEGIN = 26
EV_STW_END = 27
EV_GC_ACTIVE = 28
EV_GC_BEGIN = 29
EV_GC_END = 30
EV_GC_SWEEP_ACTIVE = 31
EV_GC_SWEEP_BEGIN = 32
EV_GC_SWEEP_END = 33
EV_GC_MARK_ASSIST_ACTIVE = 34
EV_GC_MARK_ASSIST_BEGIN = 35
EV_GC_MARK_ASSIST_END = 36
EV_HEAP_ALLOC = 37
EV_HEAP_GOAL = 38
EV_GO_LABEL = 39
EV_USER_TASK_BEGIN = 40
EV_USER_TASK_END = 41
EV_USER_REGION_BEGIN = 42
EV_USER_REGION_END = 43
EV_USER_LOG = 44
EV_GO_SWITCH = 45
EV_GO_SWITCH_DESTROY = 46
EV_GO_CREATE_BLOCKED = 47
EV_GO_STATUS_STACK = 48
EV_EXPERIMENTAL_BATCH = 49
EV_SYNC = 50
EV_CLOCK_SNAPSHOT = 51
EV_END_OF_GENERATION = 52
EV_SPAN = 128
EV_SPAN_ALLOC = 129
EV_SPAN_FREE = 130
EV_HEAP_OBJECT = 131
EV_HEAP_OBJECT_ALLOC = 132
EV_HEAP_OBJECT_FREE = 133
EV_GOROUTINE_STACK = 134
EV_GOROUTINE_STACK_ALLOC = 135
EV_GOROUTINE_STACK_FREE = 136

EXPERIMENT_ALLOC_FREE = 1  # GODEBUG=traceallocfree=1: heap spans, objects and goroutine stacks

NO_THREAD = (1 << 64) - 1

_TIME_DELTA = "dt"


@dataclass(frozen=True)
class EventSpec:
    code: int
    name: str
    args: tuple[str, ...]  # on the wire; a timed event's first is its time delta
    is_stack: bool = False  # followed by nframes x (pc, func, file, line)
    has_data: bool = False  # followed by a length and that many bytes
    experiment: int = 0
    kind: Kind | None = None  # in the event model; None: a structural record, never an event
    event_args: tuple[str, ...] = ()  # what Event.args holds
    extra: tuple[str, ...] = ()  # what Event.extra holds: facts the ordering engine learns
    range_role: RangeRole | None = None
    # The range's other end: for a begin, the event that ends it; for an
    # end or an active marker, the event that begins it.
    range_other: int = 0

    @property
    def timed(self) -> bool:
        """Whether it stands in a thread's event batch, after a time delta."""
        return self.args[:1] == (_TIME_DELTA,)

    @property
    def stack_arg(self) -> int:
        """Index into Event.args of the stack of the event's own context, -1 for none."""
        return self.event_args.index("stack") if "stack" in self.event_args else -1

    @property
    def new_stack_arg(self) -> int:
        """Index into Event.args of the stack of a goroutine it creates, -1 for none."""
        return self.event_args.index("new_stack") if "new_stack" in self.event_args else -1

    @property
    def string_args(self) -> tuple[int, ...]:
        """Indexes into Event.args of string ids of the generation's table."""
        return tuple(i for i, a in enumerate(self.event_args) if a.endswith("_string"))


def _spec(
    code: int,
    name: str,
    *args: str,
    kind: Kind | None = None,
    event_args: tuple[str, ...] | None = None,
    is_stack: bool = False,
    has_data: bool = False,
    experiment: int = 0,
    extra: tuple[str, ...] = (),
    range_role: RangeRole | None = None,
    range_other: int = 0,
) -> EventSpec:
    if event_args is None:  # the wire's, less the time delta
        event_args = args[1:] if args[:1] == (_TIME_DELTA,) else ()
    return EventSpec(code, name, args, is_stack, has_data, experiment, kind, event_args, extra, range_role, range_other)


_K = Kind
BEGIN, ACTIVE, END = RangeRole.BEGIN, RangeRole.ACTIVE, RangeRole.END
_TRANSITION = _K.STATE_TRANSITION
_OLD = ("old_state",)  # the state the ordering engine found the resource in

_TABLE = [
    _spec(EV_EVENT_BATCH, "EventBatch", "gen", "m", "time", "size"),
    _spec(EV_STACKS, "Stacks"),
    _spec(EV_STACK, "Stack", "id", "nframes", is_stack=True),
    _spec(EV_STRINGS, "Strings"),
    _spec(EV_STRING, "String", "id", has_data=True),
    _spec(EV_CPU_SAMPLES, "CPUSamples"),
    # Read from the generation's table, made an event by the reader: it keeps its stack.
    _spec(EV_CPU_SAMPLE, "CPUSample", "time", "m", "p", "g", "stack", kind=_K.STACK_SAMPLE, event_args=("stack",)),
    _spec(EV_FREQUENCY, "Frequency", "freq"),
    _spec(EV_PROCS_CHANGE, "ProcsChange", "dt", "procs_value", "stack", kind=_K.METRIC),
    _spec(EV_PROC_START, "ProcStart", "dt", "p", "p_seq", kind=_TRANSITION),
    _spec(EV_PROC_STOP, "ProcStop", "dt", kind=_TRANSITION),
    # Its extra: the proc's wire status (Syscall or SyscallAbandoned) before the steal.
    _spec(EV_PROC_STEAL, "ProcSteal", "dt", "p", "p_seq", "m", kind=_TRANSITION, extra=("old_status",)),
    _spec(EV_PROC_STATUS, "ProcStatus", "dt", "p", "pstatus", kind=_TRANSITION, extra=_OLD),
    _spec(EV_GO_CREATE, "GoCreate", "dt", "new_g", "new_stack", "stack", kind=_TRANSITION),
    _spec(EV_GO_CREATE_SYSCALL, "GoCreateSyscall", "dt", "new_g", kind=_TRANSITION),
    _spec(EV_GO_START, "GoStart", "dt", "g", "g_seq", kind=_TRANSITION),
    _spec(EV_GO_DESTROY, "GoDestroy", "dt", kind=_TRANSITION),
    _spec(EV_GO_DESTROY_SYSCALL, "GoDestroySyscall", "dt", kind=_TRANSITION),
    _spec(EV_GO_STOP, "GoStop", "dt", "reason_string", "stack", kind=_TRANSITION),
    _spec(EV_GO_BLOCK, "GoBlock", "dt", "reason_string", "stack", kind=_TRANSITION),
    _spec(EV_GO_UNBLOCK, "GoUnblock", "dt", "g", "g_seq", "stack", kind=_TRANSITION),
    _spec(
        EV_GO_SYSCALL_BEGIN,
        "GoSyscallBegin",
        "dt",
        "p_seq",
        "stack",
        kind=_TRANSITION,
        range_role=BEGIN,
        range_other=EV_GO_SYSCALL_END,
    ),
    _spec(EV_GO_SYSCALL_END, "GoSyscallEnd", "dt", kind=_TRANSITION, range_role=END, range_other=EV_GO_SYSCALL_BEGIN),
    _spec(
        EV_GO_SYSCALL_END_BLOCKED,
        "GoSyscallEndBlocked",
        "dt",
        kind=_TRANSITION,
        range_role=END,
        range_other=EV_GO_SYSCALL_BEGIN,
    ),
    _spec(EV_GO_STATUS, "GoStatus", "dt", "g", "m", "gstatus", kind=_TRANSITION, extra=_OLD),
    _spec(
        EV_STW_BEGIN,
        "STWBegin",
        "dt",
        "kind_string",
        "stack",
        kind=_K.RANGE_BEGIN,
        range_role=BEGIN,
        range_other=EV_STW_END,
    ),
    # The reader gives the end the kind its begin named (a string of the
    # begin's generation, so not checked against the end's).
    _spec(
        EV_STW_END, "STWEnd", "dt", kind=_K.RANGE_END, event_args=("kind",), range_role=END, range_other=EV_STW_BEGIN
    ),
    _spec(EV_GC_ACTIVE, "GCActive", "dt", "gc_seq", kind=_K.RANGE_ACTIVE, range_role=ACTIVE, range_other=EV_GC_BEGIN),
    _spec(
        EV_GC_BEGIN, "GCBegin", "dt", "gc_seq", "stack", kind=_K.RANGE_BEGIN, range_role=BEGIN, range_other=EV_GC_END
    ),
    _spec(EV_GC_END, "GCEnd", "dt", "gc_seq", kind=_K.RANGE_END, range_role=END, range_other=EV_GC_BEGIN),
    _spec(
        EV_GC_SWEEP_ACTIVE,
        "GCSweepActive",
        "dt",
        "p",
        kind=_K.RANGE_ACTIVE,
        range_role=ACTIVE,
        range_other=EV_GC_SWEEP_BEGIN,
    ),
    _spec(
        EV_GC_SWEEP_BEGIN,
        "GCSweepBegin",
        "dt",
        "stack",
        kind=_K.RANGE_BEGIN,
        range_role=BEGIN,
        range_other=EV_GC_SWEEP_END,
    ),
    _spec(
        EV_GC_SWEEP_END,
        "GCSweepEnd",
        "dt",
        "swept_value",
        "reclaimed_value",
        kind=_K.RANGE_END,
        range_role=END,
        range_other=EV_GC_SWEEP_BEGIN,
    ),
    _spec(
        EV_GC_MARK_ASSIST_ACTIVE,
        "GCMarkAssistActive",
        "dt",
        "g",
        kind=_K.RANGE_ACTIVE,
        range_role=ACTIVE,
        range_other=EV_GC_MARK_ASSIST_BEGIN,
    ),
    _spec(
        EV_GC_MARK_ASSIST_BEGIN,
        "GCMarkAssistBegin",
        "dt",
        "stack",
        kind=_K.RANGE_BEGIN,
        range_role=BEGIN,
        range_other=EV_GC_MARK_ASSIST_END,
    ),
    _spec(
        EV_GC_MARK_ASSIST_END,
        "GCMarkAssistEnd",
        "dt",
        kind=_K.RANGE_END,
        range_role=END,
        range_other=EV_GC_MARK_ASSIST_BEGIN,
    ),
    _spec(EV_HEAP_ALLOC, "HeapAlloc", "dt", "heapalloc_value", kind=_K.METRIC),
    _spec(EV_HEAP_GOAL, "HeapGoal", "dt", "heapgoal_value", kind=_K.METRIC),
    _spec(EV_GO_LABEL, "GoLabel", "dt", "label_string", kind=_K.LABEL),
    _spec(EV_USER_TASK_BEGIN, "UserTaskBegin", "dt", "task", "parent_task", "name_string", "stack", kind=_K.TASK_BEGIN),
    # Its extra: the task's parent and type (an extra string of the
    # generation), from its begin, which may be in an earlier generation.
    _spec(EV_USER_TASK_END, "UserTaskEnd", "dt", "task", "stack", kind=_K.TASK_END, extra=("parent_task", "type")),
    _spec(
        EV_USER_REGION_BEGIN,
        "UserRegionBegin",
        "dt",
        "task",
        "name_string",
        "stack",
        kind=_K.REGION_BEGIN,
        range_role=BEGIN,
        range_other=EV_USER_REGION_END,
    ),
    _spec(
        EV_USER_REGION_END,
        "UserRegionEnd",
        "dt",
        "task",
        "name_string",
        "stack",
        kind=_K.REGION_END,
        range_role=END,
        range_other=EV_USER_REGION_BEGIN,
    ),
    _spec(EV_USER_LOG, "UserLog", "dt", "task", "key_string", "value_string", "stack", kind=_K.LOG),
    _spec(EV_GO_SWITCH, "GoSwitch", "dt", "g", "g_seq", kind=_TRANSITION),
    _spec(EV_GO_SWITCH_DESTROY, "GoSwitchDestroy", "dt", "g", "g_seq", kind=_TRANSITION),
    _spec(EV_GO_CREATE_BLOCKED, "GoCreateBlocked", "dt", "new_g", "new_stack", "stack", kind=_TRANSITION),
    _spec(EV_GO_STATUS_STACK, "GoStatusStack", "dt", "g", "m", "gstatus", "stack", kind=_TRANSITION, extra=_OLD),
    _spec(EV_EXPERIMENTAL_BATCH, "ExperimentalBatch", "exp", "gen", "m", "time", has_data=True),
    _spec(EV_SYNC, "Sync"),
    # Timed, but only ever in a sync batch: in an event batch it is an error.
    _spec(EV_CLOCK_SNAPSHOT, "ClockSnapshot", "dt", "mono", "sec", "nsec"),
    _spec(EV_END_OF_GENERATION, "EndOfGeneration"),
    _spec(
        EV_SPAN, "Span", "dt", "id", "npages_value", "kindclass", experiment=EXPERIMENT_ALLOC_FREE, kind=_K.EXPERIMENTAL
    ),
    _spec(
        EV_SPAN_ALLOC,
        "SpanAlloc",
        "dt",
        "id",
        "npages_value",
        "kindclass",
        experiment=EXPERIMENT_ALLOC_FREE,
        kind=_K.EXPERIMENTAL,
    ),
    _spec(EV_SPAN_FREE, "SpanFree", "dt", "id", experiment=EXPERIMENT_ALLOC_FREE, kind=_K.EXPERIMENTAL),
    _spec(EV_HEAP_OBJECT, "HeapObject", "dt", "id", "type", experiment=EXPERIMENT_ALLOC_FREE, kind=_K.EXPERIMENTAL),
    _spec(
        EV_HEAP_OBJECT_ALLOC,
        "HeapObjectAlloc",
        "dt",
        "id",
        "type",
        experiment=EXPERIMENT_ALLOC_FREE,
        kind=_K.EXPERIMENTAL,
    ),
    _spec(EV_HEAP_OBJECT_FREE, "HeapObjectFree", "dt", "id", experiment=EXPERIMENT_ALLOC_FREE, kind=_K.EXPERIMENTAL),
    _spec(
        EV_GOROUTINE_STACK,
        "GoroutineStack",
        "dt",
        "id",
        "order",
        experiment=EXPERIMENT_ALLOC_FREE,
        kind=_K.EXPERIMENTAL,
    ),
    _spec(
        EV_GOROUTINE_STACK_ALLOC,
        "GoroutineStackAlloc",
        "dt",
        "id",
        "order",
        experiment=EXPERIMENT_ALLOC_FREE,
        kind=_K.EXPERIMENTAL,
    ),
    _spec(
        EV_GOROUTINE_STACK_FREE,
        "GoroutineStackFree",
        "dt",
        "id",
        experiment=EXPERIMENT_ALLOC_FREE,
        kind=_K.EXPERIMENTAL,
    ),
]

SPECS: list[EventSpec | None] = [None] * 256
for _s in _TABLE:
    SPECS[_s.code] = _s
MAX_CODE = max(s.code for s in _TABLE)

# Each format version accepts codes up to its last one; Go 1.24 writes the
# 1.23 format and Go 1.27 the 1.26 one.
LAST_CODE = {
    GO1_22: EV_USER_LOG,
    GO1_23: EV_EXPERIMENTAL_BATCH,
    GO1_25: EV_CLOCK_SNAPSHOT,
    GO1_26: EV_GOROUTINE_STACK_FREE,
}


def specs_for(version: TraceVersion) -> list[EventSpec | None]:
    """The table as the given format version knows it."""
    last = LAST_CODE[version.format]
    return [s if s is not None and s.code <= last else None for s in SPECS]


def timed_specs() -> list[EventSpec]:
    """The rows that stand in a thread's event batch, after a time delta."""
    return [s for s in _TABLE if s.timed]


def range_begins() -> dict[int, int]:
    """Per code of a range's end or active marker, the code that begins the range."""
    return {s.code: s.range_other for s in _TABLE if s.range_role in (RangeRole.END, RangeRole.ACTIVE)}
