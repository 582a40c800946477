"""The kinds of the event model, as Go's own reader (golang.org/x/exp/trace)
has them: what the format tables map each event code to."""

from __future__ import annotations

import enum


class NamedEnum(enum.IntEnum):
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


class Kind(NamedEnum):
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


KIND_NAMES = [
    "Bad",
    "Sync",
    "Metric",
    "Label",
    "StackSample",
    "RangeBegin",
    "RangeActive",
    "RangeEnd",
    "TaskBegin",
    "TaskEnd",
    "RegionBegin",
    "RegionEnd",
    "Log",
    "StateTransition",
    "Experimental",
]


class RangeRole(enum.Enum):
    """An event's part in a range of time on one resource (a goroutine, a
    proc, or the whole program for a GC)."""

    BEGIN = "begin"
    ACTIVE = "active"  # the range was under way when the generation began
    END = "end"
