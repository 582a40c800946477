"""One decoder for every trace format, sans-IO: bytes in, event batches out.

:func:`open_decoder` looks at a stream's first bytes and picks the format's
decoder; everything that decodes events (``livetrace.decode``, ``livetrace
decode --dump parsed``, live sessions) goes through it, so the choice between
the modern format (Go 1.22+) and the legacy ones (Go 1.5 to 1.21, gotrace)
is made here only.

Both decoders give :class:`EventBatch` objects, identical for any chunking
of the input and on the compiled core or its twin, and :class:`Notice`
objects. They differ in when events come:

- **modern**: each generation's events as soon as the generation is
  complete (its end on Go 1.26+, the next generation's first batch before),
  the last one and the final Sync at ``close``;
- **legacy**: a legacy trace can only be ordered once its footer is in, and
  the footer is simply the end of the stream, so ``feed`` gives nothing and
  ``close`` gives a :class:`SymbolsResolved` notice and then all the exact
  events. (Live, with ``provisional`` and each chunk's read time, ``feed``
  also gives :class:`Provisional` batches as the chunks arrive; and in
  segment mode, where the helper says when each segment's footer is in,
  ``end_segment`` gives the segment's exact events.)
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator

from livetrace._errors import TraceFormatError
from livetrace._items import Notice, Provisional
from livetrace._trace.accel import use_compiled
from livetrace._trace.legacy.live import LegacyLive
from livetrace._trace.model.batch import EventBatch, kind_mask
from livetrace._trace.model.events import Event, Kind
from livetrace._trace.modern.decoder import ModernDecoder
from livetrace._trace.modern.generation import TraceEndsInTable
from livetrace._trace.modern.parallel import ParallelEngine, SharedPool
from livetrace._trace.version import HEADER_SIZE, TraceVersion, header_size, sniff

Item = EventBatch | Provisional | Notice


class TraceDecoder(abc.ABC):
    """Decodes one trace, of either family, fed in any pieces.

    ``feed`` returns what the new bytes complete, ``close`` (at the end of
    the stream) the rest: :class:`EventBatch` objects and notices. A
    :class:`TraceFormatError` raised by either carries, in ``partial``, the
    events decoded before the problem that were not returned. The
    ``*_iter`` variants give the same items lazily (one batch at a time):
    consume each iterator before feeding more.
    """

    legacy: bool  # Go 1.21 and older, or gotrace
    # The format the stream's header names: read once, by open_decoder, and
    # passed down; None if the stream was too short to tell.
    version: TraceVersion | None = None

    def feed(self, data: bytes, read_unix_ns: int | None = None) -> list[Item]:
        """``read_unix_ns``: when the bytes were read, for a live legacy
        trace's clock (ignored otherwise)."""
        return _collect(self.feed_iter(data, read_unix_ns))

    def close(self) -> list[Item]:
        return _collect(self.close_iter())

    @abc.abstractmethod
    def feed_iter(self, data: bytes, read_unix_ns: int | None = None) -> Iterator[Item]: ...

    @abc.abstractmethod
    def close_iter(self) -> Iterator[Item]: ...

    def gap(self, discard_generation: int | None = None) -> Iterator[Item]:
        """A live session's gap (the helper shed generations): what the
        decoder completes before it (the caller then gives the gap's
        notice); decoding goes on after it. ``discard_generation``: the
        shed generation whose chunks that already arrived are to be thrown
        away (a :class:`Gap`'s ``first_generation`` if ``discard_received``)."""
        return iter(())

    def ready(self) -> Iterator[Item]:
        """What a pool ordered since the last call, with nothing more fed
        (generations ordered apart: ``open_decoder``'s ``jobs``); the rest
        come from later calls, as they are ordered."""
        return iter(())

    def end_segment(self, stopped_unix_ns: int) -> Iterator[Item]:
        """A live legacy segment is over and complete (segment mode), and
        tracing stopped at ``stopped_unix_ns`` until the next segment's
        first chunk was read."""
        return iter(())

    @property
    def ended_in_table(self) -> TraceEndsInTable | None:
        """What ended the trace inside a generation's tables, as Go's reader
        ends it there (a file's decoding then stops without an error); None
        if nothing did."""
        return None

    @abc.abstractmethod
    def end_trace(self) -> Iterator[Item]:
        """The trace is over and complete, and another trace of the same
        process follows (a net/http/pprof session's next window): what it
        completes, as ``close`` would; the next bytes fed begin with the
        next trace's header."""

    @property
    def largest_generation(self) -> int:
        """Bytes of the largest generation (or legacy segment) decoded so far."""
        return 0

    @property
    def peak_in_flight(self) -> tuple[int, int]:
        """The most generations that were in flight at once, ordered in a
        pool or held by its user (``shared``), when one was given to it; and
        the most bytes, when more than one was."""
        return 0, 0


