"""Decoding a live session: chunks and gaps in, events out, across gaps."""

from __future__ import annotations

from ._events import Event
from ._modern_decoder import ModernDecoder
from ._modern_wire import parse_header
from ._protocol import Chunk, Gap

Item = Event | Gap


class LiveDecoder:
    """Feeds a session's frames to a decoder; after a gap it starts afresh on
    the next generation, as a new first generation, as Go's reader does for
    a flight-recorder snapshot."""

    def __init__(self) -> None:
        self._header = b""
        self._decoder: ModernDecoder | None = None

    def process(self, frames: list[Chunk | Gap]) -> list[Item]:
        out: list[Item] = []
        for f in frames:
            if isinstance(f, Gap):
                if self._decoder is not None:
                    out += self._decoder.abandon(f.first_generation if f.discard_received else None)
                    self._decoder = self._new()
                out.append(f)
            elif self._decoder is None:
                self._header = f.data  # the first chunk is the trace header
                parse_header(f.data[:16])
                self._decoder = self._new()
            else:
                out += self._decoder.feed(f.data)
        return out

    def finish(self) -> list[Item]:
        return list(self._decoder.close()) if self._decoder is not None else []

    def _new(self) -> ModernDecoder:
        d = ModernDecoder()
        d.feed(self._header)
        return d
