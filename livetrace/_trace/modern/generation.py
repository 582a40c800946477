"""Generations of a modern trace: assembling their batches and reading their tables.

A generation is complete at its end-of-generation frame (Go 1.26+), or when
the first batch of the next generation (or the end of the stream) arrives
(Go 1.22 to 1.25). Only then are its strings, stacks and sync data known,
because the runtime writes them last.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from livetrace._errors import TraceFormatError, TruncatedTraceError
from livetrace._trace.accel import ccore
from livetrace._trace.model.tables import Tables
from livetrace._trace.modern.wire import Batch, EndOfGeneration, Frame, read_uvarint
from livetrace._trace.spec.modern import (
    EV_CLOCK_SNAPSHOT,
    EV_CPU_SAMPLE,
    EV_CPU_SAMPLES,
    EV_FREQUENCY,
    EV_STACK,
    EV_STACKS,
    EV_STRING,
    EV_STRINGS,
    EV_SYNC,
)
from livetrace._trace.version import TraceVersion

MAX_STRING_SIZE = 1024
MAX_FRAMES_PER_STACK = 128


@dataclass(slots=True)
class CPUSample:
    time: int  # nanoseconds once the generation is complete
    m: int
    p: int
    g: int
    stack: int


class TraceEndsInTable(TraceFormatError):
    """A value of a generation's strings, stacks, CPU samples or sync batch
    begins exactly where its batch ends. Go's reader reads each such value
    with ``binary.ReadUvarint``, whose bare ``io.EOF`` there reaches its
    caller as the end of the stream (``go tool trace`` then exits 0): the
    generation is dropped, the final Sync comes, and nothing after it is
    read. The decoder does the same (``ModernDecoder``); anywhere else it
    is this error. A stack's frames are read with their errors wrapped, so
    a frame cut there is an error for Go too."""


@dataclass(eq=False, repr=False)
class Generation(Tables):
    """One complete generation: its per-thread event batches, and the tables
    its events refer to (read from its string, stack and sync batches)."""

    minor: int = 0
    batches: dict[int, list[Batch]] = field(default_factory=dict)  # by thread, in order of first appearance
    cpu_samples: list[CPUSample] = field(default_factory=list)
    experimental: dict[int, list[tuple[int, bytes]]] = field(default_factory=dict)
    min_ticks: int = 0
    compiled: bool = False  # read well-formed string and stack batches in the compiled core

    @property
    def version(self) -> TraceVersion:
        return TraceVersion.of_minor(self.minor)

    # -- building --

    def add(self, b: Batch) -> None:
        if self.min_ticks == 0 or b.time < self.min_ticks:
            self.min_ticks = b.time
        p = b.payload
        if b.exp >= 0:
            self.experimental.setdefault(b.exp, []).append((b.m, p))
            return
        first = p[0] if p else -1
        if first == EV_STRINGS:
            self._add_strings(b)
        elif first == EV_STACKS:
            self._add_stacks(b)
        elif first == EV_CPU_SAMPLES:
            self._add_cpu_samples(b)
        elif first == (EV_SYNC if self.version.has_sync_marker else EV_FREQUENCY):
            self._set_sync(b)
        else:
            self.batches.setdefault(b.m, []).append(b)

    def _error(self, b: Batch, msg: str, at: int = 0) -> TraceFormatError:
        return TraceFormatError(msg, offset=b.payload_offset + at, generation=self.gen)

    def _uvarints(self, b: Batch, i: int, n: int, ends_trace: bool = True) -> tuple[list[int], int]:
        """n values from i; ``ends_trace``: one that would begin at the
        batch's end ends the trace instead (:class:`TraceEndsInTable`)."""
        p, end, out = b.payload, len(b.payload), []
        for _ in range(n):
            try:
                v, j = read_uvarint(p, i, end)
            except ValueError as e:
                raise self._error(b, str(e), i) from None
            if v < 0 and ends_trace and i == end:
                raise TraceEndsInTable(
                    "a table's value begins where its batch ends: Go's reader takes that for the end of the trace",
                    offset=b.payload_offset + i,
                    generation=self.gen,
                )
            if v < 0:
                raise self._error(b, "record runs past the end of its batch", i)
            out.append(v)
            i = j
        return out, i

    def _expect(self, b: Batch, i: int, code: int, what: str) -> int:
        if b.payload[i] != code:
            raise self._error(b, f"expected {what} event, got {b.payload[i]}", i)
        return i + 1

    def _add_strings(self, b: Batch) -> None:
        if self.compiled and ccore.table_strings(b.payload, self.strings, MAX_STRING_SIZE):
            return
        p, i = b.payload, 1
        while i < len(p):
            start = i
            i = self._expect(b, i, EV_STRING, "string")
            (sid, n), i = self._uvarints(b, i, 2)
            if n > MAX_STRING_SIZE:
                raise self._error(b, f"invalid string size {n}, maximum is {MAX_STRING_SIZE}", start)
            if len(p) - i < n:
                raise self._error(b, f"failed to read full string: read {len(p) - i} but wanted {n}", start)
            if sid in self.strings:
                raise self._error(b, f"multiple strings with the same ID: id={sid}", start)
            self.strings[sid] = p[i : i + n]
            i += n

    def _add_stacks(self, b: Batch) -> None:
        if self.compiled and ccore.table_stacks(b.payload, self.stacks, self.frames, MAX_FRAMES_PER_STACK):
            return
        p, i = b.payload, 1
        frames = self.frames
        while i < len(p):
            start = i
            i = self._expect(b, i, EV_STACK, "stack")
            (sid, n), i = self._uvarints(b, i, 2)
            if n > MAX_FRAMES_PER_STACK:
                raise self._error(b, f"invalid stack size {n}, maximum is {MAX_FRAMES_PER_STACK}", start)
            vals, i = self._uvarints(b, i, 4 * n, ends_trace=False)
            pcs = tuple(vals[0::4])
            for k in range(0, len(vals), 4):
                frames.setdefault(vals[k], (vals[k + 1], vals[k + 2], vals[k + 3]))  # first definition wins
            if sid in self.stacks:
                raise self._error(b, f"multiple stacks with the same ID: id={sid}", start)
            self.stacks[sid] = pcs

    def _add_cpu_samples(self, b: Batch) -> None:
        p, i = b.payload, 1
        while i < len(p):
            i = self._expect(b, i, EV_CPU_SAMPLE, "CPU sample")
            (t, m, proc, g, stk), i = self._uvarints(b, i, 5)
            self.cpu_samples.append(CPUSample(t, _signed(m), _signed(proc), -1 if g == 0 else g, stk))

    def _set_sync(self, b: Batch) -> None:
        p, i = b.payload, 1 if self.version.has_sync_marker else 0
        last = b.time
        while i < len(p):
            code = p[i]
            if code == EV_FREQUENCY:
                if self.ns_per_tick:
                    raise self._error(b, "found multiple frequency events", i)
                (freq,), i = self._uvarints(b, i + 1, 1)
                self.ns_per_tick = 1.0 / (freq / 1e9) if freq else float("inf")
            elif code == EV_CLOCK_SNAPSHOT and self.version.has_clock_snapshot:
                if self.has_clock_snapshot:
                    raise self._error(b, "found multiple clock snapshot events", i)
                (dt, mono, sec, nsec), i = self._uvarints(b, i + 1, 4)
                self.has_clock_snapshot = True
                last += dt
                self.snap_ticks, self.snap_mono, self.snap_wall = last, mono, (sec, nsec)
            else:
                raise self._error(b, f"expected frequency or clock snapshot event, got {code}", i)

    def finish(self, offset: int) -> None:
        """Checks once every batch is in; times of CPU samples become nanoseconds."""
        if not self.ns_per_tick:
            raise TraceFormatError("no frequency event found", offset=offset, generation=self.gen)
        if self.version.has_clock_snapshot and not self.has_clock_snapshot:
            raise TraceFormatError("no clock snapshot event found", offset=offset, generation=self.gen)
        for sid, pcs in self.stacks.items():
            for pc in pcs:
                frame = self.frames.get(pc)
                if frame is None:
                    raise TraceFormatError(
                        f"found unknown pc {pc:x} for stack {sid}", offset=offset, generation=self.gen
                    )
                if frame[0] not in self.strings:
                    raise TraceFormatError(
                        f"found invalid func string ID {frame[0]} for stack {sid}", offset=offset, generation=self.gen
                    )
                if frame[1] not in self.strings:
                    raise TraceFormatError(
                        f"found invalid file string ID {frame[1]} for stack {sid}", offset=offset, generation=self.gen
                    )
        for s in self.cpu_samples:
            s.time = self.ns(s.time)
        self.cpu_samples.sort(key=lambda s: s.time)