class _Modern(TraceDecoder):
    legacy = False

    def __init__(
        self,
        kinds: frozenset[Kind] | None,
        compiled: bool | None,
        version: TraceVersion | None,
        jobs: int,
        shared: SharedPool | None,
    ) -> None:
        self._kinds = kinds
        self._compiled = compiled
        self._jobs = jobs
        self._shared = shared
        self._pool: ParallelEngine | None = None
        self._peak = (0, 0)  # the engines' before this one
        self.version = version
        self._header = b""  # to start afresh after a gap
        self._largest = 0
        self._decoder = self._new(version)
        self._ended = False  # the trace ended (end_trace), and the next has not begun

    def _new(self, version: TraceVersion | None) -> ModernDecoder:
        """A decoder for the trace, or for what follows a gap; with more than
        one job, its generations are ordered in a pool (modern/parallel.py)."""
        self._peak = self.peak_in_flight
        self._pool = None
        if self._jobs > 1:
            mask = kind_mask(self._kinds)
            compiled = use_compiled(self._compiled)
            self._pool = ParallelEngine(mask, compiled=compiled, jobs=self._jobs, shared=self._shared)
        return ModernDecoder(self._kinds, compiled=self._compiled, version=version, engine=self._pool)

    def ready(self) -> Iterator[Item]:
        return iter(()) if self._pool is None else self._pool.ready()

    @property
    def peak_in_flight(self) -> tuple[int, int]:
        now = (0, 0) if self._pool is None else (self._pool.peak, self._pool.peak_bytes)
        return max(self._peak[0], now[0]), max(self._peak[1], now[1])

    def feed_iter(self, data: bytes, read_unix_ns: int | None = None) -> Iterator[Item]:
        self._ended = self._ended and not data
        if len(self._header) < HEADER_SIZE:
            self._header += data[: HEADER_SIZE - len(self._header)]
        return self._decoder.feed_batches(data)

    def close_iter(self) -> Iterator[Item]:
        return iter(()) if self._ended else self._decoder.close_batches()

    @property
    def ended_in_table(self) -> TraceEndsInTable | None:
        return self._decoder.ended_in_table

    def end_trace(self) -> Iterator[Item]:
        if not self._ended:
            yield from self._decoder.close_batches()
        self._largest = self.largest_generation
        self._header = b""
        # The next trace (a pprof window) is a stream of its own: its header is read anew.
        self._decoder = self._new(None)
        self._ended = True

    def gap(self, discard_generation: int | None = None) -> Iterator[Item]:
        # Start afresh on the next generation, as a new first generation, as
        # Go's reader does for a flight-recorder snapshot.
        yield from self._decoder.abandon_batches(discard_generation)
        self._largest = self.largest_generation
        self._decoder = self._new(self._decoder.version)
        for _ in self._decoder.feed_batches(self._header):
            pass

    @property
    def largest_generation(self) -> int:
        return max(self._largest, self._decoder.largest_generation)


class _Legacy(TraceDecoder):
    legacy = True

    def __init__(
        self, kinds: frozenset[Kind] | None, compiled: bool | None, provisional: bool, version: TraceVersion
    ) -> None:
        self.version = version
        self._live = LegacyLive(kinds, provisional=provisional, compiled=compiled, version=version)

    def feed_iter(self, data: bytes, read_unix_ns: int | None = None) -> Iterator[Item]:
        return self._live.feed(data, read_unix_ns) if data else iter(())

    def close_iter(self) -> Iterator[Item]:
        return self._live.end_segment(None)

    def end_segment(self, stopped_unix_ns: int) -> Iterator[Item]:
        return self._live.end_segment(stopped_unix_ns)

    @property
    def largest_generation(self) -> int:
        return self._live.largest_segment

    def end_trace(self) -> Iterator[Item]:
        # As at the end of the stream: times go on counting from the first
        # trace's start, and the window's gap is the caller's notice to give.
        return self._live.end_segment(None)


def open_decoder(
    header: bytes,
    kinds: Iterable[Kind] | None = None,
    *,
    provisional: bool = False,
    compiled: bool | None = None,
    jobs: int = 1,
    shared: SharedPool | None = None,
) -> TraceDecoder:
    """A decoder for the trace whose stream begins with ``header``: its
    first 16 bytes or more (all of a shorter stream; a gotrace stream's 8).
    ``header`` is only looked at: feed the decoder the whole stream, from
    its first byte. Raises :class:`TraceFormatError` for a header no Go
    wrote, ``UnsupportedTraceVersionError`` for a version we do not read.

    ``kinds`` keeps only events of those kinds (the others are decoded,
    and checked, but never made); ``provisional`` asks a legacy trace for
    its provisional events (live, with read times); ``compiled`` chooses the
    compiled core (True), its twin (False) or the core where it was built
    (None). ``jobs``: a Go 1.22+ trace's generations are ordered by up to
    that many threads at once (the same events, each generation's a little
    later, as up to ``jobs`` generations are ordered before the first is
    given); a legacy trace is ordered by one. ``shared``: the pool they are
    ordered in, its user's (a live session's), in place of one of their own.
    """
    wanted = None if kinds is None else frozenset(kinds)
    size = header_size(header)
    # The one place a stream's header is read: its version is passed down.
    # A stream too short for a header: the modern decoder says how, at close.
    version = sniff(header[:size]) if len(header) >= size else None
    if version is not None and version.is_legacy:
        return _Legacy(wanted, compiled, provisional, version)
    return _Modern(wanted, compiled, version, jobs, shared)


def _collect(items: Iterator[Item]) -> list[Item]:
    """All the items; on an error, the events before it in its partial."""
    out: list[Item] = []
    try:
        out.extend(items)
    except TraceFormatError as e:
        done: list[Event] = [ev for item in out if isinstance(item, EventBatch) for ev in item]
        e.partial = done + (e.partial or [])
        raise
    return out
