"""The modern trace decoder, sans-IO: bytes in, ordered events out.

Feed it the stream in any pieces; every generation's events come out as
soon as the generation is complete, merged across threads in time order as
far as the ordering engine allows. Identical output for any chunking.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from livetrace._errors import TraceFormatError
from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.model.batch import EventBatch, kind_mask
from livetrace._trace.model.events import SYNC_CODE, Event, Kind
from livetrace._trace.modern.generation import Generation, GenerationAssembler, TraceEndsInTable
from livetrace._trace.modern.order import Ordering
from livetrace._trace.modern.state import OrderingError, check_ids
from livetrace._trace.modern.wire import Batch, FrameReader, read_uvarint
from livetrace._trace.spec.modern import EV_CPU_SAMPLE, MAX_CODE, SPECS, timed_specs
from livetrace._trace.version import TraceVersion

BATCH_EVENTS = 1 << 14  # events per EventBatch: each costs the live views Python around it (docs/decoder.md)
MAX_TIME = (1 << 63) - 1

# Codes that may stand in a thread's event batch, with their argument
# counts (the timestamp delta included).
_TIMED = [0] * 256
for _spec in timed_specs():
    _TIMED[_spec.code] = len(_spec.args)


class _Cursor:
    """Reads one thread's batches of a generation, one timed event at a time."""

    __slots__ = ("args", "batches", "bi", "code", "last", "m", "off", "time")

    def __init__(self, m: int, batches: list[Batch]) -> None:
        self.m = m - (1 << 64) if m >= 1 << 63 else m
        self.batches = batches
        self.bi = self.off = self.last = self.time = self.code = 0
        self.args: list[int] = []

    def next(self, gen: Generation) -> bool:
        batches = self.batches
        while self.bi < len(batches) and self.off == len(batches[self.bi].payload):
            self.bi += 1
            self.off = 0
            self.last = 0
        if self.bi == len(batches):
            return False
        b = batches[self.bi]
        if self.last == 0:
            self.last = gen.ns(b.time)
        p, i, end = b.payload, self.off, len(b.payload)
        code = p[i]
        n = _TIMED[code]
        if n == 0:
            what = "found invalid event type" if code > MAX_CODE else "found event without a timestamp: type="
            raise TraceFormatError(
                f"{what}{'' if what.endswith('=') else ': '}{code}", offset=b.payload_offset + i, generation=gen.gen
            )
        # Most values fit one byte: read those inline, call out for the rest.
        i += 1
        vals = []
        try:
            for _ in range(n):
                v = p[i]
                if v < 0x80:
                    i += 1
                else:
                    v, i = read_uvarint(p, i, end)
                    if v < 0:
                        raise IndexError
                vals.append(v)
        except (IndexError, ValueError):
            raise TraceFormatError(
                "found invalid uvarint", offset=b.payload_offset + self.off, generation=gen.gen
            ) from None
        dt = vals[0]
        args = vals[1:]
        self.time = gen.ns(dt) + self.last
        if self.time > MAX_TIME:
            raise TraceFormatError("timestamp out of range", generation=gen.gen)
        self.last = self.time
        self.code = code
        self.args = args
        self.off = i
        return True


