"""What every rule of the ordering engine shares: goroutine and proc records, context checks, the error, emitting."""

from __future__ import annotations

from livetrace._errors import TraceFormatError
from livetrace._trace.model.events import (
    NEW_STACK_ARG,
    STACK_ARG,
    STRING_ARGS,
    Event,
)
from livetrace._trace.modern.generation import Generation
from livetrace._trace.spec.modern import SPECS

NO_ID = -1
MUST_NOT, MAY, MUST = 0, 1, 2
USER_GO = (MUST, MUST, MUST)  # thread, proc, goroutine

GO_STATUS_NAMES = ["Bad", "Runnable", "Running", "Syscall", "Waiting"]
PROC_STATUS_NAMES = ["Bad", "Running", "Idle", "Syscall", "SyscallAbandoned"]

Ctx = tuple[int, int, int]  # thread, proc, goroutine


# What the engine knows of the GC across the trace.
GC_UNDETERMINED, GC_NOT_RUNNING, GC_RUNNING = range(3)


class GState:
    __slots__ = ("id", "ranges", "regions", "seq", "seq_gen", "status")

    def __init__(self, gid: int, status: int, gen: int) -> None:
        self.id, self.status, self.seq_gen, self.seq = gid, status, gen, 0
        self.regions: list[tuple[int, bytes]] = []
        self.ranges: list[tuple[int, int]] = []


class PState:
    __slots__ = ("id", "ranges", "seq", "seq_gen", "status")

    def __init__(self, pid: int, status: int, gen: int) -> None:
        self.id, self.status, self.seq_gen, self.seq = pid, status, gen, 0
        self.ranges: list[tuple[int, int]] = []


def code_name(code: int) -> str:
    spec = SPECS[code]
    return spec.name if spec else f"Invalid({code})"


class OrderingError(TraceFormatError):
    """The trace's events contradict each other."""


def check_ctx(ctx: Ctx, reqs: tuple[int, int, int]) -> None:
    """Raise unless the context has (or lacks) a thread, proc and goroutine
    as the event requires."""
    if (ctx[0] == NO_ID, ctx[1] == NO_ID, ctx[2] == NO_ID) in _ALLOWED[reqs]:
        return
    for have, req, what in zip(ctx, reqs, ("a thread", "a proc", "a goroutine"), strict=True):
        if req == MUST and have == NO_ID:
            raise OrderingError(f"expected {what} but didn't have one")
        if req == MUST_NOT and have != NO_ID:
            raise OrderingError(f"expected no {what.split()[1]} but had one")


def _allowed(reqs: tuple[int, int, int]) -> frozenset[tuple[bool, bool, bool]]:
    """Which (no thread, no proc, no goroutine) combinations satisfy reqs."""

    def ok(missing: bool, req: int) -> bool:
        return not (req == MUST and missing) and not (req == MUST_NOT and not missing)

    return frozenset(
        (a, b, c)
        for a in (False, True)
        for b in (False, True)
        for c in (False, True)
        if ok(a, reqs[0]) and ok(b, reqs[1]) and ok(c, reqs[2])
    )


_ALLOWED = {r: _allowed(r) for r in [(x, y, z) for x in range(3) for y in range(3) for z in range(3)]}


def signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def check_ids(ev: Event, gen: Generation) -> None:
    """The stacks and strings an event names must be in its generation."""
    code, args = ev.code, ev.args
    i = STACK_ARG[code]
    if i >= 0 and args[i] not in gen.stacks:
        raise TraceFormatError(
            f"found invalid stack ID {args[i]} for event {code_name(code)}",
            generation=gen.gen,
        )
    i = NEW_STACK_ARG[code]
    if i >= 0 and args[i] not in gen.stacks:
        raise TraceFormatError(
            f"found invalid stack ID {args[i]} for event {code_name(code)}",
            generation=gen.gen,
        )
    for j in STRING_ARGS.get(code, ()):
        if args[j] not in gen.strings:
            raise TraceFormatError(
                f"found invalid string ID {args[j]} for event {code_name(code)}",
                generation=gen.gen,
            )


class OrderState:
    """The state that persists across generations, which every rule reads
    and changes, and the one way a rule emits an event."""

    def __init__(self) -> None:
        self.gs: dict[int, GState] = {}
        self.ps: dict[int, PState] = {}
        self.ms: dict[int, list[int]] = {}  # thread -> [proc, goroutine]
        self.tasks: dict[int, tuple[bytes, int]] = {}  # id -> type, parent
        self.gc_seq = 0
        self.gc_state = GC_UNDETERMINED
        self.initial_gen = 0
        self.out: list[Event] = []

    def _emit(
        self, code: int, time: int, ctx: Ctx, args: list[int], gen: Generation, extra: tuple[int, ...] = ()
    ) -> None:
        ev = Event(code, time, ctx[0], ctx[1], ctx[2], args, gen, extra)
        check_ids(ev, gen)
        self.out.append(ev)
