"""The event model: one for every trace format version.

Its kinds and fields follow Go's own reader (golang.org/x/exp/trace), so
that tools written against either read alike. An :class:`Event` is a thin
record; strings and stacks are looked up in its :class:`Tables` (those of
its generation, or of its legacy trace) only when asked for.
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass

from livetrace._trace.model.tables import Tables
from livetrace._trace.spec.kinds import KIND_NAMES as KIND_NAMES  # re-exported: the model's public names
from livetrace._trace.spec.kinds import Kind as Kind
from livetrace._trace.spec.kinds import NamedEnum
from livetrace._trace.spec.modern import (
    EV_GC_ACTIVE,
    EV_GC_BEGIN,
    EV_GC_END,
    EV_GC_MARK_ASSIST_ACTIVE,
    EV_GC_SWEEP_ACTIVE,
    EV_GC_SWEEP_BEGIN,
    EV_GC_SWEEP_END,
    EV_GO_BLOCK,
    EV_GO_CREATE,
    EV_GO_CREATE_BLOCKED,
    EV_GO_CREATE_SYSCALL,
    EV_GO_DESTROY,
    EV_GO_DESTROY_SYSCALL,
    EV_GO_START,
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
    EV_USER_TASK_BEGIN,
    SPECS,
)


class GoState(NamedEnum):
    UNDETERMINED = 0
    NOT_EXIST = 1
    RUNNABLE = 2
    RUNNING = 3
    WAITING = 4
    SYSCALL = 5

    def _name(self) -> str:
        return GO_STATE_NAMES[self]


class ProcState(NamedEnum):
    UNDETERMINED = 0
    NOT_EXIST = 1
    RUNNING = 2
    IDLE = 3

    def _name(self) -> str:
        return PROC_STATE_NAMES[self]


GO_STATE_NAMES = ["Undetermined", "NotExist", "Runnable", "Running", "Waiting", "Syscall"]
PROC_STATE_NAMES = ["Undetermined", "NotExist", "Running", "Idle"]

# Wire status values (tracev2.GoStatus / ProcStatus) and what they mean.
GO_RUNNABLE, GO_RUNNING, GO_SYSCALL, GO_WAITING = 1, 2, 3, 4
PROC_RUNNING, PROC_IDLE, PROC_SYSCALL, PROC_SYSCALL_ABANDONED = 1, 2, 3, 4
GO_STATUS_STATE = [GoState.UNDETERMINED, GoState.RUNNABLE, GoState.RUNNING, GoState.SYSCALL, GoState.WAITING]
PROC_STATUS_STATE = [ProcState.UNDETERMINED, ProcState.RUNNING, ProcState.IDLE, ProcState.RUNNING, ProcState.IDLE]

NO_TASK = (1 << 64) - 1
SYNC_CODE = 255  # events the reader makes itself

# Per code, from the format table: the event's kind, how many arguments
# (Event.args) and extra facts (Event.extra) it carries, the index into its
# arguments of the stack of its own execution context (-1: none) and of a
# stack of a goroutine it creates, and the indexes of string-id arguments.
# A Sync, which the reader makes, carries one argument: its number.
KIND_OF_CODE = [Kind.BAD] * 256
EVENT_NARGS = [0] * 256
EVENT_NEXTRA = [0] * 256
STACK_ARG = [-1] * 256
NEW_STACK_ARG = [-1] * 256
STRING_ARGS: dict[int, tuple[int, ...]] = {}
for _s in SPECS:
    if _s is None:
        continue
    KIND_OF_CODE[_s.code] = Kind.BAD if _s.kind is None else _s.kind
    EVENT_NARGS[_s.code] = len(_s.event_args)
    EVENT_NEXTRA[_s.code] = len(_s.extra)
    STACK_ARG[_s.code] = _s.stack_arg
    NEW_STACK_ARG[_s.code] = _s.new_stack_arg
    if _s.string_args:
        STRING_ARGS[_s.code] = _s.string_args
KIND_OF_CODE[SYNC_CODE] = Kind.SYNC
EVENT_NARGS[SYNC_CODE] = 1


@dataclass(frozen=True, slots=True)
class StackFrame:
    func: str
    file: str
    line: int
    pc: int


@dataclass(frozen=True, slots=True)
class Resource:
    kind: str  # "None", "Goroutine" or "Proc"
    id: int = 0

    def __str__(self) -> str:
        return self.kind if self.kind == "None" else f"{self.kind}({self.id})"


@dataclass(frozen=True, slots=True)
class StateTransition:
    resource: Resource
    old: str
    new: str
    reason: str
    stack: list[StackFrame] | None  # None: the transition carries no stack


@dataclass(frozen=True, slots=True)
class ClockSnapshot:
    trace_ns: int
    mono_ns: int
    wall_sec: int
    wall_nsec: int

    @property
    def wall(self) -> float:
        return self.wall_sec + self.wall_nsec / 1e9


def _str(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def stack_frames(g: Tables | None, stack_id: int) -> list[StackFrame]:
    """The frames of a stack of the tables g, innermost first."""
    if not stack_id or g is None:
        return []
    out = []
    for pc in g.stacks[stack_id]:
        func, file, line = g.frames[pc]
        out.append(StackFrame(_str(g.strings[func]), _str(g.strings[file]), line, pc))
    return out


class Event:
    """One decoded event.

    ``time`` is nanoseconds on the trace clock; ``thread``, ``proc`` and
    ``goroutine`` are the scheduling context the event happened in (-1 for
    none). What else an event carries depends on its :attr:`kind`; the
    accessor for another kind raises ``ValueError``. ``gen`` is the
    :class:`Tables` its ids refer to (None for a trace's final Sync).
    """

    __slots__ = ("args", "code", "extra", "g", "gen", "m", "p", "time")

    def __init__(
        self,
        code: int,
        time: int,
        m: int,
        p: int,
        g: int,
        args: list[int],
        gen: Tables | None,
        extra: tuple[int, ...] = (),
    ) -> None:
        self.code = code
        self.time = time
        self.m = m
        self.p = p
        self.g = g
        self.args = args
        self.gen = gen
        self.extra = extra  # facts the ordering engine learned: old states, a task's parent and type

    # -- the common part --

    @property
    def kind(self) -> Kind:
        return KIND_OF_CODE[self.code]

    @property
    def kind_name(self) -> str:
        return KIND_NAMES[KIND_OF_CODE[self.code]]

    @property
    def thread(self) -> int:
        return self.m

    @property
    def proc(self) -> int:
        return self.p

    @property
    def goroutine(self) -> int:
        return self.g

    @property
    def wall_time(self) -> float | None:
        """Unix time of the event, where its generation has a clock snapshot
        (Go 1.25+), or, estimated, in a live legacy session."""
        base = None if self.gen is None else self.gen.wall_base
        return None if base is None else (base + self.time) / 1e9

    def stack_id(self) -> int:
        i = STACK_ARG[self.code]
        return self.args[i] if i >= 0 else 0

    def stack(self) -> list[StackFrame]:
        """The stack of the event's own execution context (empty if none)."""
        return self.frames(self.stack_id())

    def frames(self, stack_id: int) -> list[StackFrame]:
        return stack_frames(self.gen, stack_id)

    def string(self, sid: int) -> bytes:
        assert self.gen is not None
        return self.gen.strings[sid]

    def _need(self, *kinds: Kind) -> None:
        if self.kind not in kinds:
            raise ValueError(f"a {self.kind_name} event has no such details")

    # -- details per kind --

    def metric(self) -> tuple[str, int]:
        """(name, value): gomaxprocs, heap objects or heap goal."""
        self._need(Kind.METRIC)
        return METRIC_NAMES[self.code], self.args[0]

    def label(self) -> tuple[str, Resource]:
        self._need(Kind.LABEL)
        return _str(self.string(self.args[0])), Resource("Goroutine", self.g)

    def range(self) -> tuple[str, Resource]:
        """(name, scope) of a RangeBegin, RangeActive or RangeEnd."""
        self._need(Kind.RANGE_BEGIN, Kind.RANGE_ACTIVE, Kind.RANGE_END)
        c = self.code
        if c in (EV_STW_BEGIN, EV_STW_END):
            return f"stop-the-world ({_str(self.string(self.args[0]))})", Resource("Goroutine", self.g)
        if c in (EV_GC_ACTIVE, EV_GC_BEGIN, EV_GC_END):
            return "GC concurrent mark phase", Resource("None")
        if c in (EV_GC_SWEEP_ACTIVE, EV_GC_SWEEP_BEGIN, EV_GC_SWEEP_END):
            return "GC incremental sweep", Resource("Proc", self.args[0] if c == EV_GC_SWEEP_ACTIVE else self.p)
        return "GC mark assist", Resource("Goroutine", self.args[0] if c == EV_GC_MARK_ASSIST_ACTIVE else self.g)

    def range_attributes(self) -> list[tuple[str, int]]:
        self._need(Kind.RANGE_END)
        if self.code != EV_GC_SWEEP_END:
            return []
        return [("bytes swept", self.args[0]), ("bytes reclaimed", self.args[1])]

    def task(self) -> tuple[int, int, str]:
        """(id, parent id, type); the parent is NO_TASK when there is none."""
        self._need(Kind.TASK_BEGIN, Kind.TASK_END)
        if self.code == EV_USER_TASK_BEGIN:
            return self.args[0], self.args[1], _str(self.string(self.args[2]))
        assert self.gen is not None
        parent, name = self.extra
        return self.args[0], parent, _str(self.gen.extra_strings[name])

    def region(self) -> tuple[int, str]:
        """(task id, type)."""
        self._need(Kind.REGION_BEGIN, Kind.REGION_END)
        return self.args[0], _str(self.string(self.args[1]))

    def log(self) -> tuple[int, str, str]:
        """(task id, category, message)."""
        self._need(Kind.LOG)
        return self.args[0], _str(self.string(self.args[1])), _str(self.string(self.args[2]))

    def state_transition(self) -> StateTransition:
        self._need(Kind.STATE_TRANSITION)
        res, rid, old, new, reason, stack = transition_parts(self)
        names = GO_STATE_NAMES if res == "Goroutine" else PROC_STATE_NAMES
        return StateTransition(
            Resource(res, rid), names[old], names[new], _str(reason), None if stack is None else self.frames(stack)
        )

    def sync(self) -> tuple[int, ClockSnapshot | None]:
        """(n, clock snapshot): the n-th Sync of the trace."""
        self._need(Kind.SYNC)
        g = self.gen
        if g is None or not g.has_clock_snapshot:
            return self.args[0], None
        return self.args[0], ClockSnapshot(g.ns(g.snap_ticks), g.snap_mono, *g.snap_wall)

    def experimental(self) -> tuple[str, list[tuple[str, int]]]:
        self._need(Kind.EXPERIMENTAL)
        spec = SPECS[self.code]
        assert spec is not None
        return spec.name, list(zip(spec.event_args, self.args, strict=False))

    def __repr__(self) -> str:
        return f"<Event {self.kind_name} t={self.time} M={self.m} P={self.p} G={self.g} code={self.code}>"


METRIC_NAMES = {
    EV_PROCS_CHANGE: "/sched/gomaxprocs:threads",
    EV_HEAP_ALLOC: "/memory/classes/heap/objects:bytes",
    EV_HEAP_GOAL: "/gc/heap/goal:bytes",
}


def transition_parts(e: Event) -> tuple[str, int, int, int, bytes, int | None]:
    """(resource kind, id, old state, new state, reason, transition stack id or None)."""
    c, a = e.code, e.args
    if c == EV_PROC_START:
        return "Proc", a[0], ProcState.IDLE, ProcState.RUNNING, b"", None
    if c == EV_PROC_STOP:
        return "Proc", e.p, ProcState.RUNNING, ProcState.IDLE, b"", None
    if c == EV_PROC_STEAL:
        before = ProcState.IDLE if e.extra[0] == PROC_SYSCALL_ABANDONED else ProcState.RUNNING
        return "Proc", a[0], before, ProcState.IDLE, b"", None
    if c == EV_PROC_STATUS:
        return "Proc", a[0], e.extra[0], PROC_STATUS_STATE[a[1]], b"", None
    if c in (EV_GO_CREATE, EV_GO_CREATE_BLOCKED):
        new = GoState.WAITING if c == EV_GO_CREATE_BLOCKED else GoState.RUNNABLE
        return "Goroutine", a[0], GoState.NOT_EXIST, new, b"", a[1]
    if c == EV_GO_CREATE_SYSCALL:
        return "Goroutine", a[0], GoState.NOT_EXIST, GoState.SYSCALL, b"", None
    if c == EV_GO_START:
        return "Goroutine", a[0], GoState.RUNNABLE, GoState.RUNNING, b"", None
    if c == EV_GO_DESTROY:
        return "Goroutine", e.g, GoState.RUNNING, GoState.NOT_EXIST, b"", None
    if c == EV_GO_DESTROY_SYSCALL:
        return "Goroutine", e.g, GoState.SYSCALL, GoState.NOT_EXIST, b"", None
    if c in (EV_GO_STOP, EV_GO_BLOCK):
        return (
            "Goroutine",
            e.g,
            GoState.RUNNING,
            GoState.RUNNABLE if c == EV_GO_STOP else GoState.WAITING,
            e.string(a[0]),
            a[1] or None,
        )
    if c in (EV_GO_UNBLOCK, EV_GO_SWITCH, EV_GO_SWITCH_DESTROY):
        return "Goroutine", a[0], GoState.WAITING, GoState.RUNNABLE, b"", None
    if c == EV_GO_SYSCALL_BEGIN:
        return "Goroutine", e.g, GoState.RUNNING, GoState.SYSCALL, b"", a[1] or None
    if c == EV_GO_SYSCALL_END:
        return "Goroutine", e.g, GoState.SYSCALL, GoState.RUNNING, b"", None
    if c == EV_GO_SYSCALL_END_BLOCKED:
        return "Goroutine", e.g, GoState.SYSCALL, GoState.RUNNABLE, b"", None
    # GoStatus, GoStatusStack
    stack = (a[3] or None) if c == EV_GO_STATUS_STACK else None
    return "Goroutine", a[0], e.extra[0], GO_STATUS_STATE[a[2]], b"", stack


def format_wall(sec: int, nsec: int) -> str:
    """Go's time.RFC3339Nano in UTC."""
    base = _time.strftime("%Y-%m-%dT%H:%M:%S", _time.gmtime(sec))
    frac = f".{nsec:09d}".rstrip("0") if nsec else ""
    return f"{base}{frac.rstrip('.')}Z"
