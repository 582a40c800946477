"""A capture's decoded batches in, its units out: sans-IO, so that a file
(read.py) and a live session (fed from ``Session.event_batches``) cut units
the same way. A unit ends where the batches' tables change (a new
generation, a legacy trace's next segment); the spans are built here, in
order, by one SpanBuilder, and each unit gets the spans that ended in its
batches."""

from __future__ import annotations

from collections.abc import Callable

from livetrace._tables.build import Built, Unit, UnitBuilder
from livetrace._tables.captures import Capture
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.tables import Tables
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.builder import SpanBuilder
from livetrace._trace.spans.model import Follow

# A unit made ready to build: building it (once) is all that is left, and
# needs nothing the capture's later batches change (so another thread may
# do it while they are decoded). It gives the unit built as far as its
# order matters (UnitBuilder.build): Built.whole() makes the rest.
PendingUnit = Callable[[], Built]


class CaptureUnits:
    """:meth:`feed` a capture's EventBatches in order and get each unit as
    the next one begins; :meth:`close` at the capture's end gives the last
    (the spans still open cut there, and the capture's ``captures`` row).
    :meth:`feed_pending` and :meth:`close_pending` give each unit ready to
    build instead, to be built in order (by one thread at a time) while
    the next batches are fed. ``builder`` may be shared by several captures
    (one stacks table); ``compiled`` as for :func:`livetrace.open_decoder`."""

    def __init__(self, builder: UnitBuilder, capture: Capture, *, compiled: bool | None = None) -> None:
        self.capture = capture
        self._builder = builder
        # Every span, but not their logs: the logs table is made of the events.
        self._spans = SpanBuilder(compiled=compiled, follow=Follow.STATES)
        self._batches: list[EventBatch] = []
        self._span_batches: list[SpanBatch] = []
        self._gen: Tables | None = None

    def feed(self, batch: EventBatch) -> Unit | None:
        """The unit that ended before this batch, if it began a new one."""
        pending = self.feed_pending(batch)
        return None if pending is None else pending().whole()

    def feed_pending(self, batch: EventBatch) -> PendingUnit | None:
        """As :meth:`feed`, the unit ready to build."""
        unit = None
        if batch.gen is not None and batch.gen is not self._gen:
            if self._batches:
                unit = self._take(last=False)
            self._gen = batch.gen
        self._batches.append(batch)
        self._span_batches.append(self._spans.feed(batch))
        return unit

    def end_generation(self) -> PendingUnit | None:
        """The unit of the generation fed so far, known whole (None if none
        was fed since the last): without waiting for the next one's first
        batch, which :meth:`feed_pending` would."""
        return self._take(last=False) if self._batches else None

    def gap(self) -> None:
        """Generations were lost (a live session shed some): the spans open
        now are forgotten, as their ends would be wrong."""
        self._spans.gap()

    def close(self) -> Unit:
        """The capture's last unit, with its ``captures`` row."""
        return self.close_pending()().whole()

    def close_pending(self) -> PendingUnit:
        """As :meth:`close`, the unit ready to build."""
        return self._take(last=True)

    def _take(self, *, last: bool) -> PendingUnit:
        times = [b.times[-1] for b in self._batches if len(b)]
        counts = (times[-1], self._spans.open_counts()) if times else None  # before close() empties the builder
        if last:
            self._span_batches.append(self._spans.close())
        # The batches, let go of once built: whoever still holds this unit
        # (a loop's variable while the next unit is decoded) holds no more.
        held = [(self._batches, self._span_batches)]
        # The span names there are now: the builder's list grows as the next batches are fed.
        names_upto = len(self._spans.names)
        self._batches, self._span_batches = [], []

        def build() -> Built:
            batches, span_batches = held.pop()
            built = self._builder.build(self.capture.capture, batches, span_batches, counts, names_upto=names_upto)
            self.capture.saw(built.unit["events"])
            if last:
                built.unit["captures"] = self.capture.row()
                self._builder.forget(self.capture.capture)
            return built

        return build
