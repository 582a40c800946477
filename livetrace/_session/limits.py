"""What the client holds every frame source to, and what it counts of a
session: shared by the session, its sources and its pipeline."""

from __future__ import annotations

from dataclasses import dataclass

from livetrace._session.defaults import IDLE_TIMEOUT, MAX_GENERATION_BYTES, STOP_TIMEOUT

HANDSHAKE_TIMEOUT = 15.0
# Beyond its queue (queue_bytes), what a helper may send after the stop:
# the buffers and tables the runtime flushes as it stops.
STOP_DRAIN_MARGIN = 64 << 20


@dataclass(frozen=True)
class Limits:
    """What the client holds a helper to (docs/protocol.md, "Security
    model"). ``idle_timeout``: the longest silence (None: wait forever);
    ``stop_timeout``: how long the helper may take to end the session after
    the stop, counting only time the client spends waiting on it;
    ``max_generation_bytes``: the most one generation (a legacy segment) may
    hold while its events are decoded."""

    idle_timeout: float | None = IDLE_TIMEOUT
    stop_timeout: float = STOP_TIMEOUT
    max_generation_bytes: int = MAX_GENERATION_BYTES

    @property
    def heartbeat_ms(self) -> int:
        """The heartbeat period to ask for: about ten in an idle timeout, at
        most one a second, and none if silence is never a failure."""
        if not self.idle_timeout:
            return 0
        return max(100, min(1000, int(self.idle_timeout * 100)))


@dataclass
class Counters:
    """What arrived so far; updated as frames arrive."""

    chunks: int = 0
    bytes: int = 0
    gaps: int = 0
    dropped_chunks: int = 0
    dropped_bytes: int = 0
    dropped_generations: int = 0
    largest_generation: int = 0  # bytes, once events are being decoded
    segments: int = 0  # legacy trace segments completed (segment mode)
    last_generation: int = 0  # the latest generation a chunk arrived of (0: none, or a legacy trace)
    events: int = 0  # events decoded (when subscribers asked for them)
    spans: int = 0  # spans built (when subscribers asked for them; of the kinds their filters need followed)
