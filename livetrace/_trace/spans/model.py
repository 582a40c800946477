"""The span model: what a derived interval is.

(Skeleton: the spans helper fills in SpanBatch and the builder.)
"""

from __future__ import annotations

from dataclasses import dataclass

from livetrace._trace.model.events import Resource, StackFrame
from livetrace._trace.spec.kinds import NamedEnum


class SpanKind(NamedEnum):
    RUNNING = 0  # a goroutine on a P
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


@dataclass(frozen=True, slots=True)
class Span:
    kind: SpanKind
    resource: Resource
    start: int  # ns, on the trace's time line
    end: int
    reason: str = ""  # why blocked, why stopped
    name: str = ""  # a region's or task's type
    task: int = 0  # the task a region or task span belongs to (0: none)
    start_stack: list[StackFrame] | None = None
    end_stack: list[StackFrame] | None = None
    logs: tuple[tuple[str, str], ...] = ()  # (category, message) logged within a task or region

    @property
    def duration(self) -> int:
        return self.end - self.start
