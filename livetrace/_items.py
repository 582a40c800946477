"""What a trace stream yields besides events, defined once for every layer.

Every item a decoder, a session or a subscription yields is either events
(an :class:`~livetrace.Event`, an :class:`~livetrace.EventBatch`, a legacy
trace's :class:`Provisional` batch) or a :class:`Notice`: a gap, a legacy
segment boundary, a legacy footer, a subscriber's loss. Code that only
wants events can skip every notice, on any Go version, with
``isinstance(x, Notice)``. A session's raw frames add the
:class:`SegmentEnd` (and :class:`WindowEnd`) markers to the chunks.

Like h11's ``_events.py``, this module sits below the layers that make
and use these items: the decoder (``_trace``) makes them from plain values,
the protocol (``_protocol``) reads the helper's gap and segment frames into
them, and the shell (``_session``) and the views pass them on. It imports
only the base's ``_plural`` at run time (the event model's batch is named
for the type checker only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from livetrace._plural import plural

if TYPE_CHECKING:
    from livetrace._trace.model.batch import EventBatch

__all__ = [
    "Gap",
    "Notice",
    "Provisional",
    "SegmentEnd",
    "SegmentGap",
    "SpanMark",
    "SubscriberGap",
    "SymbolsResolved",
    "TraceGap",
    "WindowEnd",
    "WindowGap",
]


class Notice:
    """Something that happened to the stream rather than in the traced
    program. ``message`` (also ``str(notice)``) says what, in one line."""

    __slots__ = ()

    @property
    def message(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.message


# -- the helper's and the pprof windows' frames that decoders see --


@dataclass(frozen=True)
class Gap(Notice):
    """Generations the helper shed because the consumer fell behind.

    When ``discard_received`` is set, chunks of ``first_generation`` that
    already arrived belong to the shed generation and must be thrown away.
    """

    first_generation: int
    last_generation: int
    chunks: int
    bytes: int
    discard_received: bool

    @property
    def message(self) -> str:
        return (
            f"fell behind: the helper shed generations {self.first_generation}-{self.last_generation} "
            f"({self.bytes:,} bytes)"
        )


@dataclass(frozen=True)
class WindowGap(Gap):
    """No trace between two windows of a net/http/pprof session (each
    window is a trace of its own): ``seconds`` between window ``window``
    and the next. Nothing was shed: the generation fields are 0.

    ``measured_from`` says how: ``"events"``, from the last event of one
    window to the first of the next on the trace's own clock (what a
    session that decodes gives); ``"bytes"``, from the arrival of the
    last byte of one to that of the first byte of the next, on livetrace's
    monotonic clock (what the session's frames carry, and a recording
    shows): longer than the untraced time, often by most of a window, where
    a quiet service's first bytes wait in it until its buffers fill."""

    window: int = 0
    seconds: float = 0.0
    measured_from: str = "bytes"

    @property
    def message(self) -> str:
        pair = f"pprof windows {self.window} and {self.window + 1}"
        ms = f"{self.seconds * 1e3:.1f} ms"
        if self.measured_from == "events":
            return f"no trace for {ms} between {pair} (from the last event of one to the first of the next)"
        return (
            f"no trace between {pair}, whose bytes came {ms} apart (the untraced time is shorter where the "
            "service held the next window's first bytes back)"
        )


@dataclass(frozen=True)
class TraceGap(WindowGap):
    """Between two traces of a stream that holds complete traces one after
    another (a file, or what ``livetrace record -o -`` writes for a pprof
    session's windows): ``window`` is the number of the trace before it,
    from 1. Where ``measured``, ``seconds`` is the time from its last event
    to the next trace's first by their own clock, which Go 1.22+ traces of
    one machine share; a legacy trace's times count from its own start."""

    measured: bool = False
    measured_from: str = "events"  # where measured: the traces' clocks

    @property
    def message(self) -> str:
        pair = f"traces {self.window} and {self.window + 1} of the stream"
        if self.measured:
            return f"no trace for {self.seconds * 1e3:.1f} ms between {pair} (by their clocks)"
        return f"nothing traced between {pair}, for a time their clocks do not tell"


