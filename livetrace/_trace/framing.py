"""Whether a byte stream is shaped like a whole Go execution trace, checked
as it arrives and without decoding its events.

A stream is written to disk faster than it could be decoded, so before a
recording calls a file complete it checks only the framing: a header
Go writes, then whole batches (Go 1.22+) or whole events (Go 1.21 and
older), ending on a boundary. Random bytes after a valid header fail on
their first bytes; a stream cut mid-frame fails at :meth:`Framing.close`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from livetrace._trace.legacy.wire import LegacyReader, RawEvent, _Short
from livetrace._trace.modern.wire import FrameReader
from livetrace._trace.spec.legacy import EV_BATCH, EV_FREQUENCY, EV_STRING, EV_USER_LOG, layout
from livetrace._trace.version import TraceVersion, header_size, sniff

_VARINT = rb"[\x80-\xff]*[\x00-\x7f]"
# Simple events skipped per regex match: a bound keeps the matcher's
# backtracking state small.
_RUN = 4096


class _LegacyFraming(LegacyReader):
    """LegacyReader's checks, at C speed for the common events: a run of
    events whose values are all inline (no strings, no length prefix) is
    skipped by one regex match; the others go through the reader's own
    per-event code, which raises on anything malformed."""

    # The types the regex leaves to the reader: those that carry bytes.
    OWN: tuple[int, ...] = (EV_STRING, EV_USER_LOG)

    def __init__(self, version: TraceVersion | None = None) -> None:
        super().__init__(version)
        self._simple: re.Pattern[bytes] | None = None

    def seen(self, event: RawEvent) -> None:
        """An event the reader read (one of OWN, or of a length-prefixed
        type never): for a subclass that wants some."""

    def _pattern(self) -> re.Pattern[bytes]:
        assert self.version is not None
        counts = layout(self.version)[0]
        types = [t for t in range(64) if counts[t] and t not in self.OWN]
        seq = 1 if self.version.has_global_seq else 0
        alts = []
        for k in range(3):  # top bits 3: a length-prefixed event, left to the reader
            codes = b"".join(re.escape(bytes([t | k << 6])) for t in types)
            alts.append(b"[" + codes + b"](?:" + _VARINT + b"){" + str(k + 1 + seq).encode() + b"}")
        return re.compile(b"(?:" + b"|".join(alts) + b"){0,%d}" % _RUN)

    def check(self, data: bytes) -> None:
        if self.version is None:
            for event in self.feed(data):  # the header, and the events after it
                self.seen(event)
            return
        buf = self._in.buf
        buf += data
        if self._simple is None:
            self._simple = self._pattern()
        simple, pos, end = self._simple, self._in.pos, len(buf)
        while pos < end:
            m = simple.match(buf, pos)
            assert m is not None  # {0,N} matches the empty string
            if m.end() > pos:
                pos = m.end()
                continue
            try:
                pos = self._skip(buf, pos, end)
            except _Short:
                break
        self._in.consumed(pos)

    def _skip(self, buf: bytearray, pos: int, end: int) -> int:
        """Past one event the regex left: a length-prefixed one by its
        length (the common case: stacks; a user log's message follows its
        values), any other by the reader."""
        b = buf[pos]
        if b >> 6 == 3 and self._counts[b & 0x3F] and b & 0x3F not in (EV_STRING, EV_USER_LOG):
            length, i = self._value(buf, pos + 1, end, pos)
            if end - i < length:
                raise _Short
            return i + length
        event, i = self._event(buf, pos, end)
        if event is not None:
            self.seen(event)
        return i


class Framing:
    """Made with a stream's first bytes (its whole header at least: a header
    no Go wrote raises :class:`TraceFormatError`), then fed the rest in any
    pieces: :meth:`feed` raises :class:`TraceFormatError` where the shape
    breaks, :meth:`close` (at the stream's end) :class:`TruncatedTraceError`
    unless it ended on a frame boundary. ``version``: the format the header
    names, where the caller read it already."""

    def __init__(self, first: bytes, version: TraceVersion | None = None) -> None:
        self._reader: FrameReader | _LegacyFraming
        self._feed: Callable[[bytes], object]
        if version is None:
            version = sniff(first[: header_size(first)])
        if version.is_legacy:
            legacy = _LegacyFraming(version)
            self._reader, self._feed = legacy, legacy.check
        else:
            self._reader = FrameReader(version)
            self._feed = self._reader.feed
        self._feed(first)

    def feed(self, data: bytes) -> None:
        self._feed(data)

    def close(self) -> None:
        self._reader.close()


class LegacyTicks(_LegacyFraming):
    """A legacy trace's raw tick clock, read off its bytes as they come
    (made with the first, then fed the rest): ``first`` the ticks of its
    earliest batch (its first event is that batch's first, a few ticks on:
    where the decoder counts its times from), ``ticks_per_sec`` from its
    footer. Two traces of one process share the tick counter, so the
    difference of their ``first`` is the time between their starts."""

    OWN = (EV_STRING, EV_USER_LOG, EV_BATCH, EV_FREQUENCY)

    def __init__(self, first: bytes) -> None:
        super().__init__()
        self.first: int | None = None
        self.ticks_per_sec: int | None = None
        self.check(first)

    def seen(self, event: RawEvent) -> None:
        _, typ, args, _ = event
        if typ == EV_BATCH and args:
            ticks = args[-1]  # [p, ticks]; Go 1.5 and 1.6: [p, seq, ticks]
            self.first = ticks if self.first is None else min(self.first, ticks)
        elif typ == EV_FREQUENCY and args:
            self.ticks_per_sec = args[0]
