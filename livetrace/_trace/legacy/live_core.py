"""The provisional events of one live legacy segment through the compiled
core (_ccore/decode/legacy_live.c): chunks read, converted and ordered by the per-P
release watermark in C, the columns handed out as they are released. The
Python path of :class:`~livetrace._trace.legacy.live.LegacyLive` is its twin
and the reference: both give the same events, in the same batches, with
the same string ids.

What stays here is per chunk or per string, not per event: the clock
(estimated from chunk arrival times), the strings the trace defines, and
the strings the conversion adds (a user log's message, a task's type),
which are interned in the order the twin interns them.
"""

from __future__ import annotations

from array import array

from livetrace._trace.accel import ccore
from livetrace._trace.legacy.clock import FULL_CHUNK, TickClock
from livetrace._trace.legacy.convert import ModelConverter
from livetrace._trace.legacy.fast import COMPILED_VERSIONS
from livetrace._trace.model.batch import kind_mask
from livetrace._trace.model.events import Kind
from livetrace._trace.model.tables import Tables
from livetrace._trace.spec.legacy import layout
from livetrace._trace.version import HEADER_SIZE, TraceVersion, sniff

Columns = tuple[bytes, bytes, bytes, bytes, bytes, bytes, bytes]


class GaveUp(Exception):
    """The compiled core met what a valid trace would not have: the twin
    must take the segment over (and report the error, if it is one)."""


def compiled_version(first_chunk: bytes, version: TraceVersion | None = None) -> TraceVersion | None:
    """The trace's version if the compiled core reads it live, else None.
    ``version``: the one its header names, where the caller read it."""
    if version is not None:
        return version if version in COMPILED_VERSIONS else None
    if len(first_chunk) < HEADER_SIZE:
        return None
    try:
        ver = sniff(first_chunk[:HEADER_SIZE])
    except Exception:  # the twin reports it
        return None
    return ver if ver in COMPILED_VERSIONS else None


class CoreProvisional:
    """One segment's provisional events through the compiled core.

    ``converter`` is the twin's converter for the segment's tables (with the
    builtin strings already interned, in fast.BUILTIN's order): only its
    string interning is used, so that ids are the twin's."""

    def __init__(
        self,
        ver: TraceVersion,
        kinds: frozenset[Kind] | None,
        table: Tables,
        trace_strings: dict[int, bytes],
        converter: ModelConverter,
        builtin_ids: list[int],
        window_ns: int,
        max_held: int,
    ) -> None:
        counts, stackf = layout(ver)
        self._core = ccore.LegacyLiveCore(
            ver.legacy_number, counts, stackf, kind_mask(kinds), array("Q", builtin_ids).tobytes()
        )
        self.clock = TickClock()
        self._table = table
        self._trace_strings = trace_strings
        self._converter = converter
        self._messages: dict[int, bytes] = {}  # read, not yet interned, by index
        self._window = window_ns
        self._max_held = max_held

    def start(self, data: bytes, read_unix_ns: int | None) -> None:
        """The segment's first chunk, its header included: its events only
        set the state up (the twin gives none of them provisionally)."""
        self._read(data, HEADER_SIZE, read_unix_ns)
        self._core.drop(True, 0)
        self._messages.clear()

    def feed(self, data: bytes, read_unix_ns: int | None, origin: int | None) -> tuple[Columns, int] | None:
        """A chunk: the events it releases (columns, and how many of them,
        first, are late), or None when nothing is released."""
        if not self._read(data, 0, read_unix_ns):
            return None
        line = self.clock.line()
        if line is None or origin is None:
            self._core.drop(False, self._max_held)  # the exact stream still has them
            return None
        requests = self._core.convert(*line, origin)
        if requests is None:
            raise GaveUp
        msgs, tasks = requests
        intern, table = self._converter.string_id, self._table
        msg_ids = [intern(self._messages.pop(k)) for k in msgs]
        task_ids = [table.add_extra_string(table.strings.get(sid, b"")) for sid in tasks]
        self._core.resolve(array("Q", msg_ids).tobytes(), array("Q", task_ids).tobytes())
        return self.release(False)

    def release(self, everything: bool) -> tuple[Columns, int]:
        """The late events, then those the watermark lets go (everything: all)."""
        cols, late = self._core.release(everything, self._window, self._max_held)
        return cols, late

    def _read(self, data: bytes, skip: int, read_unix_ns: int | None) -> int:
        """Reads a chunk (less its first ``skip`` bytes): how many events it completed."""
        res = self._core.read(data[skip:] if skip else data)
        if res is None:
            raise GaveUp
        n, timed, ticks, strings, messages = res
        self._trace_strings.update(strings)
        self._messages.update(messages)
        # A full buffer reaches the reader the moment it fills: its last
        # event happened about when the helper got the chunk (as LegacyDecoder.feed).
        if read_unix_ns is not None and timed and len(data) >= FULL_CHUNK:
            self.clock.add(read_unix_ns, ticks)
        return n
