"""The event model: one for every trace format version.

Its kinds and fields follow Go's own reader (golang.org/x/exp/trace), so
that tools written against either read alike. An :class:`Event` is a thin
record; strings and stacks are looked up in its :class:`Tables` (those of
its generation, or of its legacy trace) only when asked for.
"""

from __future__ import annotations

import enum
import time as _time
from dataclasses import dataclass

from livetrace._trace.model.tables import Tables
from livetrace._trace.spec.modern import SPECS


class _Named(enum.IntEnum):
    """An enum that prints as Go's reader names it (``Log``, ``Running``),
    as the JSON lines do; ``repr`` and ``int`` still give the number."""

    def _name(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self._name()

    def __format__(self, spec: str) -> str:
        try:
            return format(self._name(), spec)
        except ValueError:  # a numeric format: the number
            return int.__format__(self, spec)


class Kind(_Named):
    """What an event is; ``str`` gives its name as in Go's reader (``Log``)."""

    BAD = 0
    SYNC = 1
    METRIC = 2
    LABEL = 3
    STACK_SAMPLE = 4
    RANGE_BEGIN = 5
    RANGE_ACTIVE = 6
    RANGE_END = 7
    TASK_BEGIN = 8
    TASK_END = 9
    REGION_BEGIN = 10
    REGION_END = 11
    LOG = 12
    STATE_TRANSITION = 13
    EXPERIMENTAL = 14

    def _name(self) -> str:
        return KIND_NAMES[self]


KIND_NAMES = ["Bad", "Sync", "Metric", "Label", "StackSample", "RangeBegin", "RangeActive", "RangeEnd",
              "TaskBegin", "TaskEnd", "RegionBegin", "RegionEnd", "Log", "StateTransition", "Experimental"]


class GoState(_Named):
    UNDETERMINED = 0
    NOT_EXIST = 1
    RUNNABLE = 2
    RUNNING = 3
    WAITING = 4
    SYSCALL = 5

    def _name(self) -> str:
        return GO_STATE_NAMES[self]


class ProcState(_Named):
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

KIND_OF_CODE = [Kind.BAD] * 256
for _codes, _kind in [
    ((7,), Kind.STACK_SAMPLE), ((9, 37, 38), Kind.METRIC), ((39,), Kind.LABEL),
    ((26, 29, 32, 35), Kind.RANGE_BEGIN), ((28, 31, 34), Kind.RANGE_ACTIVE), ((27, 30, 33, 36), Kind.RANGE_END),
    ((40,), Kind.TASK_BEGIN), ((41,), Kind.TASK_END), ((42,), Kind.REGION_BEGIN), ((43,), Kind.REGION_END),
    ((44,), Kind.LOG), (tuple(range(10, 26)) + (45, 46, 47, 48), Kind.STATE_TRANSITION),
    (tuple(range(128, 137)), Kind.EXPERIMENTAL), ((SYNC_CODE,), Kind.SYNC),
]:
    for _c in _codes:
        KIND_OF_CODE[_c] = _kind

# How many arguments (Event.args) and extra facts (Event.extra) an event of
# each code carries. Arguments are the wire's, less the timestamp delta, but
# for the events the reader makes or rewrites: a CPU sample keeps its stack,
# a stop-the-world end names its kind, a Sync counts.
EVENT_NARGS = [0] * 256
for _c in (*range(9, 49), 51, *range(128, 137)):
    EVENT_NARGS[_c] = len(SPECS[_c].args) - 1  # type: ignore[union-attr]
EVENT_NARGS[7] = EVENT_NARGS[27] = EVENT_NARGS[SYNC_CODE] = 1
EVENT_NEXTRA = [0] * 256
EVENT_NEXTRA[12] = EVENT_NEXTRA[13] = EVENT_NEXTRA[25] = EVENT_NEXTRA[48] = 1  # the old state
EVENT_NEXTRA[41] = 2  # a task's parent and type

# Index (into Event.args, which leave out the timestamp) of the stack of the
# event's own execution context, per code; -1 when it has none.
STACK_ARG = [-1] * 256
for _c, _i in {7: 0, 9: 1, 14: 2, 19: 1, 20: 1, 21: 2, 22: 1, 26: 1, 29: 1, 32: 0, 35: 0, 40: 3, 41: 1,
               42: 2, 43: 2, 44: 3, 47: 2, 48: 3}.items():
    STACK_ARG[_c] = _i
# Indexes of string-id arguments, per code.
STRING_ARGS: dict[int, tuple[int, ...]] = {19: (0,), 20: (0,), 26: (0,), 39: (0,), 40: (2,), 42: (1,), 43: (1,),
                                           44: (1, 2)}


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

    __slots__ = ("code", "time", "m", "p", "g", "args", "gen", "extra")

    def __init__(self, code: int, time: int, m: int, p: int, g: int, args: list[int], gen: Tables | None,
                 extra: tuple[int, ...] = ()) -> None:
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
        if c in (26, 27):
            return f"stop-the-world ({_str(self.string(self.args[0]))})", Resource("Goroutine", self.g)
        if c in (28, 29, 30):
            return "GC concurrent mark phase", Resource("None")
        if c in (31, 32, 33):
            return "GC incremental sweep", Resource("Proc", self.args[0] if c == 31 else self.p)
        return "GC mark assist", Resource("Goroutine", self.args[0] if c == 34 else self.g)

    def range_attributes(self) -> list[tuple[str, int]]:
        self._need(Kind.RANGE_END)
        if self.code != 33:
            return []
        return [("bytes swept", self.args[0]), ("bytes reclaimed", self.args[1])]

    def task(self) -> tuple[int, int, str]:
        """(id, parent id, type); the parent is NO_TASK when there is none."""
        self._need(Kind.TASK_BEGIN, Kind.TASK_END)
        if self.code == 40:
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
        return StateTransition(Resource(res, rid), names[old], names[new], _str(reason),
                               None if stack is None else self.frames(stack))

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
        return spec.name, list(zip(spec.args[1:], self.args))

    def __repr__(self) -> str:
        return f"<Event {self.kind_name} t={self.time} M={self.m} P={self.p} G={self.g} code={self.code}>"


METRIC_NAMES = {9: "/sched/gomaxprocs:threads", 37: "/memory/classes/heap/objects:bytes", 38: "/gc/heap/goal:bytes"}


def transition_parts(e: Event) -> tuple[str, int, int, int, bytes, int | None]:
    """(resource kind, id, old state, new state, reason, transition stack id or None)."""
    c, a = e.code, e.args
    if c == 10:
        return "Proc", a[0], ProcState.IDLE, ProcState.RUNNING, b"", None
    if c == 11:
        return "Proc", e.p, ProcState.RUNNING, ProcState.IDLE, b"", None
    if c == 12:
        before = ProcState.IDLE if e.extra[0] == PROC_SYSCALL_ABANDONED else ProcState.RUNNING
        return "Proc", a[0], before, ProcState.IDLE, b"", None
    if c == 13:
        return "Proc", a[0], e.extra[0], PROC_STATUS_STATE[a[1]], b"", None
    if c in (14, 47):
        return "Goroutine", a[0], GoState.NOT_EXIST, GoState.WAITING if c == 47 else GoState.RUNNABLE, b"", a[1]
    if c == 15:
        return "Goroutine", a[0], GoState.NOT_EXIST, GoState.SYSCALL, b"", None
    if c == 16:
        return "Goroutine", a[0], GoState.RUNNABLE, GoState.RUNNING, b"", None
    if c == 17:
        return "Goroutine", e.g, GoState.RUNNING, GoState.NOT_EXIST, b"", None
    if c == 18:
        return "Goroutine", e.g, GoState.SYSCALL, GoState.NOT_EXIST, b"", None
    if c in (19, 20):
        return ("Goroutine", e.g, GoState.RUNNING, GoState.RUNNABLE if c == 19 else GoState.WAITING,
                e.string(a[0]), a[1] or None)
    if c in (21, 45, 46):
        return "Goroutine", a[0], GoState.WAITING, GoState.RUNNABLE, b"", None
    if c == 22:
        return "Goroutine", e.g, GoState.RUNNING, GoState.SYSCALL, b"", a[1] or None
    if c == 23:
        return "Goroutine", e.g, GoState.SYSCALL, GoState.RUNNING, b"", None
    if c == 24:
        return "Goroutine", e.g, GoState.SYSCALL, GoState.RUNNABLE, b"", None
    # GoStatus, GoStatusStack
    stack = (a[3] or None) if c == 48 else None
    return "Goroutine", a[0], e.extra[0], GO_STATUS_STATE[a[2]], b"", stack


def format_wall(sec: int, nsec: int) -> str:
    """Go's time.RFC3339Nano in UTC."""
    base = _time.strftime("%Y-%m-%dT%H:%M:%S", _time.gmtime(sec))
    frac = f".{nsec:09d}".rstrip("0") if nsec else ""
    return f"{base}{frac.rstrip('.')}Z"
