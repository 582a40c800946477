"""The flight recorder's memory: the last seconds of the raw trace, in whole units.

Sans-IO: :class:`FlightRing` is fed the session's frames and the time,
and hands out snapshots that are complete traces. A unit is what Go's
reader can do without:

- on Go 1.22+ a generation: every generation carries its own tables and
  goroutine states, so the trace header followed by any run of
  consecutive whole generations is a complete trace (Go's reader accepts
  a trace whose first generation is not 1, and rejects one with a
  generation missing);
- on Go 1.21 and older, in segment mode, a whole segment: header, buffers
  and footer, itself a complete trace (a legacy reader cannot skip into
  the middle of one, so segments are never cut or joined).

The ring drops whole units, oldest first, when they are older than
``keep`` seconds (by the wall-clock time the helper read their last
chunk) or when the units held pass ``max_bytes``. The unit being received
is never dropped: it is bounded by the session's own cap on one
generation (``max_generation_bytes``). A gap (the helper shed generations)
empties the ring: nothing before it can share a file with what follows.

A net/http/pprof session's windows (``Layout.WINDOWS``) are units like
legacy segments, whatever the trace's format: each window is a complete
trace of its own. The gap between two windows (:class:`WindowGap`) is
expected, not a loss: windows are independent traces, so it empties
nothing.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field

from livetrace._items import Gap, SegmentEnd, WindowGap
from livetrace._protocol.frames import Chunk
from livetrace._trace.spec.modern import EV_END_OF_GENERATION

DEFAULT_MAX_BYTES = 256 << 20
_END_OF_GENERATION = bytes([EV_END_OF_GENERATION])


class Layout(enum.Enum):
    GENERATIONS = "generations"  # Go 1.22+: one header, then generations
    SEGMENTS = "segments"  # each unit a complete trace of its own (legacy segments)
    WINDOWS = "windows"  # the same, from net/http/pprof: one unit per window, in any format

    @property
    def whole_units(self) -> bool:
        """Whether each unit is a complete trace (a file of its own in a capture)."""
        return self is not Layout.GENERATIONS

    @property
    def unit(self) -> str:
        """What one unit is called: generation, segment or window."""
        return self.value[:-1]


@dataclass
class Unit:
    """One generation, or one segment: its chunks as received."""

    key: int  # the generation number, or the segment's ordinal in this ring
    first_read_ns: int
    last_read_ns: int
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    complete: bool = False

    def add(self, c: Chunk) -> None:
        self.chunks.append(c.data)
        self.size += len(c.data)
        self.last_read_ns = max(self.last_read_ns, c.read_unix_ns)


@dataclass(frozen=True)
class Snapshot:
    """What a capture writes. For ``GENERATIONS``: one trace, ``header`` then
    every unit in order. For ``SEGMENTS`` and ``WINDOWS``: one trace per
    unit (``header`` is empty: each unit starts with its own)."""

    layout: Layout
    header: bytes
    units: tuple[Unit, ...]

    @property
    def size(self) -> int:
        return len(self.header) + sum(u.size for u in self.units)

    @property
    def first_read_ns(self) -> int | None:
        return self.units[0].first_read_ns if self.units else None

    @property
    def last_read_ns(self) -> int | None:
        return self.units[-1].last_read_ns if self.units else None

    def traces(self) -> list[list[bytes]]:
        """The byte strings of each trace file, in order."""
        if self.layout is Layout.GENERATIONS:
            return [[self.header, *(c for u in self.units for c in u.chunks)]] if self.units else []
        return [list(u.chunks) for u in self.units]


class FlightRing:
    """The kept units of one session's trace; see the module's docstring.

    Feed it every frame (:meth:`feed`) and trim it as time passes
    (:meth:`trim`, with the wall clock in ns); :meth:`snapshot` gives the
    complete units held. ``completed`` counts units completed so far, so a
    caller can wait for the unit in progress to be over.
    """

    def __init__(self, layout: Layout, *, keep_ns: int, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if keep_ns <= 0:
            raise ValueError("keep must be a positive time")
        if max_bytes <= 0:
            raise ValueError("the memory cap must be positive")
        self.layout = layout
        self.keep_ns = keep_ns
        self.max_bytes = max_bytes
        self.header = b""
        self._done: deque[Unit] = deque()
        self._open: Unit | None = None
        self._done_bytes = 0
        self._segments = 0
        self._pins: list[int] = []  # units from these keys on outlive keep (captures waiting for their tail)
        self.completed = 0  # units completed over the ring's life
        self.dropped = 0  # complete units dropped by keep or the byte cap
        self.gaps = 0  # helper's gaps (each emptied the ring)
        self.window_gaps = 0

    # -- feeding --

    def feed(self, frame: Chunk | Gap | SegmentEnd) -> None:
        if isinstance(frame, Chunk):
            self._chunk(frame)
        elif isinstance(frame, SegmentEnd):  # a WindowEnd too
            self._complete_open()
        elif isinstance(frame, WindowGap) and self.layout is Layout.WINDOWS:
            self.window_gaps += 1  # between two complete traces: nothing to forget
        else:
            self.gaps += 1
            self.clear()

    def _chunk(self, c: Chunk) -> None:
        if self.layout.whole_units:
            if self._open is None:
                self._segments += 1
                self._open = Unit(self._segments, c.read_unix_ns, c.read_unix_ns)
            self._open.add(c)
            self._trim_bytes()
            return  # numbered from 1 in the session, as the decoder numbers a legacy trace's segments
        if c.generation == 0:
            if not self.header:
                self.header = c.data
            return
        cur = self._open
        if cur is not None and c.generation != cur.key:
            self._complete_open()
            cur = None
        if cur is None:
            if self._done and self._done[-1].key == c.generation:
                return  # a straggler of a generation already closed: cannot happen in order; ignore
            cur = self._open = Unit(c.generation, c.read_unix_ns, c.read_unix_ns)
        cur.add(c)
        self._trim_bytes()
        if c.data == _END_OF_GENERATION:  # Go 1.25+ says so at once; older runtimes by starting the next
            self._complete_open()

    def _complete_open(self) -> None:
        u = self._open
        if u is None:
            return
        self._open = None
        if self.layout is Layout.GENERATIONS and self._done and self._done[-1].key != u.key - 1:
            self.clear()  # a generation missing: what came before cannot share a trace with this one
        u.complete = True
        self._done.append(u)
        self._done_bytes += u.size
        self.completed += 1
        self._trim_bytes()

    def finish(self) -> None:
        """The session ended complete: the unit in progress is whole."""
        self._complete_open()

    def clear(self) -> None:
        """Forget every unit (the header stays: the session's trace goes on)."""
        self._done.clear()
        self._done_bytes = 0
        self._open = None

    # -- bounds --

    def trim(self, now_ns: int) -> None:
        """Drop the units read entirely before the last ``keep`` seconds,
        but for those pinned."""
        horizon = now_ns - self.keep_ns
        pinned = min(self._pins) if self._pins else None
        while self._done and self._done[0].last_read_ns < horizon:
            if pinned is not None and self._done[0].key >= pinned:
                break
            self._drop()
        self._trim_bytes()

    def pin(self, key: int) -> None:
        """Keep the unit ``key`` and those after it past ``keep`` (not past
        the byte cap) until :meth:`unpin`: a capture waiting for its tail must
        not lose the generation its trigger fired in, however late the
        decoding told of it."""
        self._pins.append(key)

    def unpin(self, key: int) -> None:
        self._pins.remove(key)

    def _trim_bytes(self) -> None:
        while self._done and self.size > self.max_bytes:
            self._drop()

    def _drop(self) -> None:
        u = self._done.popleft()
        self._done_bytes -= u.size
        self.dropped += 1

    # -- reading --

    @property
    def size(self) -> int:
        """Bytes held: the header, the complete units and the one in progress."""
        return len(self.header) + self._done_bytes + (self._open.size if self._open else 0)

    @property
    def units(self) -> tuple[Unit, ...]:
        return tuple(self._done)

    @property
    def window_ns(self) -> int:
        """The wall-clock time the complete units span."""
        if not self._done:
            return 0
        return self._done[-1].last_read_ns - self._done[0].first_read_ns

    def snapshot(self) -> Snapshot:
        """The complete units held now (shares their chunks: bytes are immutable)."""
        return Snapshot(self.layout, b"" if self.layout.whole_units else self.header, tuple(self._done))