def _signed(v: int) -> int:
    """A uint64 id as Go's int64 resource ids see it (2^64-1 is -1: none)."""
    return v - (1 << 64) if v >= 1 << 63 else v


class GenerationAssembler:
    """Frames in, complete generations out."""

    def __init__(self, minor: int, compiled: bool = False) -> None:
        self.minor = minor
        self.compiled = compiled  # the compiled core reads the tables (the caller chose it)
        self.version = TraceVersion.of_minor(minor)
        self.current: Generation | None = None
        self._start = 0  # stream offset of the current generation's first frame
        self.largest = 0  # bytes of the largest generation completed so far

    def push(self, frames: list[Frame]) -> list[Generation]:
        done, error = self.push_until_error(frames)
        if error is not None:
            raise error
        return done

    def push_until_error(self, frames: list[Frame]) -> tuple[list[Generation], TraceFormatError | None]:
        """The generations the frames complete; where one is malformed, those
        completed before it and the error (Go's reader gives a generation's
        events before it reads the next one)."""
        done: list[Generation] = []
        try:
            self._push(frames, done)
        except TraceFormatError as e:
            return done, e
        return done, None

    def _push(self, frames: list[Frame], done: list[Generation]) -> None:
        for f in frames:
            if isinstance(f, EndOfGeneration):
                if self.current is None:
                    raise TraceFormatError("end of generation with no generation", offset=f.offset)
                done.append(self._complete(f.offset))
                continue
            if f.gen == 0:
                raise TraceFormatError("invalid generation number 0", offset=f.offset)
            cur = self.current
            if cur is not None and f.gen != cur.gen:
                if self.version.has_end_of_generation:
                    raise TraceFormatError(
                        "broken trace: missing end-of-generation event, or generations are interleaved",
                        offset=f.offset,
                        generation=cur.gen,
                    )
                if f.gen != cur.gen + 1:
                    raise TraceFormatError("generations out of order", offset=f.offset, generation=cur.gen)
                done.append(self._complete(f.offset))
                cur = None
            if cur is None:
                cur = self.current = Generation(f.gen, minor=self.minor, compiled=self.compiled)
                self._start = f.offset
            cur.add(f)

    def _complete(self, offset: int) -> Generation:
        g = self.current
        assert g is not None
        self.current = None
        self.largest = max(self.largest, offset - self._start)
        g.finish(offset)
        return g

    def close(self, offset: int) -> list[Generation]:
        """The stream ended at offset."""
        if self.current is None:
            return []
        if self.version.has_end_of_generation:
            raise TruncatedTraceError(
                "incomplete generation found; trace likely truncated", offset=offset, generation=self.current.gen
            )
        return [self._complete(offset)]
