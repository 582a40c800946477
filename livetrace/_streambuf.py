"""The input buffer of the sans-IO readers: bytes fed in pieces, read from
the front."""

from __future__ import annotations

COMPACT_AFTER = 1 << 20  # consumed bytes kept before they are dropped


class StreamBuffer:
    """Holds what has arrived and not yet been consumed.

    ``buf[pos:]`` is unread; ``base`` is the stream offset of ``buf[0]``.
    Consumed bytes are dropped only once the buffer is empty or a megabyte
    of them has piled up: trimming a bytearray's front on every read would
    copy the tail each time.
    """

    __slots__ = ("base", "buf", "pos")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.pos = 0
        self.base = 0

    @property
    def offset(self) -> int:
        """Stream offset of the first unread byte."""
        return self.base + self.pos

    @property
    def unread(self) -> int:
        return len(self.buf) - self.pos

    def consumed(self, pos: int) -> None:
        """Everything before buf[pos] has been read."""
        if pos == len(self.buf) or pos > COMPACT_AFTER:
            del self.buf[:pos]
            self.base += pos
            pos = 0
        self.pos = pos
