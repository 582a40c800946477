"""A legacy trace (Go 1.21 and older) live, sans-IO: chunks in, events out.

Legacy Go hands over each P's buffer only when it is full, and the stacks
and the tick frequency only in the footer, after the trace stops. So a
legacy trace is delivered twice:

- **provisionally**, as its chunks arrive: each chunk's events, with times
  from a clock estimated from when the chunks arrived and stacks as bare ids,
  merged across Ps in time order: an event is held until every P has
  delivered events up to its time, or at most about the time a busy P's
  buffer takes to fill (:class:`Provisional`);
- **exactly**, when the footer arrives (at the end of the trace or of each
  segment, in segment mode): a :class:`SymbolsResolved` notice, then the
  events in Go's order with exact times and stacks, the same events
  ``livetrace decode --dump parsed`` prints for the trace (as
  :class:`EventBatch` objects).

In segment mode the segments are stitched into one stream: times count from
the first segment's start, and a :class:`SegmentGap` marks each time the
runtime was not tracing.

The provisional events of Go 1.11 to 1.21 traces are made by the compiled
core where it runs (live_core.py, _ccore/decode/legacy_live.c); the Python path here
is its twin and the reference, and takes over a segment the core gives up
on (it replays the segment's chunks, then reports the error, if any).
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Iterator
from typing import TypeVar, overload

from livetrace._items import Provisional, SegmentGap, SymbolsResolved
from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.legacy.convert import ModelConverter, StackTable, blocked_syscalls
from livetrace._trace.legacy.fast import BUILTIN, exact_stream
from livetrace._trace.legacy.live_core import CoreProvisional, GaveUp, compiled_version
from livetrace._trace.legacy.read import LegacyDecoder
from livetrace._trace.legacy.trace import LegacyEvent
from livetrace._trace.model.batch import NARGS, NEXTRA, EventBatch
from livetrace._trace.model.events import Event, Kind
from livetrace._trace.model.tables import Tables
from livetrace._trace.spec.legacy import EV_CPU_SAMPLE
from livetrace._trace.version import TraceVersion, header_size

BATCH_EVENTS = 4096
WINDOW_NS = 500_000_000  # the longest a provisional event waits for a P that has not caught up
# The bound on waiting for a P is this many times the longest time a P took to
# fill its last buffer: a buffer's fill time varies (47 ms median, 70 ms at most
# on the demo at full load), and a busy P's events released past are late.
FILL_MARGIN = 2
MAX_HELD = 1_000_000  # provisional events held for ordering, at most
BUILTIN_STRINGS = 1 << 62  # ids of the strings the conversion adds, clear of the trace's own


LegacyItem = EventBatch | Provisional | SymbolsResolved | SegmentGap
_T = TypeVar("_T")


class _LiveStrings(dict[int, bytes]):
    """The provisional string table: the conversion's own strings, and the
    trace's as far as they have arrived."""

    def __init__(self, trace_strings: dict[int, bytes]) -> None:
        super().__init__({0: b""})
        self._trace = trace_strings

    def __missing__(self, sid: int) -> bytes:
        return self._trace.get(sid, b"")

    def __contains__(self, sid: object) -> bool:
        return super().__contains__(sid) or sid in self._trace

    # dict.get looks neither at __missing__ nor at __contains__; the
    # overloads are dict's own.
    @overload
    def get(self, sid: int, default: None = None, /) -> bytes | None: ...
    @overload
    def get(self, sid: int, default: bytes, /) -> bytes: ...
    @overload
    def get(self, sid: int, default: _T, /) -> bytes | _T: ...

    def get(self, sid: int, default: object = None, /) -> object:
        if sid not in self:
            return default
        return self[sid]


