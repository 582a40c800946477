"""Decoded events in batches stored as columns.

An :class:`EventBatch` is a run of consecutive events of one generation.
The compiled core writes its columns directly; Python :class:`Event`
objects are made only for the events someone indexes or iterates. The
pure-Python twin hands over the events it made and the columns are built
from them when first asked for.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import overload

from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.model.events import EVENT_NARGS, EVENT_NEXTRA, KIND_OF_CODE, Event, Kind
from livetrace._trace.model.tables import Tables

NARGS = 4  # argument columns per event
NEXTRA = 2  # extra columns per event: old state, a task's parent and type
# The bytes of an event's columns (its code; time, thread, proc and goroutine; NARGS arguments and
# NEXTRA extras): what the live pipeline counts an event as against its cap on bytes.
EVENT_BYTES = 1 + 8 * (4 + NARGS + NEXTRA)
KIND_TABLE = bytes(KIND_OF_CODE)  # code -> Kind, for bytes.translate


def kind_mask(kinds: frozenset[Kind] | None) -> bytes:
    """256 bytes: 1 for the codes whose events are of the given kinds."""
    return bytes(1 if kinds is None or KIND_OF_CODE[c] in kinds else 0 for c in range(256))


class EventBatch(Sequence[Event]):
    """Consecutive events of one generation.

    Index or iterate it for :class:`Event` objects, or read the columns
    (memoryviews, one item per event unless said otherwise) to avoid making
    them: ``codes`` (wire event type; 255 for a Sync), ``kinds`` (bytes of
    :class:`Kind` values), ``times`` (ns), ``threads``, ``procs``,
    ``goroutines`` (-1: none), ``args`` (4 per event, unsigned; an event
    uses as many as its code has) and ``extra`` (2 per event: what the
    ordering engine learned, such as a transition's old state). ``gen`` is
    the :class:`Tables` the events' ids refer to, one object per generation
    (or legacy trace segment).
    """

    __slots__ = ("_cols", "_events", "_n", "gen")

    def __init__(
        self, gen: Tables | None, n: int, cols: tuple[bytes | memoryview, ...] | None, events: list[Event] | None = None
    ) -> None:
        self.gen = gen
        self._n = n
        self._events = events
        self._cols: tuple[memoryview, ...] | None = None
        if cols is not None:
            code, time, m, p, g, args, extra = cols
            self._cols = (
                memoryview(code),
                memoryview(time).cast("q"),
                memoryview(m).cast("q"),
                memoryview(p).cast("q"),
                memoryview(g).cast("q"),
                memoryview(args).cast("Q"),
                memoryview(extra).cast("Q"),
            )

    @classmethod
    def from_events(cls, gen: Tables | None, events: list[Event]) -> EventBatch:
        return cls(gen, len(events), None, events)

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Event: ...
    @overload
    def __getitem__(self, i: slice) -> list[Event]: ...

    def __getitem__(self, i: int | slice) -> Event | list[Event]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._n))]
        if self._events is not None:
            return self._events[i]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("event index out of range")
        code, time, m, p, g, args, extra = self._columns()
        c = code[i]
        return Event(
            c,
            time[i],
            m[i],
            p[i],
            g[i],
            list(args[i * NARGS : i * NARGS + EVENT_NARGS[c]]),
            self.gen,
            tuple(extra[i * NEXTRA : i * NEXTRA + EVENT_NEXTRA[c]]),
        )

    def __iter__(self) -> Iterator[Event]:
        if self._events is not None:
            return iter(self._events)
        return self._make_events()

    def _make_events(self) -> Iterator[Event]:
        code, time, m, p, g, args, extra = (c.tolist() for c in self._columns())
        gen, nargs, nextra = self.gen, EVENT_NARGS, EVENT_NEXTRA
        for i, c in enumerate(code):
            a, x = i * NARGS, i * NEXTRA
            yield Event(c, time[i], m[i], p[i], g[i], args[a : a + nargs[c]], gen, tuple(extra[x : x + nextra[c]]))

    def take(self, indices: Sequence[int]) -> EventBatch:
        """The events at ``indices`` (ascending), as a batch of the same
        generation, made from the columns (on the compiled core, or from the
        events the twin already made) without making an Event each."""
        if self._events is not None:
            evs = self._events
            return EventBatch.from_events(self.gen, [evs[i] for i in indices])
        idx = indices if isinstance(indices, array) and indices.typecode == "q" else array("q", indices)
        cols = self._columns()
        if use_compiled():
            return EventBatch(self.gen, len(idx), ccore.take_columns(idx, *cols))
        flat = (array("B", cols[0].tobytes()), *(c.tolist() for c in cols[1:]))
        code, time, m, p, g, args, extra = flat
        return EventBatch(
            self.gen,
            len(idx),
            (
                bytes(code[i] for i in idx),
                array("q", [time[i] for i in idx]).tobytes(),
                array("q", [m[i] for i in idx]).tobytes(),
                array("q", [p[i] for i in idx]).tobytes(),
                array("q", [g[i] for i in idx]).tobytes(),
                array("Q", [a for i in idx for a in args[i * NARGS : i * NARGS + NARGS]]).tobytes(),
                array("Q", [x for i in idx for x in extra[i * NEXTRA : i * NEXTRA + NEXTRA]]).tobytes(),
            ),
        )

    def columns(self) -> tuple[memoryview, ...]:
        """(codes, times, threads, procs, goroutines, args, extra)."""
        return self._columns()

    def _columns(self) -> tuple[memoryview, ...]:
        if self._cols is None:
            evs = self._events or []
            args = array("Q", bytes(8 * NARGS * len(evs)))
            extra = array("Q", bytes(8 * NEXTRA * len(evs)))
            for i, e in enumerate(evs):
                args[i * NARGS : i * NARGS + len(e.args)] = array("Q", e.args)
                extra[i * NEXTRA : i * NEXTRA + len(e.extra)] = array("Q", e.extra)
            cols = (
                array("B", [e.code for e in evs]),
                array("q", [e.time for e in evs]),
                array("q", [e.m for e in evs]),
                array("q", [e.p for e in evs]),
                array("q", [e.g for e in evs]),
                args,
                extra,
            )
            self._cols = tuple(memoryview(c) for c in cols)
        return self._cols

    @property
    def codes(self) -> memoryview:
        return self._columns()[0]

    @property
    def kinds(self) -> bytes:
        return bytes(self.codes).translate(KIND_TABLE)

    @property
    def times(self) -> memoryview:
        return self._columns()[1]

    @property
    def threads(self) -> memoryview:
        return self._columns()[2]

    @property
    def procs(self) -> memoryview:
        return self._columns()[3]

    @property
    def goroutines(self) -> memoryview:
        return self._columns()[4]

    @property
    def args(self) -> memoryview:
        return self._columns()[5]

    @property
    def extra(self) -> memoryview:
        return self._columns()[6]

    def __repr__(self) -> str:
        return f"<EventBatch of {self._n} events, generation {self.gen.gen if self.gen else None}>"
