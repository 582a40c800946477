"""The tick clock of a live legacy trace: its frequency comes only in the footer, so it is estimated until then."""

from __future__ import annotations

FULL_CHUNK = 60_000  # bytes: a buffer the runtime handed over because it was full (64 KiB less its header)


class TickClock:
    """The legacy trace clock, estimated before the footer gives its
    frequency: a least-squares line through (ticks, wall time) pairs, one
    per full chunk (Go's buffers reach the reader the moment they fill).
    bench/legacy_clock.py measures how close it comes."""

    MIN_SPAN = 50_000_000  # ns of wall time the samples must cover

    def __init__(self) -> None:
        self._n = 0
        self._x0 = self._y0 = 0
        self._sx = self._sy = self._sxx = self._sxy = 0.0
        self._ymin = self._ymax = 0

    def add(self, unix_ns: int, ticks: int) -> None:
        if self._n == 0:
            # Sums relative to the first sample keep float64 precise.
            self._x0, self._y0 = ticks, unix_ns
            self._ymin = self._ymax = unix_ns
        x, y = float(ticks - self._x0), float(unix_ns - self._y0)
        self._n += 1
        self._sx += x
        self._sy += y
        self._sxx += x * x
        self._sxy += x * y
        self._ymin, self._ymax = min(self._ymin, unix_ns), max(self._ymax, unix_ns)

    def _line(self) -> tuple[float, float] | None:
        """(ns per tick, ns at the first sample's ticks), once known."""
        n = self._n
        if n < 2 or self._ymax - self._ymin < self.MIN_SPAN:
            return None
        den = n * self._sxx - self._sx * self._sx
        if den <= 0:
            return None
        slope = (n * self._sxy - self._sx * self._sy) / den
        if slope <= 0:
            return None
        return slope, (self._sy - slope * self._sx) / n

    @property
    def ticks_per_sec(self) -> float | None:
        line = self._line()
        return None if line is None else 1e9 / line[0]

    def line(self) -> tuple[int, int, float, float] | None:
        """What ``wall_ns`` computes with, once known: (x0, y0, ns per tick,
        intercept), the time of ``ticks`` being y0 + int(intercept + slope
        * (ticks - x0))."""
        line = self._line()
        return None if line is None else (self._x0, self._y0, line[0], line[1])

    def wall_ns(self, ticks: int) -> int | None:
        """Provisional Unix time of a tick value, or None until known."""
        line = self._line()
        if line is None:
            return None
        slope, intercept = line
        return self._y0 + int(intercept + slope * (ticks - self._x0))
