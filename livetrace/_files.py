"""Trace files through the one decoder: where decoding meets a file."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, BinaryIO

from livetrace._errors import TraceFormatError
from livetrace._items import Notice, TraceGap
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import SYNC_CODE, Event, Kind
from livetrace._trace.version import HEADER_SIZE

if TYPE_CHECKING:
    from livetrace._trace.decoder import Item
    from livetrace._trace.select.filter import Filter
    from livetrace._trace.spans.batch import SpanBatch
    from livetrace._trace.spans.model import Span

READ_SIZE = 1 << 20
Source = str | os.PathLike[str] | BinaryIO


def pieces(stream: BinaryIO) -> Iterator[bytes]:
    """The stream's bytes as they can be read."""
    # read1 returns what is available instead of waiting for a full buffer,
    # so a pipe is decoded as it arrives.
    read = getattr(stream, "read1", stream.read)
    while data := read(READ_SIZE):
        yield data


def head(stream: BinaryIO) -> tuple[bytes, Iterator[bytes]]:
    """The stream's first bytes (at least 16, unless it is shorter), and all
    its pieces, those included."""
    rest = pieces(stream)
    first = b""
    for data in rest:
        first += data
        if len(first) >= HEADER_SIZE:
            break
    return first, itertools.chain([first], rest)


@contextmanager
def _opened(source: Source) -> Iterator[BinaryIO]:
    if hasattr(source, "read"):
        yield source  # type: ignore[misc]  # hasattr does not narrow the union: a file object
        return
    with open(source, "rb") as f:
        yield f


def decode_batches(
    source: Source, kinds: Iterable[Kind] | None = None, *, compiled: bool | None = None, jobs: int = 1
) -> Iterator[EventBatch | Notice]:
    """A whole trace file (a path, or a binary file object read to its end),
    of any format, as :class:`EventBatch` objects, in order, and the
    decoder's notices (a legacy trace's :class:`SymbolsResolved` before its
    events). ``kinds`` and ``compiled`` as for :func:`open_decoder`. A
    malformed or truncated trace raises :class:`TraceFormatError`, whose
    ``partial`` holds the events decoded before the problem and not yet
    yielded.

    A file may hold several complete traces, one after another (what
    ``livetrace record -o -`` writes for a net/http/pprof session's
    windows): each is decoded as if it were alone, and a
    :class:`~livetrace.TraceGap` comes between two.

    ``jobs``: a Go 1.22+ trace's generations are ordered by up to that many
    threads at once, the same batches as with one (at most jobs + 2
    generations are held at a time)."""
    with _opened(source) as stream:
        yield from decode_pieces(pieces(stream), kinds, compiled=compiled, jobs=jobs)


def decode_pieces(
    data: Iterable[bytes], kinds: Iterable[Kind] | None = None, *, compiled: bool | None = None, jobs: int = 1
) -> Iterator[EventBatch | Notice]:
    """:func:`decode_batches` of a stream given as its pieces."""
    # Here, not at the top: `livetrace decode --dump wire` reads its file
    # through this module and needs no decoder.
    from livetrace._trace.decoder import TraceDecoder, open_decoder
    from livetrace._trace.stream import NextTrace, split_traces

    decoder: TraceDecoder | None = None
    between = _Between(measure=kinds is None)
    for piece in split_traces(data):
        if isinstance(piece, NextTrace):
            assert decoder is not None
            yield from between.items(_called(decoder.close_iter))
            between.ended(decoder.legacy)
            decoder = None
            continue
        if decoder is None:
            try:
                decoder = open_decoder(piece, kinds, compiled=compiled, jobs=jobs)
            except TraceFormatError:  # a header no Go wrote: after the gap, if it is not the first
                yield from between.gap(None)
                raise
            between.began(decoder.legacy)
        yield from between.items(_called(decoder.feed_iter, piece))
    if decoder is None:  # an empty stream: the decoder says so
        decoder = open_decoder(b"", kinds, compiled=compiled)
    yield from between.items(_called(decoder.close_iter))
    yield from between.gap(None)


def _called(fn: Callable[..., Iterator[Item]], *args: bytes) -> Iterator[Item]:
    """fn's items, fn called when the first is asked for: an error it raises
    at once (a stream cut, with the events a pool of jobs still held in its
    partial) goes through _Between.items, as one raised later does."""
    yield from fn(*args)


class _Between:
    """The gaps between the traces of a stream. One is held until the next
    trace's first event: where both traces are Go 1.22+ traces, whose times
    are the machine's monotonic clock, the two events say how long nothing
    was traced (``measure``: unless only some kinds of events are made).
    A legacy trace's times count from its own start, and tell nothing."""

    def __init__(self, *, measure: bool) -> None:
        self._measure = measure
        self._traces = 1  # the trace under way is the stream's n-th
        self._modern = False  # the trace under way is a Go 1.22+ one
        self._last: int | None = None  # the time of its last event so far
        self._pending = False  # the trace before ended, and its gap is still to come
        self._before: int | None = None  # the time of the last event of the trace before

    def began(self, legacy: bool) -> None:
        self._modern, self._last = not legacy, None

    def ended(self, legacy: bool) -> None:
        self._pending, self._before = True, None if legacy or not self._measure else self._last
        self._traces += 1

    def items(self, items: Iterator[Item]) -> Iterator[EventBatch | Notice]:
        try:
            for item in items:
                if isinstance(item, EventBatch):
                    if len(item):
                        yield from self.gap(item.times[0])
                        self._last = item.times[-1]
                else:
                    yield from self.gap(None)
                yield item  # type: ignore[misc]  # no read times: never Provisional
        except TraceFormatError:
            yield from self.gap(None)
            raise

    def gap(self, first: int | None) -> Iterator[Notice]:
        """The gap still to come, if any, now that the next trace's first
        event (at ``first``, if it is an event) is here."""
        if not self._pending:
            return
        self._pending = False
        before = self._before
        if self._modern and before is not None and first is not None and first >= before:
            yield TraceGap(0, 0, 0, 0, False, window=self._traces - 1, seconds=(first - before) / 1e9, measured=True)
        else:
            yield TraceGap(0, 0, 0, 0, False, window=self._traces - 1)