class LegacyLive:
    """Decodes a live legacy session, segment by segment.

    A provisional event is held until every P seen has delivered events up
    to its time (each P's buffers come in time order), or until it is the
    bound older than the newest event delivered: the longest time a P took
    to fill its last buffer (how far the chunk moved the P's latest time),
    among those that took at most ``window_ns``; ``window_ns`` if none did.
    So a quiet P's buffer, filling slowly, holds the others back no longer
    than a busy P's buffer takes to fill. ``kinds`` keeps only events of
    those kinds; without ``provisional``, only the exact events are made.
    ``version``: the format the trace's header names, where the caller read
    it already (``open_decoder``); each segment that repeats that header
    (all of a session's do) is read as that version."""

    def __init__(
        self,
        kinds: frozenset[Kind] | None = None,
        window_ns: int = WINDOW_NS,
        max_held: int = MAX_HELD,
        provisional: bool = True,
        compiled: bool | None = None,
        version: TraceVersion | None = None,
    ) -> None:
        self._version = version
        self._header = b""  # the header the version was read from, once the first chunk is in
        self._kinds = kinds
        self._provisional = provisional
        self._compiled = compiled
        self._window = window_ns
        self._max_held = max_held
        self._segment = 0
        self._origin: int | None = None  # Unix ns: the first segment's start, if the chunks have times
        self._offset = 0  # ns from the origin to this segment's start
        self._stopped: int | None = None  # when the last segment ended
        self._last_time = -1  # the latest exact event time given so far
        self._syncs = 0
        self.largest_segment = 0  # bytes of the largest segment decoded so far
        self._new_segment_state()

    def _new_segment_state(self) -> None:
        self._segment_version: TraceVersion | None = None  # the version this segment's header names, if known
        self._chunks: list[bytes] = []  # the segment's bytes, for its exact decoding at the end
        self._times: list[int | None] = []  # when each chunk was read, while the compiled core decodes
        self._core: CoreProvisional | None = None  # the compiled provisional path, where it runs
        self._decoder: LegacyDecoder | None = None  # the provisional decoder (the twin)
        self._table: Tables | None = None
        self._converter: ModelConverter | None = None
        self._unclocked: list[list[LegacyEvent]] = []  # chunks' events that came before the clock was known
        self._held: list[tuple[int, int, Event]] = []  # events held for ordering: (time, arrival, event)
        self._arrivals = 0
        self._front: dict[int, int] = {}  # per P: the latest time of the events its buffers delivered
        self._fill: dict[int, int] = {}  # per P: how far the last chunk with its events moved that
        self._released = -(1 << 63)  # time of the last event delivered

    def feed(self, data: bytes, read_unix_ns: int | None = None) -> Iterator[LegacyItem]:
        """The next bytes of the trace, and when they were read (Unix ns).
        Without read times (offline), exact times count from the trace's
        start and provisional events, which need the times, never come."""
        if not self._chunks:
            yield from self._start(data, read_unix_ns)
            return
        self._chunks.append(data)
        if self._core is not None:
            self._times.append(read_unix_ns)
            try:
                released = self._core.feed(data, read_unix_ns, self._origin)
            except GaveUp:
                yield from self._to_twin()
                return
            if released is not None:
                yield from self._core_batches(*released)
            return
        yield from self._twin_feed(data, read_unix_ns)

    def _twin_feed(self, data: bytes, read_unix_ns: int | None) -> Iterator[LegacyItem]:
        dec = self._decoder
        if dec is None:
            return  # no provisional events: the segment is decoded whole at its end
        events = dec.feed(data, read_unix_ns)
        if not events:
            return
        self._converter_for(dec)
        self._unclocked.append(events)
        if dec.clock.wall_ns(0) is None:
            if sum(map(len, self._unclocked)) > self._max_held:
                self._unclocked.pop(0)  # the exact stream still has them
            return
        late: list[Event] = []
        for evs in self._unclocked:
            self._hold(evs, late)
        self._unclocked.clear()
        yield from self._release(late, self._until())

    def _start(self, data: bytes, read_unix_ns: int | None) -> Iterator[LegacyItem]:
        """The first chunk of a segment: its header (and whatever follows)."""
        if self._origin is None:
            self._origin = read_unix_ns
        if read_unix_ns is not None and self._origin is not None:
            # Where the chunk's read time puts the segment, unless that is
            # before the last segment's end: its own clock may run a little
            # past the time read between two reads, and times must rise.
            self._offset = max(read_unix_ns - self._origin, self._last_time + 1)
            if self._stopped is not None:
                yield SegmentGap(self._segment - 1, self._stopped, read_unix_ns)
        self._chunks.append(data)
        self._segment_version = self._known_version(data)
        if not self._provisional:
            return
        ver = compiled_version(data, self._segment_version) if use_compiled(self._compiled) else None
        if ver is not None:
            self._times.append(read_unix_ns)
            self._core = self._core_for(ver)
            try:
                self._core.start(data, read_unix_ns)
            except GaveUp:
                yield from self._to_twin()
            return
        self._decoder = LegacyDecoder(keep=False)
        self._decoder.feed(data, read_unix_ns)
        self._converter_for(self._decoder)

    def _known_version(self, data: bytes) -> TraceVersion | None:
        """The version passed down for the trace, if ``data`` (a segment's
        first chunk) begins with the header it was read from; else None,
        and the segment's header is read where it is decoded."""
        if self._version is None:
            return None
        if not self._header:  # the trace's first chunk: the header the version was read from
            size = header_size(data)
            if len(data) < size:  # fed in smaller pieces: every header is read where it is decoded
                self._version = None
                return None
            self._header = data[:size]
        return self._version if data.startswith(self._header) else None

    def _converter_for(self, dec: LegacyDecoder) -> None:
        """The provisional tables and converter, once the header is in."""
        ver = dec.version
        if self._converter is None and ver is not None:
            table = self._table = Tables(self._segment + 1, wall_origin=self._origin)
            table.strings = _LiveStrings(dec.strings)
            table.stacks = StackTable({0: ()})  # none until the footer
            self._converter = conv = ModelConverter(table, ver, BUILTIN_STRINGS, strict=False)
            # The strings the conversion adds, interned in the compiled core's order.
            for s in BUILTIN:
                conv.string_id(s.encode())

    def _core_for(self, ver: TraceVersion) -> CoreProvisional:
        """The compiled provisional path for this segment, on the twin's tables."""
        table = self._table = Tables(self._segment + 1, wall_origin=self._origin)
        trace_strings: dict[int, bytes] = {}
        table.strings = _LiveStrings(trace_strings)
        table.stacks = StackTable({0: ()})
        conv = self._converter = ModelConverter(table, ver, BUILTIN_STRINGS, strict=False)
        ids = [conv.string_id(s.encode()) for s in BUILTIN]
        return CoreProvisional(ver, self._kinds, table, trace_strings, conv, ids, self._window, self._max_held)

    def _core_batches(self, cols: tuple[bytes, ...], late: int) -> Iterator[LegacyItem]:
        """Released columns as Provisional batches, as the twin's _release cuts them."""
        n = len(cols[0])
        if n:
            self._released = max(self._released, int.from_bytes(cols[1][-8:], sys.byteorder, signed=True))
        code, time, m, p, g, args, extra = cols
        for i in range(0, n, BATCH_EVENTS):
            j = min(n, i + BATCH_EVENTS)
            part = (
                code[i:j],
                time[8 * i : 8 * j],
                m[8 * i : 8 * j],
                p[8 * i : 8 * j],
                g[8 * i : 8 * j],
                args[8 * NARGS * i : 8 * NARGS * j],
                extra[8 * NEXTRA * i : 8 * NEXTRA * j],
            )
            n_late = max(0, min(late - i, BATCH_EVENTS))
            yield Provisional(EventBatch(self._table, j - i, part), self._segment, n_late)

    def _to_twin(self) -> Iterator[LegacyItem]:
        """The compiled core gave up on the segment's last chunk: what it
        holds goes out, and the twin takes over from a replay of the
        segment's chunks (their events already given, or now dropped),
        then decodes the last one, reporting its error if it has one."""
        core = self._core
        assert core is not None
        self._core = None
        cols, late = core.release(True)
        yield from self._core_batches(cols, late)
        released = self._released
        chunks, times = self._chunks, self._times
        self._chunks, self._times = [], []
        self._converter = None
        self._decoder = LegacyDecoder(keep=False)
        self._chunks.append(chunks[0])
        self._decoder.feed(chunks[0], times[0])
        self._converter_for(self._decoder)
        for data, t in zip(chunks[1:-1], times[1:-1], strict=True):
            self._chunks.append(data)
            for _ in self._twin_feed(data, t):
                pass
        self._held.clear()
        self._released = released
        if len(chunks) > 1:
            self._chunks.append(chunks[-1])
            yield from self._twin_feed(chunks[-1], times[-1])

    def _hold(self, events: list[LegacyEvent], late: list[Event]) -> None:
        """Converts one chunk's events (each P's in its order) and holds
        them, or puts them straight into ``late`` if their time has passed;
        moves each P's latest time, and notes how far the chunk moved it."""
        conv, dec, origin = self._converter, self._decoder, self._origin
        assert conv is not None and dec is not None and origin is not None
        clock = dec.clock
        blocked = blocked_syscalls(events)
        kinds = self._kinds
        front, before = self._front, {}  # before: each P's latest time as this chunk found it
        for i, e in enumerate(events):
            wall = clock.wall_ns(e.ts)
            assert wall is not None
            if e.typ != EV_CPU_SAMPLE:  # a sample carries its own time, not its buffer's
                t, latest = wall - origin, front.get(e.p)
                if e.p not in before:
                    before[e.p] = latest
                if latest is None or t > latest:
                    front[e.p] = t
            for ev in conv.convert(e, wall - origin, i in blocked):
                if kinds is not None and ev.kind not in kinds:
                    continue
                if ev.time <= self._released:
                    late.append(ev)
                else:
                    heapq.heappush(self._held, (ev.time, self._arrivals, ev))
                    self._arrivals += 1
        for p, b in before.items():
            if b is not None:
                self._fill[p] = front[p] - b

    def _until(self) -> int:
        """The time up to which held events may go (the release watermark)."""
        front = self._front
        if not front:
            return -(1 << 63)
        fills = [f for f in self._fill.values() if f <= self._window]
        bound = min(FILL_MARGIN * max(fills), self._window) if fills else self._window
        return max(min(front.values()), max(front.values()) - bound, -(1 << 63))

    def _release(self, late: list[Event], until: int) -> Iterator[LegacyItem]:
        held, out = self._held, []
        while held and (held[0][0] <= until or len(held) > self._max_held):
            out.append(heapq.heappop(held)[2])
        if out:
            self._released = max(self._released, out[-1].time)
        late.sort(key=lambda e: e.time)
        events = late + out
        for i in range(0, len(events), BATCH_EVENTS):
            n_late = max(0, min(len(late) - i, BATCH_EVENTS))
            yield Provisional(EventBatch.from_events(self._table, events[i : i + BATCH_EVENTS]), self._segment, n_late)

    def end_segment(self, stopped_unix_ns: int | None) -> Iterator[LegacyItem]:
        """The segment's footer is in, and tracing stopped at
        ``stopped_unix_ns`` (None: the trace is over): the rest of the
        provisional events, then the exact ones."""
        if not self._chunks:
            return
        estimate = None
        if self._core is not None:
            yield from self._core_batches(*self._core.release(True))
            estimate = self._core.clock.ticks_per_sec
        elif self._decoder is not None:
            yield from self._release([], 1 << 63)
            estimate = self._decoder.clock.ticks_per_sec
        # The provisional path is done with the segment: its state (the
        # core's pool of held events, its columns) is not kept while the
        # exact decoding takes as much again.
        self._core = self._decoder = None
        data = b"".join(self._chunks)
        self._chunks = [data]  # not twice over while it is decoded
        self.largest_segment = max(self.largest_segment, len(data))
        if stopped_unix_ns is not None and use_compiled(self._compiled) and ccore is not None:
            # A live session's segment, more to come: memory held to what one segment needs
            # (process-wide, so not for a trace's end: a file's decoding keeps glibc's policy).
            ccore.segment_memory()
        # (the compiled core converts a batch at a time, as they are taken)
        exact = exact_stream(
            data, self._kinds, self._compiled, offset=self._offset, syncs=self._syncs, version=self._segment_version
        )
        self._syncs += 2
        yield SymbolsResolved(self._segment, exact.events, exact.stacks, exact.ticks_per_sec, estimate)
        if exact.table is not None:
            exact.table.wall_origin = self._origin
        for batch in exact.batches:
            if len(batch):
                self._last_time = max(self._last_time, batch.times[-1])
            yield batch
        self._segment += 1
        if stopped_unix_ns is not None:
            self._stopped = stopped_unix_ns
        self._new_segment_state()
