"""The tables events refer to: strings, stacks, frames and the clock.

Events carry ids; what the ids name lives here, shared by the events of one
modern generation or of one legacy trace (or segment). Each format fills a
:class:`Tables` its own way: a modern generation reads them from its batches
(``Generation`` extends this class), a legacy trace from its footer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from livetrace._errors import TraceFormatError

MAX_NS = 9.2e18  # times are int64 nanoseconds, as in Go's reader


@dataclass(eq=False, repr=False)  # compared by identity: the events of a generation share one
class Tables:
    """What the ids of a run of events name.

    ``gen`` numbers the generation (a legacy trace: 1, or its segment's
    number from 1); ``strings``: string id -> bytes; ``stacks``: stack id ->
    PCs, innermost first; ``frames``: PC -> (function string id, file string
    id, line). The clock: ``ns_per_tick`` and the clock snapshot (Go 1.25+)
    put the snapshot on the trace's time line; ``wall_origin`` is the Unix
    ns of time 0 where the trace has no snapshot but the reader knows it (a
    live legacy session estimates it from when the chunks arrived).
    """

    gen: int = 0
    strings: dict[int, bytes] = field(default_factory=lambda: {0: b""})
    stacks: dict[int, tuple[int, ...]] = field(default_factory=lambda: {0: ()})
    frames: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    ns_per_tick: float = 0.0
    has_clock_snapshot: bool = False
    snap_ticks: int = 0
    snap_mono: int = 0
    snap_wall: tuple[int, int] = (0, 0)  # seconds, nanoseconds
    wall_origin: int | None = None
    # Strings the reader derives rather than reads (a task's type at its
    # end), by index; 0 is the empty string.
    extra_strings: list[bytes] = field(default_factory=lambda: [b""])

    @property
    def wall_base(self) -> int | None:
        """Unix ns of trace time 0, where known."""
        if self.has_clock_snapshot:
            return self.snap_wall[0] * 1_000_000_000 + self.snap_wall[1] - self.ns(self.snap_ticks)
        return self.wall_origin

    def ns(self, ticks: int) -> int:
        v = ticks * self.ns_per_tick
        if not v < MAX_NS:  # also NaN, when the frequency is 0
            raise TraceFormatError("timestamp out of range", generation=self.gen)
        return int(v)

    def add_extra_string(self, s: bytes) -> int:
        """Intern a derived string; its index in ``extra_strings``."""
        if not s:
            return 0
        try:
            return self.extra_strings.index(s)
        except ValueError:
            self.extra_strings.append(s)
            return len(self.extra_strings) - 1

    def __repr__(self) -> str:
        return f"<{type(self).__name__} gen={self.gen}: {len(self.strings)} strings, {len(self.stacks)} stacks>"