def decode(source: Source, kinds: Iterable[Kind] | None = None, *, compiled: bool | None = None) -> Iterator[Event]:
    """A whole trace file's events, of any format, in order: the exact
    events ``livetrace decode --dump parsed`` prints. On a malformed or
    truncated trace, the events before the problem come first, then the
    :class:`TraceFormatError`."""
    try:
        for item in decode_batches(source, kinds, compiled=compiled):
            if isinstance(item, EventBatch):
                yield from item
    except TraceFormatError as e:
        yield from e.partial or []
        raise


class GenerationEnd:
    """The mark :meth:`WholeGenerations.with_ends` gives after a generation's batches."""


GENERATION_END = GenerationEnd()


class WholeGenerations:
    """A decoder's items (as :func:`decode_batches` gives them), a Go 1.22+ trace's
    generation at a time: its batches come once the next one begins (or the
    trace ends). So on a malformed or truncated trace, what comes before
    the :class:`TraceFormatError` is every generation read whole and
    nothing of the one that failed: what ``go tool trace`` analyzes of a
    trace it could read only in part (its profiles count the events up to
    the last generation's start: the error's ``partial`` is left out, but a
    Sync in it says the generation before was whole). A generation's
    batches are held until then: its events, never more; a legacy trace's,
    which come only once it was read whole, are not held. ``decoded``:
    whether any event but a Sync was, whole generation or not (Go's
    profiles give up on a trace with no goroutine)."""

    def __init__(self, items: Iterable[EventBatch | Notice]) -> None:
        self._items = items
        self.decoded = False

    def __iter__(self) -> Iterator[EventBatch | Notice]:
        return (item for item in self.with_ends() if not isinstance(item, GenerationEnd))

    def with_ends(self) -> Iterator[EventBatch | Notice | GenerationEnd]:
        """The same, with :data:`GENERATION_END` after a Go 1.22+
        generation's batches where the next generation begins: the moment it
        is known whole and more is to come (the last one's end is the
        trace's: what comes after it, the final Sync or a gap between
        traces, is its)."""
        from livetrace._trace.modern.generation import Generation

        held: list[EventBatch] = []

        def whole(mark: bool = False) -> Iterator[EventBatch | GenerationEnd]:
            if held:
                yield from held
                held.clear()
                if mark:
                    yield GENERATION_END

        try:
            for item in self._items:
                if isinstance(item, EventBatch):
                    self.decoded = self.decoded or any(code != SYNC_CODE for code in item.columns()[0])
                    if held and item.gen is not held[-1].gen:  # (a new generation starts with its Sync)
                        yield from whole(mark=item.gen is not None)  # (None: the trace's final Sync)
                    if isinstance(item.gen, Generation):
                        held.append(item)
                    else:
                        yield item
                    continue
                yield from whole()  # a notice (the gap between two traces of a stream) ends a generation too
                yield item
        except TraceFormatError as e:
            self.decoded = self.decoded or any(event.code != SYNC_CODE for event in e.partial or [])
            if any(event.code == SYNC_CODE for event in e.partial or []):
                yield from whole()
            raise
        yield from whole()


def decode_span_batches(
    source: Source, filter: Filter | None = None, *, compiled: bool | None = None
) -> Iterator[SpanBatch]:
    """A whole trace file's spans (:class:`SpanBatch` objects, in the order
    the spans ended), of any format; last those still open at the trace's
    end, cut there and marked ``clipped_end``. ``filter`` keeps only the
    spans it selects (its ``kinds`` are :class:`SpanKind` values);
    ``compiled`` as for :func:`open_decoder`."""
    # Here, not at the top: `livetrace decode` reads its file through this
    # module and starts faster without the span machinery.
    from livetrace._trace.spans.builder import SpanBuilder
    from livetrace._trace.spans.select import select_spans

    builder = SpanBuilder(compiled=compiled)
    for item in decode_batches(source, compiled=compiled):
        if isinstance(item, EventBatch):
            spans = builder.feed(item)
        elif is_trace_gap(item):  # the spans open at one trace's end end there; the next trace is its own
            spans = builder.close()
        else:
            continue
        yield spans if filter is None else select_spans(spans, filter, compiled=compiled)
    spans = builder.close()
    yield spans if filter is None else select_spans(spans, filter, compiled=compiled)


def is_trace_gap(item: object) -> bool:
    """Whether item is the gap between two traces of a stream."""
    return isinstance(item, TraceGap)


def decode_spans(source: Source, filter: Filter | None = None, *, compiled: bool | None = None) -> Iterator[Span]:
    """A whole trace file's spans, of any format, as :class:`Span` objects:
    :func:`decode_span_batches`, flattened."""
    for spans in decode_span_batches(source, filter, compiled=compiled):
        yield from spans