# The frontier is a binary min-heap on event time whose exact sift rules
# decide between threads with equal times, as Go's reader does.
def _sift_up(h: list[_Cursor], i: int) -> int:
    while i > 0 and h[(i - 1) // 2].time > h[i].time:
        j = (i - 1) // 2
        h[j], h[i] = h[i], h[j]
        i = j
    return i


def _sift_down(h: list[_Cursor], i: int) -> None:
    n = len(h)
    while True:
        m, mt = i, h[i].time if i < n else None
        for c in (2 * i + 1, 2 * i + 2):
            if c < n and (mt is None or h[c].time < mt):
                m, mt = c, h[c].time
        if m == i:
            return
        h[i], h[m] = h[m], h[i]
        i = m


def _heap_remove(h: list[_Cursor], i: int) -> None:
    while i > 0:
        j = (i - 1) // 2
        h[j], h[i] = h[i], h[j]
        i = j
    h[0], h[-1] = h[-1], h[0]
    h.pop()
    if h:
        _sift_down(h, 0)


class _PythonEngine:
    """The reference twin of the compiled engine: merges a generation's
    threads by time and asks the ordering engine, in pure Python."""

    def __init__(self, mask: bytes, order: Ordering | None = None, last: int = 0, syncs: int = 0) -> None:
        self._order = Ordering() if order is None else order
        self._mask = mask
        self.last = last
        self.syncs = syncs

    def final_sync(self) -> Event:
        self.syncs += 1
        return self._stamp(Event(SYNC_CODE, self.last, -1, -1, -1, [self.syncs], None))

    def flush(self) -> Iterator[EventBatch]:
        return iter(())

    def _stamp(self, ev: Event) -> Event:
        # Event times never go backwards, nor repeat.
        if ev.time <= self.last:
            ev.time = self.last + 1
        self.last = ev.time
        return ev

    def generation(self, gen: Generation) -> Iterator[EventBatch]:
        return (EventBatch.from_events(gen, events) for events in self.event_lists(gen))

    def event_lists(self, gen: Generation) -> Iterator[list[Event]]:
        """The generation's events, cut where ``generation`` cuts its batches."""
        out: list[Event] = []
        try:
            yield from self._run(gen, out)
        except TraceFormatError as e:
            e.partial = out
            raise
        if out:
            yield out

    def _run(self, gen: Generation, out: list[Event]) -> Iterator[list[Event]]:
        mask = self._mask
        stamp = self._stamp
        order = self._order
        queue = order.out
        # Each thread's first event read before the generation's Sync: as Go's
        # reader, a generation whose first events are unreadable has none.
        frontier: list[_Cursor] = []
        for m, batches in gen.batches.items():
            c = _Cursor(m, batches)
            if c.next(gen):
                frontier.append(c)
                _sift_up(frontier, len(frontier) - 1)
        self.syncs += 1
        ev = stamp(Event(SYNC_CODE, gen.ns(gen.min_ticks), -1, -1, -1, [self.syncs], gen))
        if mask[SYNC_CODE]:
            out.append(ev)
        samples, si = gen.cpu_samples, 0
        while True:
            if queue:
                for ev in queue:
                    stamp(ev)
                    if mask[ev.code]:
                        out.append(ev)
                queue.clear()
            if len(out) >= BATCH_EVENTS:
                yield out[:]
                out.clear()
            if not frontier and si == len(samples):
                return
            if si < len(samples) and (not frontier or samples[si].time < frontier[0].time):
                s = samples[si]
                si += 1
                ev = Event(EV_CPU_SAMPLE, s.time, s.m, s.p, s.g, [s.stack], gen)
                check_ids(ev, gen)
                stamp(ev)
                if mask[EV_CPU_SAMPLE]:
                    out.append(ev)
                continue
            if self._try(frontier, 0, gen):
                continue
            frontier.sort(key=_time_of)  # stable, as Go's sort is for the few threads a frontier holds
            for i in range(1, len(frontier)):
                if self._try(frontier, i, gen):
                    break
            else:
                raise OrderingError(
                    "broken trace: failed to advance: no thread's next event can happen", generation=gen.gen
                )

    def _try(self, frontier: list[_Cursor], i: int, gen: Generation) -> bool:
        c = frontier[i]
        if not self._order.advance(c.code, c.time, c.args, c.m, gen):
            return False
        if c.next(gen):
            if _sift_up(frontier, i) == i:
                _sift_down(frontier, i)
        else:
            _heap_remove(frontier, i)
        return True


_NAMES = {s.code: s.name for s in SPECS if s is not None}


class _CompiledEngine:
    """The same, in the compiled core: a generation at a time, a batch of
    columns per call, with the GIL released while it decodes."""

    def __init__(self, mask: bytes, *, fresh: bool = False) -> None:
        self._c = ccore.Engine(_NAMES, mask, fresh)

    def notes(self) -> ccore._EngineNotes:
        """A fresh engine's notes of the generation it ordered (carry_compiled.py reads them)."""
        return self._c.notes()

    def state(self) -> ccore._EngineState:
        """The state carried across generations, as plain values (between generations)."""
        return self._c.state()

    def set_state(self, state: ccore._EngineState) -> None:
        self._c.set_state(state)

    def final_sync(self) -> Event:
        sync = self._c.final_sync()
        return Event(SYNC_CODE, sync.time, -1, -1, -1, [sync.syncs], None)

    def flush(self) -> Iterator[EventBatch]:
        return iter(())

    def generation(self, gen: Generation) -> Iterator[EventBatch]:
        """The generation's batches, lazily: a batch of columns per call, so a
        sequential decoder's reader has the first ones while the rest are
        ordered, and need not hold the generation's columns all at once."""
        self._begin(gen)
        while True:
            out = self._c.run(BATCH_EVENTS)
            batch = self._batch(gen, out)
            if out.n_events:
                yield batch
            if out.done:
                return

    def whole_generation(self, gen: Generation) -> list[EventBatch]:
        """The generation's batches, the same, ordered in one call with the
        GIL released once (``Engine.run_all``): for a pool thread, which
        would otherwise wait for the GIL after every batch while the
        decoder's thread holds it."""
        self._begin(gen)
        batches: list[EventBatch] = []
        for out in self._c.run_all(BATCH_EVENTS):
            batch = self._batch(gen, out)
            if out.n_events:
                batches.append(batch)
        return batches

    def _begin(self, gen: Generation) -> None:
        threads = [
            (m - (1 << 64) if m >= 1 << 63 else m, [(b.payload, b.time, b.payload_offset) for b in batches])
            for m, batches in gen.batches.items()
        ]
        samples = [(s.time, s.m, s.p, s.g, s.stack) for s in gen.cpu_samples]
        self._c.begin(gen.gen, gen.ns_per_tick, gen.min_ticks, threads, samples, gen.strings, gen.stacks.keys())

    @staticmethod
    def _batch(gen: Generation, out: ccore.EngineBatch[bytes] | ccore.EngineBatch[memoryview]) -> EventBatch:
        """An EventBatch of what a run gave; its error raised, with the run's events in its ``partial``."""
        # Only the new ones are added: a reader of this generation in another
        # thread (a span builder, a writer of lines, without the GIL) holds the
        # strings already there, which must stay the same objects.
        gen.extra_strings.extend(out.extra_strings[len(gen.extra_strings) - 1 :])
        batch = EventBatch(gen, out.n_events, out.columns)
        err = out.error
        if err is not None:
            if err.kind == ccore.ERR_MEMORY:
                raise MemoryError(err.message)
            raise (OrderingError if err.kind == ccore.ERR_ORDER else TraceFormatError)(
                err.message, offset=err.offset, generation=gen.gen, partial=list(batch)
            )
        return batch


class OrderingEngine(Protocol):
    """What orders a decoder's generations: one engine in turn (the two
    above), or a pool of them (parallel.py's ParallelEngine), which may hold
    generations back until ``flush``."""

    def generation(self, gen: Generation) -> Iterator[EventBatch]: ...
    def flush(self) -> Iterator[EventBatch]: ...
    def final_sync(self) -> Event: ...


class ModernDecoder:
    """Decodes a Go 1.22+ trace incrementally.

    ``feed`` returns the events of every generation the new bytes complete;
    ``close`` (at the end of the stream) the rest and the final Sync. A
    :class:`TraceFormatError` raised by either carries, in ``partial``, the
    events decoded before the problem. The ``*_batches`` variants give the
    same events as :class:`EventBatch` columns, lazily: consume each
    iterator before feeding more.

    ``kinds`` keeps only events of those kinds (the rest are decoded, and
    checked, but never made). ``compiled`` chooses the implementation: the
    compiled core (True), the pure-Python twin (False) or the compiled core
    when it was built (None). ``version``: the format the header names,
    where the caller read it already (``open_decoder``). ``engine``: what
    orders the generations, in place of one engine of that implementation
    (``open_decoder``'s pool, for ``jobs``).
    """

    def __init__(
        self,
        kinds: Iterable[Kind] | None = None,
        *,
        compiled: bool | None = None,
        version: TraceVersion | None = None,
        engine: OrderingEngine | None = None,
    ) -> None:
        self._frames = FrameReader(version)
        self._asm: GenerationAssembler | None = None
        mask = kind_mask(None if kinds is None else frozenset(kinds))
        fast = use_compiled(compiled)
        self._engine: OrderingEngine = engine or (_CompiledEngine(mask) if fast else _PythonEngine(mask))
        self._sync_wanted = bool(mask[SYNC_CODE])
        self.implementation = "compiled" if fast else "python"
        self.generations = 0
        # A table ended the trace, as Go's reader ends it: what said so (nothing is read after it).
        self.ended_in_table: TraceEndsInTable | None = None

    @property
    def minor(self) -> int | None:
        return self._frames.minor

    @property
    def version(self) -> TraceVersion | None:
        """The trace's format version, once its header is in."""
        return self._frames.version

    @property
    def largest_generation(self) -> int:
        """Bytes of the largest generation decoded so far."""
        return self._asm.largest if self._asm is not None else 0

    def feed(self, data: bytes) -> list[Event]:
        return _collect(self.feed_batches(data))

    def close(self) -> list[Event]:
        return _collect(self.close_batches())

    def abandon(self, discard_generation: int | None) -> list[Event]:
        return _collect(self.abandon_batches(discard_generation))

    def feed_batches(self, data: bytes) -> Iterator[EventBatch]:
        if self.ended_in_table is not None:
            return iter(())
        frames, failed = self._frames.feed_until_error(data)
        if self._frames.minor is None:  # (the header itself was bad, or is not all in yet)
            if failed is not None:
                raise failed
            return iter(())
        if not frames and failed is None:
            return iter(())
        asm = self._asm
        if asm is None:
            asm = self._asm = GenerationAssembler(self._frames.minor, self.implementation == "compiled")
        return self._assembled(lambda: asm.push_until_error(frames), failed=failed)

    def close_batches(self) -> Iterator[EventBatch]:
        if self.ended_in_table is not None:
            return
        try:
            self._frames.close()
        except TraceFormatError as e:
            # What came before the cut still counts: a generation that was
            # whole but for its end is delivered (as Go's reader does), if its
            # tables made it; either way the cut is what gets reported. A
            # stream cut before its header ends has no events, not even a Sync.
            if self._frames.version is None:
                e.partial = []
                raise
            yield from self._decode([], flush=True)  # the generations a pool still held
            e.partial = self._salvage(e.offset or 0)
            raise
        yield from self._assembled(
            lambda: (self._asm.close(self._frames.offset) if self._asm else [], None), flush=True
        )
        sync = self._final_sync()
        if sync:
            yield EventBatch.from_events(None, sync)

    def abandon_batches(self, discard_generation: int | None) -> Iterator[EventBatch]:
        """Stop at a gap in the stream (the helper shed generations).

        The generation being assembled is dropped if it is the one the gap
        discards (or, on 1.26+, always, as it lacks its end); on 1.22 to
        1.25 it is otherwise complete and its events are returned.
        """
        if self.ended_in_table is not None:
            return iter(())
        asm = self._asm
        if asm is None or asm.current is None:
            return self._decode([], flush=True)
        if asm.version.has_end_of_generation or asm.current.gen == discard_generation:
            asm.current = None
            return self._decode([], flush=True)
        return self._assembled(lambda: (asm.close(self._frames.offset), None), flush=True)

    def _final_sync(self) -> list[Event]:
        ev = self._engine.final_sync()
        return [ev] if self._sync_wanted else []

    def _salvage(self, offset: int) -> list[Event]:
        """Events of the generation a cut interrupted, if it was whole but
        for its end (Go 1.22-1.25, which has no end to look for), then the
        final Sync. As Go's reader: its tables missing or broken is just the
        cut, after that Sync; its events unreadable or contradicting each
        other is reported over the cut (raised, with those before it)."""
        events: list[Event] = []
        if self._asm is not None and not self._asm.version.has_end_of_generation:
            try:
                gens = self._asm.close(offset)
            except TraceFormatError:
                gens = []
            events += _collect(self._decode(gens, flush=True))
        return events + self._final_sync()

    def _assembled(
        self,
        step: Callable[[], tuple[list[Generation], TraceFormatError | None]],
        *,
        flush: bool = False,
        failed: TraceFormatError | None = None,
    ) -> Iterator[EventBatch]:
        """The batches of the generations ``step`` assembles, then its error,
        or ``failed``, the framing's (past the frames step was given). What
        came before the problem comes first, as Go's reader gives it: those
        a pool still held, and the generations completed before it; where
        the framing failed in a Go 1.22-1.25 generation, the one read so far
        too (the reader takes it as whole, having no end to look for)."""
        try:
            gens, error = step()
        except TraceFormatError as e:
            yield from self._decode([], flush=True)
            e.partial = self._final_sync()
            raise
        if error is None and failed is None:
            yield from self._decode(gens, flush=flush)
            return
        yield from self._decode(gens, flush=True)
        if isinstance(error, TraceEndsInTable):
            # Go's reader stops there, without an error: the framing's, past it, is never met.
            self.ended_in_table = error
            sync = self._final_sync()
            if sync:
                yield EventBatch.from_events(None, sync)
            return
        if error is None:
            assert failed is not None
            failed.partial = self._salvage(failed.offset or 0)
            raise failed
        error.partial = self._final_sync()
        raise error

    def _decode(self, gens: list[Generation], *, flush: bool = False) -> Iterator[EventBatch]:
        for g in gens:
            self.generations += 1
            yield from self._engine.generation(g)
        if flush:
            yield from self._engine.flush()


def _collect(batches: Iterator[EventBatch]) -> list[Event]:
    """All events of the batches; on an error, those before it in its partial."""
    out: list[Event] = []
    try:
        for b in batches:
            out.extend(b)
    except TraceFormatError as e:
        e.partial = out + (e.partial or [])
        raise
    return out


def _time_of(c: _Cursor) -> int:
    return c.time
