"""The span model: what a derived interval is.

A span is the time a resource spent in one state (a goroutine running,
runnable, blocked, in a system call) or inside one range (a GC cycle, a
stop-the-world, a mark assist, a user region or task). The builder
(``spans.builder``) derives them from the events' state transitions and
ranges; ``spans.batch`` stores them as columns.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import IntFlag

from livetrace._trace.model.events import Resource, StackFrame
from livetrace._trace.spec.kinds import NamedEnum


class SpanKind(NamedEnum):
    RUNNING = 0  # a goroutine on a P, or a P held by an M (resource Proc)
    RUNNABLE = 1  # a goroutine waiting to run (scheduler latency)
    BLOCKED = 2  # a goroutine waiting; ``reason`` says on what
    SYSCALL = 3  # a goroutine in a system call
    GC = 4  # a garbage collection cycle (the whole program)
    STW = 5  # a stop-the-world; ``reason`` says why
    MARK_ASSIST = 6  # a goroutine helping the GC mark
    REGION = 7  # a user region on a goroutine; ``name`` is its type
    TASK = 8  # a user task (the whole program); ``name`` is its type

    def _name(self) -> str:
        return SPAN_KIND_NAMES[self]


SPAN_KIND_NAMES = ["running", "runnable", "blocked", "syscall", "gc", "stw", "mark-assist", "region", "task"]

# What a span's resource is, by SpanBatch.resource_kinds value.
RESOURCE_KINDS = ("None", "Goroutine", "Proc")
RES_NONE, RES_GOROUTINE, RES_PROC = 0, 1, 2


class Follow(IntFlag):
    """What a span builder follows beside the ranges (GCs, stop-the-worlds,
    mark assists, regions and tasks, which it always follows): most of a
    trace's events are goroutines' and Ps' transitions, and a view of GC
    pauses or of blocked goroutines needs none of them, nor the logs."""

    GOROUTINES = 1  # goroutines' states: their running, runnable, blocked and syscall spans
    PROCS = 2  # Ps' running spans
    LOGS = 4  # the logs of tasks and regions (without: their spans have none)
    STATES = 3  # every span, but no logs
    ALL = 7


# What the spans of each kind need followed: a kind not here, the ranges alone.
_FOLLOWED_FOR = {
    SpanKind.RUNNING: Follow.STATES,  # (a goroutine's, and a P's)
    SpanKind.RUNNABLE: Follow.GOROUTINES,
    SpanKind.BLOCKED: Follow.GOROUTINES,
    SpanKind.SYSCALL: Follow.GOROUTINES,
    SpanKind.REGION: Follow.LOGS,
    SpanKind.TASK: Follow.LOGS,
}


def follow_for(kinds: Collection[int] | None) -> Follow:
    """What a builder must follow for spans of ``kinds`` (None: every kind)."""
    if kinds is None:
        return Follow.ALL
    f = Follow(0)
    for k in kinds:
        f |= _FOLLOWED_FOR.get(k, Follow(0))  # type: ignore[call-overload]  # an int finds its SpanKind
    return f


# SpanBatch.flags bits.
SPAN_CLIPPED_START = 1  # under way when the trace (or a gap) began: start is when it was first seen
SPAN_CLIPPED_END = 2  # its end was not seen: end is the trace's last event (a region: its goroutine's exit)

# The most log messages a task or region span keeps (the first ones): an
# open task or region holds them until it ends.
MAX_SPAN_LOGS = 64


@dataclass(frozen=True, slots=True)
class Span:
    kind: SpanKind
    resource: Resource
    start: int  # ns, on the trace's time line
    end: int
    # Why blocked (the transition's reason: "chan receive", "sync", "network",
    # "select", ...), why a runnable goroutine stopped ("preempted", ...),
    # why the world stopped.
    reason: str = ""
    # A region's or task's type; for a goroutine's running, runnable, blocked
    # or syscall span, the innermost user region it was in when it began.
    name: str = ""
    task: int = 0  # the task a region or task span belongs to (0: none); a goroutine span's region's task
    # The stacks of the events that began and ended the span (the event's
    # own stack, the one Go's pprof-like profiles attribute time to: the
    # goroutine's own when it blocks, the waker's when it is unblocked, the
    # creator's when it is created); None where the event has none.
    start_stack: list[StackFrame] | None = None
    end_stack: list[StackFrame] | None = None
    # (category, message) logged in a task (a task span) or on a region's
    # goroutine in its task while it was open (a region span); the first
    # MAX_SPAN_LOGS.
    logs: tuple[tuple[str, str], ...] = ()
    task_name: str = ""  # the type of the span's task, where its begin was seen
    clipped_start: bool = False  # under way when the trace or a gap began: start is when first seen
    # Its end was not seen: end is the trace's last event; for a region
    # whose goroutine exited inside it, the goroutine's exit.
    clipped_end: bool = False
    # The P: a P span's own; for a goroutine's running span, the P it ran
    # on (-1 if the trace does not say); -1 for every other span.
    proc: int = -1

    @property
    def duration(self) -> int:
        return self.end - self.start
