"""Trace files through the one decoder: where decoding meets a file."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, BinaryIO

from livetrace._errors import TraceFormatError
from livetrace._items import Notice
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import Event, Kind
from livetrace._trace.version import HEADER_SIZE

if TYPE_CHECKING:
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
    source: Source, kinds: Iterable[Kind] | None = None, *, compiled: bool | None = None
) -> Iterator[EventBatch | Notice]:
    """A whole trace file (a path, or a binary file object read to its end),
    of any format, as :class:`EventBatch` objects, in order, and the
    decoder's notices (a legacy trace's :class:`SymbolsResolved` before its
    events). ``kinds`` and ``compiled`` as for :func:`open_decoder`. A
    malformed or truncated trace raises :class:`TraceFormatError`, whose
    ``partial`` holds the events decoded before the problem and not yet
    yielded."""
    # Here, not at the top: `livetrace decode --dump wire` reads its file
    # through this module and needs no decoder.
    from livetrace._trace.decoder import open_decoder

    with _opened(source) as stream:
        first, rest = head(stream)
        decoder = open_decoder(first, kinds, compiled=compiled)
        for data in rest:
            yield from decoder.feed_iter(data)  # type: ignore[misc]  # no read times: never Provisional
        yield from decoder.close_iter()  # type: ignore[misc]  # no read times: never Provisional


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
            yield spans if filter is None else select_spans(spans, filter, compiled=compiled)
    spans = builder.close()
    yield spans if filter is None else select_spans(spans, filter, compiled=compiled)


def decode_spans(source: Source, filter: Filter | None = None, *, compiled: bool | None = None) -> Iterator[Span]:
    """A whole trace file's spans, of any format, as :class:`Span` objects:
    :func:`decode_span_batches`, flattened."""
    for spans in decode_span_batches(source, filter, compiled=compiled):
        yield from spans
