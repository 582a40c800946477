"""Legacy traces (Go 1.5 to 1.21, and pre-release gotrace streams) as Go
1.21's own tools see them.

A legacy trace is only whole at its end: the frequency and the stacks come
in the footer, and buffers reach the reader when full, so events can only be
put in their final order once the stream is over. :class:`LegacyDecoder`
reads raw events as they arrive (sans-IO, any chunking) and, at ``close``,
orders them across Ps (gotrace: by time alone; 1.5: by the global sequence;
from 1.7 on by merging the Ps' streams under the goroutines' sequence
numbers), converts ticks to nanoseconds and checks the goroutine and P
states, as ``go tool trace`` does, so that its dump is the same line for
line. This module reads; merge.py orders, checks.py checks, clock.py keeps
the provisional clock and trace.py holds the records they share.
"""

from __future__ import annotations

from livetrace._errors import TraceFormatError, TruncatedTraceError
from livetrace._trace.legacy.checks import check_states, remove_futile
from livetrace._trace.legacy.clock import FULL_CHUNK, TickClock
from livetrace._trace.legacy.merge import order_1005, order_1007, order_gotrace
from livetrace._trace.legacy.trace import TIME_ORDER, LegacyEvent, LegacyTrace
from livetrace._trace.legacy.wire import LegacyReader, RawEvent
from livetrace._trace.spec.legacy import (
    ENDS_G,
    EV_BATCH,
    EV_CPU_SAMPLE,
    EV_FREQUENCY,
    EV_GO_IN_SYSCALL,
    EV_GO_START,
    EV_GO_START_LABEL,
    EV_GO_START_LOCAL,
    EV_GO_SYS_EXIT,
    EV_GO_UNBLOCK,
    EV_GO_WAITING,
    EV_STACK,
    EV_STW_START,
    EV_TIMER_GOROUTINE,
    EV_USER_LOG,
    PROFILE_P,
    SPECS,
    STRING_ARG,
    STW_KINDS_OLD,
    STW_REASONS_1021,
    SYSCALL_P,
    TIMER_P,
    layout,
)
from livetrace._trace.version import TraceVersion


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


