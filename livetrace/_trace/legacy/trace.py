"""A legacy trace's events and the trace itself: the records that reading, merging, checking and converting share."""

from __future__ import annotations

from dataclasses import dataclass, field

from livetrace._trace.spec.legacy import (
    EV_GO_START,
    EV_GO_START_LOCAL,
    EV_GO_SYS_EXIT,
    EV_GO_SYS_EXIT_LOCAL,
    EV_GO_UNBLOCK,
    EV_GO_UNBLOCK_LOCAL,
    SPECS,
)
from livetrace._trace.version import TraceVersion

TIME_ORDER = "time stamps out of order"
LOCAL_TO_PLAIN = {
    EV_GO_START_LOCAL: EV_GO_START,
    EV_GO_UNBLOCK_LOCAL: EV_GO_UNBLOCK,
    EV_GO_SYS_EXIT_LOCAL: EV_GO_SYS_EXIT,
}

# Goroutine states, as the merge across Ps and the state checks track them.
G_DEAD, G_RUNNABLE, G_RUNNING, G_WAITING = range(4)


class LegacyEvent:
    """One event of a legacy trace: ``ts`` in ticks until the trace is
    complete, then nanoseconds since its first event."""

    __slots__ = ("args", "g", "off", "p", "sargs", "seq", "stk", "ts", "typ")

    def __init__(self, off: int, typ: int, p: int, g: int) -> None:
        self.off = off
        self.typ = typ
        self.seq = 0
        self.ts = 0
        self.p = p
        self.g = g
        self.stk = 0
        self.args = [0, 0, 0]
        self.sargs: list[bytes] = []

    @property
    def name(self) -> str:
        return SPECS[self.typ].name

    def __repr__(self) -> str:
        return f"<LegacyEvent {self.name} ts={self.ts} p={self.p} g={self.g} off={self.off}>"


@dataclass
class LegacyTrace:
    version: TraceVersion
    events: list[LegacyEvent]
    stacks: dict[int, tuple[int, ...]]  # id -> values: PCs (1005) or (pc, func, file, line) per frame
    strings: dict[int, bytes]
    ticks_per_sec: int
    timer_goroutines: set[int] = field(default_factory=set)
    frames: dict[int, tuple[int, int, int]] = field(default_factory=dict)  # pc -> func, file (string ids), line
