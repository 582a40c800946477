"""What a subscriber wants to see: a :class:`Filter`.

A filter is plain data. Its fields combine with AND; the values within one
field with OR; a field left at ``None`` selects everything. The core turns
it into lookup tables per generation (string and stack ids that match), so
choosing events or spans costs no Python object per event; only
``predicate``, the last resort, sees objects, and only those the other
fields kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from livetrace._trace.model.events import Event
from livetrace._trace.spans.model import Span, SpanKind
from livetrace._trace.spec.kinds import Kind


@dataclass(frozen=True)
class Filter:
    """Which events or spans to keep.

    - ``kinds``: event kinds (:class:`Kind`) for events, span kinds
      (:class:`SpanKind`) for spans;
    - ``goroutines``: an event's goroutine; a span whose resource is one
      of these goroutines;
    - ``procs``: an event's P; for spans, a P's running spans and the
      running spans of the goroutines on that P (``Span.proc``): a
      goroutine's other spans (runnable, blocked, ...) are on no P;
    - ``tasks``, ``regions``, ``logs``: glob patterns (``fnmatch``,
      case-sensitive) on task types, region types and log categories.
      ``regions`` keeps RegionBegin and RegionEnd events of a matching type,
      ``logs`` Log events of a matching category. ``tasks`` keeps the
      TaskBegin and TaskEnd events of a task of a matching type, and the
      RegionBegin, RegionEnd and Log events that name such a task, from its
      TaskBegin (seen in the same stream) to its TaskEnd;
    - ``min_duration``: ns; spans only (events have no duration);
    - ``stack``: a regular expression searched in each frame's
      ``function file:line``; an event or span is kept when any frame of its
      stack (either stack, for a span) matches (an event without a stack
      never does);
    - ``predicate``: called last, on the objects the rest kept.
    """

    kinds: frozenset[Kind] | frozenset[SpanKind] | None = None
    goroutines: frozenset[int] | None = None
    procs: frozenset[int] | None = None
    tasks: tuple[str, ...] | None = None
    regions: tuple[str, ...] | None = None
    logs: tuple[str, ...] | None = None
    min_duration: int | None = None
    stack: re.Pattern[str] | None = None
    predicate: Callable[[Event | Span], bool] | None = None
