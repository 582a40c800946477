"""Decoding a live session: chunks and gaps in, event batches out, across
gaps; legacy sessions (Go 1.21 and older) through :class:`LegacyLive`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import Kind
from livetrace._trace.legacy.live import LegacyItem, LegacyLive
from livetrace._trace.modern.decoder import ModernDecoder
from livetrace._trace.version import header_size, sniff
from livetrace._protocol.frames import Chunk, Gap, SegmentEnd

Item = EventBatch | Gap | LegacyItem


class LiveDecoder:
    """Feeds a session's frames to a decoder; after a gap it starts afresh on
    the next generation, as a new first generation, as Go's reader does for
    a flight-recorder snapshot. ``kinds`` keeps only events of those kinds;
    ``provisional`` asks for a legacy trace's provisional events too."""

    def __init__(self, kinds: Iterable[Kind] | None = None, provisional: bool = True) -> None:
        self._kinds = None if kinds is None else frozenset(kinds)
        self._provisional = provisional
        self._header = b""
        self._decoder: ModernDecoder | None = None
        self._legacy: LegacyLive | None = None
        self._largest = 0

    @property
    def largest_generation(self) -> int:
        """Bytes of the largest generation decoded so far."""
        return max(self._largest, self._decoder.largest_generation if self._decoder else 0)

    def process(self, frames: list[Chunk | Gap | SegmentEnd]) -> Iterator[Item]:
        """The batches (and gaps) the frames complete, lazily: consume them
        all before processing more."""
        for f in frames:
            if self._legacy is not None:
                if isinstance(f, SegmentEnd):
                    yield from self._legacy.end_segment(f)
                elif isinstance(f, Chunk):
                    yield from self._legacy.feed(f)
                else:
                    yield f  # legacy runtimes stop rather than shed: no gap is expected
                continue
            if isinstance(f, SegmentEnd):
                continue
            if isinstance(f, Gap):
                if self._decoder is not None:
                    yield from self._decoder.abandon_batches(f.first_generation if f.discard_received else None)
                    self._largest = self.largest_generation
                    self._decoder = self._new()
                yield f
            elif self._decoder is None:
                # The first chunk is the trace header.
                if sniff(f.data[: header_size(f.data)]).is_legacy:
                    self._legacy = LegacyLive(self._kinds, provisional=self._provisional)
                    yield from self._legacy.feed(f)
                    continue
                self._header = f.data
                self._decoder = self._new()
            else:
                yield from self._decoder.feed_batches(f.data)

    def finish(self) -> Iterator[Item]:
        if self._legacy is not None:
            return self._legacy.end_segment(None)
        return self._decoder.close_batches() if self._decoder is not None else iter(())

    def _new(self) -> ModernDecoder:
        d = ModernDecoder(self._kinds)
        for _ in d.feed_batches(self._header):
            pass
        return d
