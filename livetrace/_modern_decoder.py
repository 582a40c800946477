"""The modern trace decoder, sans-IO: bytes in, ordered events out.

Feed it the stream in any pieces; every generation's events come out as
soon as the generation is complete, merged across threads in time order as
far as the ordering engine allows. Identical output for any chunking.
"""

from __future__ import annotations

from ._errors import TraceFormatError
from ._events import SYNC_CODE, STACK_ARG, STRING_ARGS, Event
from ._modern_gen import Generation, GenerationAssembler
from ._modern_order import Ordering, OrderingError
from ._modern_spec import SPECS
from ._modern_wire import FrameReader, read_uvarint

# Codes that may stand in a thread's event batch, with their argument
# counts (the timestamp delta included).
_TIMED = [0] * 256
for _c in (*range(9, 49), 51, *range(128, 137)):
    _spec = SPECS[_c]
    assert _spec is not None
    _TIMED[_c] = len(_spec.args)


class _Cursor:
    """Reads one thread's batches of a generation, one timed event at a time."""

    __slots__ = ("m", "batches", "bi", "off", "last", "time", "code", "args")

    def __init__(self, m: int, batches: list) -> None:  # type: ignore[type-arg]
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
            what = "found invalid event type" if code > 136 else "found event without a timestamp: type="
            raise TraceFormatError(f"{what}{'' if what.endswith('=') else ': '}{code}",
                                   offset=b.payload_offset + i, generation=gen.gen)
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
            raise TraceFormatError("found invalid uvarint", offset=b.payload_offset + self.off,
                                   generation=gen.gen) from None
        dt = vals[0]
        args = vals[1:]
        self.time = gen.ns(dt) + self.last
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


class ModernDecoder:
    """Decodes a Go 1.22+ trace incrementally.

    ``feed`` returns the events of every generation the new bytes complete;
    ``close`` (at the end of the stream) the rest and the final Sync. A
    :class:`TraceFormatError` raised by either carries, in ``partial``, the
    events decoded before the problem.
    """

    def __init__(self) -> None:
        self._frames = FrameReader()
        self._asm: GenerationAssembler | None = None
        self._order = Ordering()
        self._last = 0
        self._syncs = 0
        self.generations = 0

    @property
    def minor(self) -> int | None:
        return self._frames.minor

    def feed(self, data: bytes) -> list[Event]:
        frames = self._frames.feed(data)
        if not frames:
            return []
        if self._asm is None:
            assert self._frames.minor is not None
            self._asm = GenerationAssembler(self._frames.minor)
        return self._run(lambda: self._asm.push(frames))  # type: ignore[union-attr]

    def close(self) -> list[Event]:
        try:
            self._frames.close()
        except TraceFormatError as e:
            # What came before the cut still counts: a generation that was
            # whole but for its end is delivered (as Go's reader does), if its
            # tables made it; either way the cut is what gets reported.
            e.partial = self._salvage(e.offset or 0)  # type: ignore[attr-defined]
            raise
        out = self._run(lambda: self._asm.close(self._frames.offset) if self._asm else [])
        out.append(self._sync(None))
        return out

    def abandon(self, discard_generation: int | None) -> list[Event]:
        """Stop at a gap in the stream (the helper shed generations).

        The generation being assembled is dropped if it is the one the gap
        discards (or, on 1.26+, always, as it lacks its end); on 1.22 to
        1.25 it is otherwise complete and its events are returned.
        """
        asm = self._asm
        if asm is None or asm.current is None:
            return []
        if asm.minor >= 26 or asm.current.gen == discard_generation:
            asm.current = None
            return []
        return self._events(asm.close(self._frames.offset))

    def _salvage(self, offset: int) -> list[Event]:
        """Events of the generation a cut interrupted, if it was whole but
        for its end. Its events contradicting each other is reported over the
        cut; its tables missing is just the cut."""
        events: list[Event] = []
        if self._asm is not None and self._asm.minor < 26:
            try:
                events = self._events(self._asm.close(offset))
            except OrderingError:
                raise
            except TraceFormatError as e:
                events = getattr(e, "partial", [])
        return events + [self._sync(None)]

    def _run(self, step) -> list[Event]:  # type: ignore[no-untyped-def]
        try:
            gens = step()
        except TraceFormatError as e:
            e.partial = [self._sync(None)]  # type: ignore[attr-defined]
            raise
        return self._events(gens)

    def _events(self, gens: list[Generation]) -> list[Event]:
        out: list[Event] = []
        for g in gens:
            try:
                self._generation(g, out)
            except TraceFormatError as e:
                e.partial = out  # type: ignore[attr-defined]
                raise
        return out

    def _sync(self, gen: Generation | None, time: int | None = None) -> Event:
        self._syncs += 1
        return self._stamp(Event(SYNC_CODE, self._last if time is None else time, -1, -1, -1, [self._syncs], gen))

    def _stamp(self, ev: Event) -> Event:
        # Event times never go backwards, nor repeat.
        if ev.time <= self._last:
            ev.time = self._last + 1
        self._last = ev.time
        return ev

    def _generation(self, gen: Generation, out: list[Event]) -> None:
        self.generations += 1
        out.append(self._sync(gen, gen.ns(gen.min_ticks)))
        order = self._order
        queue = order.out
        frontier: list[_Cursor] = []
        for m, batches in gen.batches.items():
            c = _Cursor(m, batches)
            if c.next(gen):
                frontier.append(c)
                _sift_up(frontier, len(frontier) - 1)
        samples, si = gen.cpu_samples, 0
        stamp, emit = self._stamp, out.append
        while True:
            if queue:
                for ev in queue:
                    _check_ids(ev, gen)
                    emit(stamp(ev))
                queue.clear()
            if not frontier and si == len(samples):
                return
            if si < len(samples) and (not frontier or samples[si].time < frontier[0].time):
                s = samples[si]
                si += 1
                ev = Event(7, s.time, s.m, s.p, s.g, [s.stack], gen)
                _check_ids(ev, gen)
                emit(stamp(ev))
                continue
            if self._try(frontier, 0, gen):
                continue
            frontier.sort(key=_time_of)  # stable, as Go's sort is for the few threads a frontier holds
            for i in range(1, len(frontier)):
                if self._try(frontier, i, gen):
                    break
            else:
                raise OrderingError("broken trace: failed to advance: no thread's next event can happen",
                                    generation=gen.gen)

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


def _time_of(c: _Cursor) -> int:
    return c.time


def _check_ids(ev: Event, gen: Generation) -> None:
    code, args = ev.code, ev.args
    i = STACK_ARG[code]
    if i >= 0 and args[i] not in gen.stacks:
        raise TraceFormatError(f"found invalid stack ID {args[i]} for event {SPECS[code].name}",  # type: ignore[union-attr]
                               generation=gen.gen)
    if code in (14, 47) and args[1] not in gen.stacks:
        raise TraceFormatError(f"found invalid stack ID {args[1]} for event {SPECS[code].name}",  # type: ignore[union-attr]
                               generation=gen.gen)
    for j in STRING_ARGS.get(code, ()):
        if args[j] not in gen.strings:
            raise TraceFormatError(f"found invalid string ID {args[j]} for event {SPECS[code].name}",  # type: ignore[union-attr]
                                   generation=gen.gen)