@dataclass(frozen=True)
class SegmentEnd:
    """A segment of a legacy trace is over and complete (the helper stopped
    the trace and restarts it); the next chunk is the next segment's header.
    Tracing was off from ``stop_unix_ns`` until that chunk was read."""

    segment: int
    stop_unix_ns: int


@dataclass(frozen=True)
class WindowEnd(SegmentEnd):
    """A window of a net/http/pprof session is over and complete: its trace
    ended with the response (``segment`` is the window's number, from 1;
    ``stop_unix_ns`` when its last byte arrived). The next chunk, if any,
    is the header of the next window's trace."""


# -- a legacy trace's live items --


@dataclass(frozen=True)
class Provisional:
    """Events of a legacy trace before its footer, in time order but for
    ``late`` events that arrived after later ones had already been delivered
    (a quiet P's buffer can fill long after its first event). Times are
    nanoseconds from the start of the first segment, estimated; stacks are
    ids (their frames come with the footer)."""

    events: EventBatch
    segment: int
    late: int = 0


@dataclass(frozen=True)
class SymbolsResolved(Notice):
    """The footer of a legacy trace (or of one segment) arrived: its
    ``events`` exact events, with resolved stacks, follow."""

    segment: int
    events: int
    stacks: int
    ticks_per_sec: int
    estimated_ticks_per_sec: float | None  # what the clock estimate had made of it, if it had one

    @property
    def message(self) -> str:
        est = self.estimated_ticks_per_sec
        off = f", estimate {100 * (est / self.ticks_per_sec - 1):+.4f}%" if est else ""
        return (
            f"footer: symbols resolved, {plural(self.events, 'exact event')}, {plural(self.stacks, 'stack')}, "
            f"{self.ticks_per_sec:,} ticks/s{off}"
        )


@dataclass(frozen=True)
class SegmentGap(Notice):
    """In segment mode, the runtime was not tracing between two segments."""

    segment: int  # the segment that ended
    stopped_unix_ns: int
    resumed_unix_ns: int
    why: str = "segment mode: the helper stopped and restarted the trace"

    @property
    def duration_ns(self) -> int:
        return max(0, self.resumed_unix_ns - self.stopped_unix_ns)

    @property
    def message(self) -> str:
        return f"not traced for {self.duration_ns / 1e6:.1f} ms: {self.why}"


# -- a subscriber's own --


@dataclass(frozen=True)
class SubscriberGap(Notice):
    """This subscriber fell behind and lost batches (the others did not):
    ``batches`` and ``events`` (items, for spans) dropped for it, starting
    at trace time ``first_time`` (ns; None if the first lost batch was
    empty) of generation ``first_generation`` (None if unknown)."""

    batches: int
    events: int
    first_time: int | None
    first_generation: int | None

    @property
    def message(self) -> str:
        where = "" if self.first_generation is None else f" from generation {self.first_generation}"
        when = "" if self.first_time is None else f" (time {self.first_time})"
        lost = f"{plural(self.batches, 'batch', 'batches')}, {plural(self.events, 'event')}"
        return f"subscriber fell behind: lost {lost}{where}{when}"


@dataclass(frozen=True)
class SpanMark(Notice):
    """For a span subscriber that asked for marks (``marks=True``): the
    spans of the ``events`` exact events decoded since the previous mark
    have all come before it, and ``open`` is how many spans are open now
    (the span builder's, by :class:`~livetrace.SpanKind`). A mark follows
    each generation's spans (each batch's, with one job), so that a view
    fed spans here and batches elsewhere can tell where each stream is,
    and knows the goroutines' states at the end of each generation."""

    events: int
    open: tuple[int, ...]

    @property
    def message(self) -> str:
        return f"spans up to here: those of {plural(self.events, 'event')}, {plural(sum(self.open), 'span')} open"
