"""The event table of the modern (Go 1.22+) trace format, one row per type code.

Codes are append-only across versions, so one table serves every version;
a version only cuts it at its last code (see ``last_code``).
"""

from __future__ import annotations

from dataclasses import dataclass

# Structural codes.
EV_EVENT_BATCH = 1
EV_STACKS = 2
EV_STACK = 3
EV_STRINGS = 4
EV_STRING = 5
EV_CPU_SAMPLES = 6
EV_CPU_SAMPLE = 7
EV_FREQUENCY = 8
EV_EXPERIMENTAL_BATCH = 49
EV_SYNC = 50
EV_CLOCK_SNAPSHOT = 51
EV_END_OF_GENERATION = 52

NO_THREAD = (1 << 64) - 1


@dataclass(frozen=True)
class EventSpec:
    code: int
    name: str
    args: tuple[str, ...]
    is_stack: bool = False  # followed by nframes x (pc, func, file, line)
    has_data: bool = False  # followed by a length and that many bytes
    experiment: int = 0


def _spec(code: int, name: str, *args: str, **kw: object) -> EventSpec:
    return EventSpec(code, name, args, **kw)  # type: ignore[arg-type]


_TABLE = [
    _spec(1, "EventBatch", "gen", "m", "time", "size"),
    _spec(2, "Stacks"),
    _spec(3, "Stack", "id", "nframes", is_stack=True),
    _spec(4, "Strings"),
    _spec(5, "String", "id", has_data=True),
    _spec(6, "CPUSamples"),
    _spec(7, "CPUSample", "time", "m", "p", "g", "stack"),
    _spec(8, "Frequency", "freq"),
    _spec(9, "ProcsChange", "dt", "procs_value", "stack"),
    _spec(10, "ProcStart", "dt", "p", "p_seq"),
    _spec(11, "ProcStop", "dt"),
    _spec(12, "ProcSteal", "dt", "p", "p_seq", "m"),
    _spec(13, "ProcStatus", "dt", "p", "pstatus"),
    _spec(14, "GoCreate", "dt", "new_g", "new_stack", "stack"),
    _spec(15, "GoCreateSyscall", "dt", "new_g"),
    _spec(16, "GoStart", "dt", "g", "g_seq"),
    _spec(17, "GoDestroy", "dt"),
    _spec(18, "GoDestroySyscall", "dt"),
    _spec(19, "GoStop", "dt", "reason_string", "stack"),
    _spec(20, "GoBlock", "dt", "reason_string", "stack"),
    _spec(21, "GoUnblock", "dt", "g", "g_seq", "stack"),
    _spec(22, "GoSyscallBegin", "dt", "p_seq", "stack"),
    _spec(23, "GoSyscallEnd", "dt"),
    _spec(24, "GoSyscallEndBlocked", "dt"),
    _spec(25, "GoStatus", "dt", "g", "m", "gstatus"),
    _spec(26, "STWBegin", "dt", "kind_string", "stack"),
    _spec(27, "STWEnd", "dt"),
    _spec(28, "GCActive", "dt", "gc_seq"),
    _spec(29, "GCBegin", "dt", "gc_seq", "stack"),
    _spec(30, "GCEnd", "dt", "gc_seq"),
    _spec(31, "GCSweepActive", "dt", "p"),
    _spec(32, "GCSweepBegin", "dt", "stack"),
    _spec(33, "GCSweepEnd", "dt", "swept_value", "reclaimed_value"),
    _spec(34, "GCMarkAssistActive", "dt", "g"),
    _spec(35, "GCMarkAssistBegin", "dt", "stack"),
    _spec(36, "GCMarkAssistEnd", "dt"),
    _spec(37, "HeapAlloc", "dt", "heapalloc_value"),
    _spec(38, "HeapGoal", "dt", "heapgoal_value"),
    _spec(39, "GoLabel", "dt", "label_string"),
    _spec(40, "UserTaskBegin", "dt", "task", "parent_task", "name_string", "stack"),
    _spec(41, "UserTaskEnd", "dt", "task", "stack"),
    _spec(42, "UserRegionBegin", "dt", "task", "name_string", "stack"),
    _spec(43, "UserRegionEnd", "dt", "task", "name_string", "stack"),
    _spec(44, "UserLog", "dt", "task", "key_string", "value_string", "stack"),
    _spec(45, "GoSwitch", "dt", "g", "g_seq"),
    _spec(46, "GoSwitchDestroy", "dt", "g", "g_seq"),
    _spec(47, "GoCreateBlocked", "dt", "new_g", "new_stack", "stack"),
    _spec(48, "GoStatusStack", "dt", "g", "m", "gstatus", "stack"),
    _spec(49, "ExperimentalBatch", "exp", "gen", "m", "time", has_data=True),
    _spec(50, "Sync"),
    _spec(51, "ClockSnapshot", "dt", "mono", "sec", "nsec"),
    _spec(52, "EndOfGeneration"),
    _spec(128, "Span", "dt", "id", "npages_value", "kindclass", experiment=1),
    _spec(129, "SpanAlloc", "dt", "id", "npages_value", "kindclass", experiment=1),
    _spec(130, "SpanFree", "dt", "id", experiment=1),
    _spec(131, "HeapObject", "dt", "id", "type", experiment=1),
    _spec(132, "HeapObjectAlloc", "dt", "id", "type", experiment=1),
    _spec(133, "HeapObjectFree", "dt", "id", experiment=1),
    _spec(134, "GoroutineStack", "dt", "id", "order", experiment=1),
    _spec(135, "GoroutineStackAlloc", "dt", "id", "order", experiment=1),
    _spec(136, "GoroutineStackFree", "dt", "id", experiment=1),
]

SPECS: list[EventSpec | None] = [None] * 256
for _s in _TABLE:
    SPECS[_s.code] = _s

# Each format version accepts codes up to its last one; Go 1.24 writes the
# 1.23 format and Go 1.27 the 1.26 one.
LAST_CODE = {22: 44, 23: 49, 25: 51, 26: 136}


def specs_for(minor: int) -> list[EventSpec | None]:
    """The table as the given format version knows it."""
    last = LAST_CODE[minor]
    return [s if s is not None and s.code <= last else None for s in SPECS]

