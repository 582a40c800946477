"""Decoding a live session: chunks, gaps and segment ends in, event batches
and notices out, through the decoder :func:`open_decoder` picks for the
trace's header."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from livetrace._protocol.frames import Chunk, Gap, SegmentEnd, WindowEnd, WindowGap
from livetrace._session.window_gaps import WindowGaps
from livetrace._trace.decoder import Item, TraceDecoder, open_decoder
from livetrace._trace.model.events import Kind

__all__ = ["Item", "LiveDecoder"]


class LiveDecoder:
    """Feeds a session's frames to its trace's decoder. ``kinds`` keeps only
    events of those kinds; ``provisional`` asks a legacy trace for its
    provisional events too."""

    def __init__(self, kinds: Iterable[Kind] | None = None, provisional: bool = True) -> None:
        self._kinds = None if kinds is None else frozenset(kinds)
        self._provisional = provisional
        self._decoder: TraceDecoder | None = None
        self._gaps = WindowGaps()  # a pprof session's gaps, measured on the trace's clock

    @property
    def largest_generation(self) -> int:
        """Bytes of the largest generation decoded so far."""
        return self._decoder.largest_generation if self._decoder is not None else 0

    def process(self, frames: list[Chunk | Gap | SegmentEnd]) -> Iterator[Item]:
        """The batches (and notices) the frames complete, lazily: consume
        them all before processing more."""
        yield from self._gaps.items(self._process(frames))

    def _process(self, frames: list[Chunk | Gap | SegmentEnd]) -> Iterator[Item]:
        for f in frames:
            d = self._decoder
            if isinstance(f, WindowGap):
                self._gaps.gap(f)  # the window before it was ended whole: nothing of it to abandon
                continue
            if isinstance(f, Chunk) and f.data:
                self._gaps.chunk(f.data)
            if d is None:
                if isinstance(f, Gap):
                    yield f
                if not isinstance(f, Chunk):
                    continue
                # The first chunk is the trace's header.
                d = self._decoder = open_decoder(f.data, self._kinds, provisional=self._provisional)
            if isinstance(f, Chunk):
                yield from d.feed_iter(f.data, f.read_unix_ns)
            elif isinstance(f, Gap):
                yield from d.gap(f)
            elif isinstance(f, WindowEnd):
                yield from d.end_trace()
            else:
                self._gaps.segment_ended()
                yield from d.end_segment(f)

    def finish(self) -> Iterator[Item]:
        if self._decoder is not None:
            yield from self._gaps.items(self._decoder.close_iter())
        yield from self._gaps.flush()