class LegacyDecoder:
    """Decodes a legacy trace.

    ``feed`` takes the stream in any pieces and returns the events they
    complete, per P, as they arrive: in each P's own order, with ``ts`` in
    ticks, stacks and label strings as ids (they come in the footer, or
    later in the stream). Fed whole chunks as the runtime handed them over,
    with the time it did (``read_unix_ns``), it also learns the tick
    frequency long before the footer says it: ``clock.wall_ns(ticks)`` is a
    provisional wall-clock time. ``close`` at the end gives the trace as Go
    1.21's tools see it: ordered across Ps, in nanoseconds, checked.
    """

    def __init__(self, keep: bool = True) -> None:
        """``keep``: keep the events for ``close``; without, the decoder
        only hands each chunk's events out (live, where the exact events
        come from elsewhere) and cannot close."""
        self._keep = keep
        self._reader = LegacyReader()
        self.clock = TickClock()
        self._ticks_per_sec = self._seq = self._ts = self._g = self._p = 0
        self._last_gs: dict[int, int] = {}
        self._timer_gs: set[int] = set()
        self._stacks: dict[int, tuple[int, ...]] = {}
        self._frames: dict[int, tuple[int, int, int]] = {}  # pc -> its first frame: func, file (string ids), line
        self._batches: dict[int, list[LegacyEvent]] = {}
        self._counts: bytes | None = None  # the version's layout, once it is known
        self._stackf = b""
        self._global_seq = False

    @property
    def version(self) -> TraceVersion | None:
        return self._reader.version

    @property
    def strings(self) -> dict[int, bytes]:
        """The string table as far as it has arrived."""
        return self._reader.strings

    def feed(self, data: bytes, read_unix_ns: int | None = None) -> list[LegacyEvent]:
        out: list[LegacyEvent] = []
        raws = self._reader.feed(data)
        ver = self._reader.version
        if ver is None:
            return out
        if self._counts is None:
            self._counts, self._stackf = layout(ver)
            self._global_seq = ver.has_global_seq
        timed = False
        for raw in raws:
            e = self._event(ver, raw)
            if e is not None:
                out.append(e)
                timed = timed or e.typ != EV_CPU_SAMPLE
        # A full buffer reaches the reader the moment it fills: its last
        # event happened about when the helper got the chunk.
        if read_unix_ns is not None and timed and len(data) >= FULL_CHUNK:
            self.clock.add(read_unix_ns, self._ts)
        return out

    def _event(self, ver: TraceVersion, raw: RawEvent) -> LegacyEvent | None:
        """One raw event: into the tables, or an event with its P, G and ticks."""
        off, typ, vals, sargs = raw
        spec = SPECS[typ]
        want = len(vals) if typ == EV_STACK else self._counts[typ]  # type: ignore[index]  # set with the header, before any event
        if len(vals) != want:
            raise TraceFormatError(
                f"{spec.name} has wrong number of arguments at offset 0x{off:x}: want {want}, got {len(vals)}",
                offset=off,
            )
        if typ == EV_BATCH:
            self._last_gs[self._p] = self._g
            self._p = _signed(vals[0])
            self._g = self._last_gs.get(self._p, 0)
            if self._global_seq:
                self._seq, self._ts = vals[1], vals[2]
            else:
                self._ts = vals[1]
            return None
        if typ == EV_FREQUENCY:
            self._ticks_per_sec = vals[0]
            if self._ticks_per_sec <= 0 or self._ticks_per_sec > (1 << 63) - 1:
                raise TraceFormatError(TIME_ORDER, offset=off)
            return None
        if typ == EV_TIMER_GOROUTINE:
            self._timer_gs.add(vals[0])
            return None
        if typ == EV_STACK:
            _add_stack(ver, off, vals, self._stacks, self._frames)
            return None
        e = LegacyEvent(off, typ, self._p, self._g)
        if self._global_seq:
            e.seq = self._seq = self._seq + vals[0]
            e.ts = self._ts + vals[1]
            first = 2
        else:
            e.ts = self._ts + vals[0]
            first = 1
        self._ts = e.ts
        rest = vals[first:]
        if self._stackf[typ]:
            e.stk = rest.pop()
        e.args[: len(rest)] = rest
        a = e.args
        if typ in (EV_GO_START, EV_GO_START_LOCAL, EV_GO_START_LABEL):
            self._g = e.g = a[0]
        elif typ == EV_STW_START:
            if not ver.has_stw_reasons:
                if a[0] >= len(STW_KINDS_OLD):
                    raise TraceFormatError(f"unknown STW kind {a[0]}", offset=off)
                e.sargs = [STW_KINDS_OLD[a[0]].encode()]
            else:
                e.sargs = [(STW_REASONS_1021[a[0]] if a[0] < len(STW_REASONS_1021) else "unknown").encode()]
        elif typ in ENDS_G:
            self._g = 0
        elif typ in (EV_GO_SYS_EXIT, EV_GO_WAITING, EV_GO_IN_SYSCALL):
            e.g = a[0]
        elif typ == EV_USER_LOG:
            e.sargs = [b"", sargs[0]]  # the category is a string id, named at the end
        elif typ == EV_CPU_SAMPLE:
            e.ts, e.p, e.g = a[0], _signed(a[1]), a[2]
            a[0] = 0
        if self._keep:
            self._batches.setdefault(PROFILE_P if typ == EV_CPU_SAMPLE else self._p, []).append(e)
        return e

    def close(self) -> LegacyTrace:
        if not self._keep:
            raise RuntimeError("this LegacyDecoder kept no events to close with")
        self._reader.close()
        ver = self._reader.version
        assert ver is not None
        if not self._batches:
            raise TraceFormatError("trace is empty")
        if self._ticks_per_sec == 0:
            # The runtime writes it in the footer, as the trace stops: the file was cut short.
            raise TruncatedTraceError(
                "trace ends early: its footer (the EvFrequency event written as the trace stops) is missing",
                offset=self._reader.offset,
            )
        strings = self._reader.strings
        for batch in self._batches.values():
            _name_strings(batch, strings)
        order = order_1007 if ver.has_goroutine_seq else order_1005 if ver.has_global_seq else order_gotrace
        events = order(self._batches)
        min_ts = events[0].ts
        ns_per_tick = 1e9 / self._ticks_per_sec
        for ev in events:
            ev.ts = int((ev.ts - min_ts) * ns_per_tick)
            if ev.typ == EV_GO_UNBLOCK and ev.g in self._timer_gs:
                ev.p = TIMER_P
            if ev.typ == EV_GO_SYS_EXIT:
                ev.p = SYSCALL_P
        events = remove_futile(events)
        check_states(ver, events)
        return LegacyTrace(ver, events, self._stacks, strings, self._ticks_per_sec, self._timer_gs, self._frames)


def _name_strings(events: list[LegacyEvent], strings: dict[int, bytes]) -> None:
    """Strings can come after the events that name them: name them now."""
    string_arg = STRING_ARG
    for e in events:
        i = string_arg[e.typ]
        if i >= 0:
            e.sargs[:1] = [strings.get(e.args[i], b"")]


def _add_stack(
    ver: TraceVersion,
    off: int,
    vals: list[int],
    stacks: dict[int, tuple[int, ...]],
    frames: dict[int, tuple[int, int, int]],
) -> None:
    if len(vals) < 2:
        raise TraceFormatError(
            f"EvStack has wrong number of arguments at offset 0x{off:x}: want at least 2, got {len(vals)}", offset=off
        )
    sid, size = vals[0], vals[1]
    if size > 1000:
        raise TraceFormatError(f"EvStack has bad number of frames at offset 0x{off:x}: {size}", offset=off)
    want = 2 + (size if ver.stacks_are_pcs else 4 * size)
    if len(vals) != want:
        raise TraceFormatError(
            f"EvStack has wrong number of arguments at offset 0x{off:x}: want {want}, got {len(vals)}", offset=off
        )
    if sid and size:
        stacks[sid] = tuple(vals[2:])
        if not ver.stacks_are_pcs:
            add_frames(frames, stacks[sid])


def add_frames(frames: dict[int, tuple[int, int, int]], stack: tuple[int, ...]) -> None:
    """A 1.7+ stack's (pc, func, file, line) frames into the PC table, where
    the PC is new: the first frame seen for a PC names it, as in Go."""
    for k in range(0, len(stack), 4):
        frames.setdefault(stack[k], (stack[k + 1], stack[k + 2], stack[k + 3]))
