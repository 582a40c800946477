"""The gaps between a pprof session's windows, measured on the trace's own
clock where the decoded events allow it.

The session's frames carry each :class:`WindowGap` measured from bytes:
when the last byte of one window and the first byte of the next arrived.
That is longer than the untraced time, often by most of a window: a quiet
service's first bytes wait in it (net/http holds back even the response's
headers) until its runtime's buffers fill or the window ends. Decoding, the
gap is held until the next window's first item and measured from the last
event of one window to the first of the next:

- Go 1.22+: event times are the runtime's clock (nanotime on Linux), which
  the windows of one process share;
- Go 1.21 and older: a window's times count from its own first event, so
  the two windows are put on the runtime's tick counter, which they share:
  each window's first batch's ticks (:class:`LegacyTicks`, read off its
  bytes), converted with the earlier window's frequency.

Where neither holds (a window without events, a clock that goes back), the
gap is given as measured from bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from livetrace._errors import TraceFormatError
from livetrace._items import WindowGap
from livetrace._trace.decoder import Item
from livetrace._trace.framing import LegacyTicks
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.version import header_size, sniff

# A gap measured from events longer than the bytes' gap by more than this
# is not believed (a clock that jumped, ticks that are not one counter):
# the bytes' gap stands. (It may be a little longer: a window's last bytes
# follow its last event by the time the runtime takes to stop the tracer.)
MOST_OVER_BYTES = 1.0  # seconds


@dataclasses.dataclass
class _Window:
    legacy: bool | None = None
    chunks: list[bytes] = dataclasses.field(default_factory=list)  # a legacy window's, until its ticks are read
    ticks: LegacyTicks | None = None  # a legacy window's tick clock, once read
    first: int | None = None  # the decoded time of its first event (ns)
    last: int | None = None  # of its last event so far

    def tick_clock(self) -> LegacyTicks | None:
        """Read off the window's bytes when first asked: only a pprof
        session asks, and a helper's legacy session costs no second pass."""
        chunks, self.chunks = self.chunks, []
        try:
            for data in chunks:
                if self.ticks is None:
                    self.ticks = LegacyTicks(data)
                else:
                    self.ticks.check(data)
        except TraceFormatError:
            self.legacy = None  # the decoder says what is wrong; the gap stays measured from bytes
        return self.ticks if self.legacy else None


class WindowGaps:
    """Fed what the session's decoder is fed and what it gives, in order:
    gives the items with each WindowGap measured and placed just before
    the next window's first item."""

    def __init__(self) -> None:
        self._window = _Window()
        self._before: _Window | None = None  # the window before the held gap
        self._held: WindowGap | None = None

    def chunk(self, data: bytes) -> None:
        """A chunk of the current window's bytes, before the decoder has it
        (which holds a legacy trace's chunks until its end anyway: keeping
        them here too costs no copy)."""
        w = self._window
        if w.legacy is None:
            try:
                w.legacy = sniff(data[: header_size(data)]).is_legacy
            except TraceFormatError:
                return  # the decoder says what is wrong
        if w.legacy:
            w.chunks.append(data)

    def segment_ended(self) -> None:
        """A helper's legacy segment ended: it has no window gap to measure."""
        self._window.chunks.clear()

    def gap(self, gap: WindowGap) -> None:
        """The gap after the current window: held until the next one's first item."""
        self._window.tick_clock()  # its bytes are let go now
        self._before, self._held, self._window = self._window, gap, _Window()

    def items(self, items: Iterator[Item]) -> Iterator[Item]:
        """The decoder's items, with the held gap, measured, before the first."""
        for item in items:
            if isinstance(item, EventBatch) and len(item):
                yield from self._release(item)
                w = self._window
                if w.first is None:
                    w.first = _first_time(item)
                w.last = item.times[-1]
            else:
                yield from self._release(None)
            yield item

    def flush(self) -> Iterator[WindowGap]:
        """The session ended: a gap still held, as measured from bytes."""
        yield from self._release(None)

    def _release(self, batch: EventBatch | None) -> Iterator[WindowGap]:
        gap, before = self._held, self._before
        if gap is None or before is None:
            return
        self._held = self._before = None
        seconds = self._measure(before, self._window, batch)
        if seconds is not None and 0 <= seconds <= gap.seconds + MOST_OVER_BYTES:
            gap = dataclasses.replace(gap, seconds=seconds, measured_from="events")
        yield gap

    @staticmethod
    def _measure(before: _Window, after: _Window, batch: EventBatch | None) -> float | None:
        """Seconds from the last event of before to the first of after,
        which begins with batch (None: with a notice), or None."""
        if before.first is None or before.last is None:
            return None
        if before.legacy is False and after.legacy is False:
            if batch is None:
                return None
            return (_first_time(batch) - before.last) / 1e9
        clock, next_clock = before.tick_clock(), after.tick_clock()
        if clock is not None and next_clock is not None:
            start, next_start, freq = clock.first, next_clock.first, clock.ticks_per_sec
            if start is None or next_start is None or not freq:
                return None
            # On the tick counter: the next window's start less the last event of this one.
            return (next_start - start) / freq - (before.last - before.first) / 1e9
        return None


def _first_time(batch: EventBatch) -> int:
    """The batch's first time that is a time (a legacy trace opens with a
    Sync at time -1)."""
    times = batch.times
    return next((t for t in times[:4] if t >= 0), times[0])
