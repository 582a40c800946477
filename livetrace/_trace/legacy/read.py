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
line.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from livetrace._errors import TraceFormatError
from livetrace._trace.spec.legacy import (
    BLOCKING,
    ENDS_G,
    EV_BATCH,
    EV_CPU_SAMPLE,
    EV_FREQUENCY,
    EV_FUTILE_WAKEUP,
    EV_GC_DONE,
    EV_GC_MARK_ASSIST_DONE,
    EV_GC_MARK_ASSIST_START,
    EV_GC_START,
    EV_GC_SWEEP_DONE,
    EV_GC_SWEEP_START,
    EV_GO_BLOCK_GC,
    EV_GO_BLOCK_NET,
    EV_GO_CREATE,
    EV_GO_END,
    EV_GO_IN_SYSCALL,
    EV_GO_PREEMPT,
    EV_GO_SCHED,
    EV_GO_SLEEP,
    EV_GO_START,
    EV_GO_START_LABEL,
    EV_GO_START_LOCAL,
    EV_GO_STOP,
    EV_GO_SYS_BLOCK,
    EV_GO_SYS_EXIT,
    EV_GO_SYS_EXIT_LOCAL,
    EV_GO_SYSCALL,
    EV_GO_UNBLOCK,
    EV_GO_UNBLOCK_LOCAL,
    EV_GO_WAITING,
    EV_PROC_START,
    EV_PROC_STOP,
    EV_STACK,
    EV_STW_DONE,
    EV_STW_START,
    EV_TIMER_GOROUTINE,
    EV_USER_LOG,
    EV_USER_REGION,
    EV_USER_TASK_CREATE,
    EV_USER_TASK_END,
    GC_P,
    GLOBAL_G0,
    NETPOLL_P,
    PROFILE_P,
    SPECS,
    STRING_ARG,
    STW_KINDS_OLD,
    STW_REASONS_1021,
    SYSCALL_P,
    TIMER_P,
    layout,
)
from livetrace._trace.legacy.wire import LegacyReader, RawEvent
from livetrace._trace.version import TraceVersion

U64 = (1 << 64) - 1
TIME_ORDER = "time stamps out of order"
LOCAL_TO_PLAIN = {EV_GO_START_LOCAL: EV_GO_START, EV_GO_UNBLOCK_LOCAL: EV_GO_UNBLOCK,
                  EV_GO_SYS_EXIT_LOCAL: EV_GO_SYS_EXIT}


class LegacyEvent:
    """One event of a legacy trace: ``ts`` in ticks until the trace is
    complete, then nanoseconds since its first event."""

    __slots__ = ("off", "typ", "seq", "ts", "p", "g", "stk", "args", "sargs")

    def __init__(self, off: int, typ: int, p: int, g: int) -> None:
        self.off = off
        self.typ = typ
        self.seq = 0
        self.ts = 0
        self.p = p
        self.g = g
        self.stk = 0
        self.args = [0, 0, 0]
        self.sargs: list[bytes] = []

    @property
    def name(self) -> str:
        return SPECS[self.typ].name

    def __repr__(self) -> str:
        return f"<LegacyEvent {self.name} ts={self.ts} p={self.p} g={self.g} off={self.off}>"


@dataclass
class LegacyTrace:
    version: TraceVersion
    events: list[LegacyEvent]
    stacks: dict[int, tuple[int, ...]]  # id -> values: PCs (1005) or (pc, func, file, line) per frame
    strings: dict[int, bytes]
    ticks_per_sec: int
    timer_goroutines: set[int] = field(default_factory=set)
    frames: dict[int, tuple[int, int, int]] = field(default_factory=dict)  # pc -> func, file (string ids), line


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
        want = len(vals) if typ == EV_STACK else self._counts[typ]  # type: ignore[index]
        if len(vals) != want:
            raise TraceFormatError(f"{spec.name} has wrong number of arguments at offset 0x{off:x}: want {want}, "
                                   f"got {len(vals)}", offset=off)
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
        if self._stackf[typ]:  # type: ignore[index]
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
            raise TraceFormatError("no EvFrequency event")
        strings = self._reader.strings
        for batch in self._batches.values():
            _name_strings(batch, strings)
        order = _order_1007 if ver.has_goroutine_seq else _order_1005 if ver.has_global_seq else _order_gotrace
        events = order(self._batches)
        min_ts = events[0].ts
        ns_per_tick = 1e9 / self._ticks_per_sec
        for ev in events:
            ev.ts = int((ev.ts - min_ts) * ns_per_tick)
            if ev.typ == EV_GO_UNBLOCK and ev.g in self._timer_gs:
                ev.p = TIMER_P
            if ev.typ == EV_GO_SYS_EXIT:
                ev.p = SYSCALL_P
        events = _remove_futile(events)
        _check_states(ver, events)
        return LegacyTrace(ver, events, self._stacks, strings, self._ticks_per_sec, self._timer_gs, self._frames)


FULL_CHUNK = 60_000  # bytes: a buffer the runtime handed over because it was full (64 KiB less its header)


class TickClock:
    """The legacy trace clock, estimated before the footer gives its
    frequency: a least-squares line through (ticks, wall time) pairs, one
    per full chunk (Go's buffers reach the reader the moment they fill).
    bench/legacy_clock.py measures how close it comes."""

    MIN_SPAN = 50_000_000  # ns of wall time the samples must cover

    def __init__(self) -> None:
        self._n = 0
        self._x0 = self._y0 = 0
        self._sx = self._sy = self._sxx = self._sxy = 0.0
        self._ymin = self._ymax = 0

    def add(self, unix_ns: int, ticks: int) -> None:
        if self._n == 0:
            # Sums relative to the first sample keep float64 precise.
            self._x0, self._y0 = ticks, unix_ns
            self._ymin = self._ymax = unix_ns
        x, y = float(ticks - self._x0), float(unix_ns - self._y0)
        self._n += 1
        self._sx += x
        self._sy += y
        self._sxx += x * x
        self._sxy += x * y
        self._ymin, self._ymax = min(self._ymin, unix_ns), max(self._ymax, unix_ns)

    def _line(self) -> tuple[float, float] | None:
        """(ns per tick, ns at the first sample's ticks), once known."""
        n = self._n
        if n < 2 or self._ymax - self._ymin < self.MIN_SPAN:
            return None
        den = n * self._sxx - self._sx * self._sx
        if den <= 0:
            return None
        slope = (n * self._sxy - self._sx * self._sy) / den
        if slope <= 0:
            return None
        return slope, (self._sy - slope * self._sx) / n

    @property
    def ticks_per_sec(self) -> float | None:
        line = self._line()
        return None if line is None else 1e9 / line[0]

    def wall_ns(self, ticks: int) -> int | None:
        """Provisional Unix time of a tick value, or None until known."""
        line = self._line()
        if line is None:
            return None
        slope, intercept = line
        return self._y0 + int(intercept + slope * (ticks - self._x0))


def _name_strings(events: list[LegacyEvent], strings: dict[int, bytes]) -> None:
    """Strings can come after the events that name them: name them now."""
    string_arg = STRING_ARG
    for e in events:
        i = string_arg[e.typ]
        if i >= 0:
            e.sargs[:1] = [strings.get(e.args[i], b"")]


def _add_stack(ver: TraceVersion, off: int, vals: list[int], stacks: dict[int, tuple[int, ...]],
               frames: dict[int, tuple[int, int, int]]) -> None:
    if len(vals) < 2:
        raise TraceFormatError(f"EvStack has wrong number of arguments at offset 0x{off:x}: want at least 2, "
                               f"got {len(vals)}", offset=off)
    sid, size = vals[0], vals[1]
    if size > 1000:
        raise TraceFormatError(f"EvStack has bad number of frames at offset 0x{off:x}: {size}", offset=off)
    want = 2 + (size if ver.stacks_are_pcs else 4 * size)
    if len(vals) != want:
        raise TraceFormatError(f"EvStack has wrong number of arguments at offset 0x{off:x}: want {want}, "
                               f"got {len(vals)}", offset=off)
    if sid and size:
        stacks[sid] = tuple(vals[2:])
        if not ver.stacks_are_pcs:
            add_frames(frames, stacks[sid])


def add_frames(frames: dict[int, tuple[int, int, int]], stack: tuple[int, ...]) -> None:
    """A 1.7+ stack's (pc, func, file, line) frames into the PC table, where
    the PC is new: the first frame seen for a PC names it, as in Go."""
    for k in range(0, len(stack), 4):
        frames.setdefault(stack[k], (stack[k + 1], stack[k + 2], stack[k + 3]))


def _order_gotrace(batches: dict[int, list[LegacyEvent]]) -> list[LegacyEvent]:
    """gotrace: no sequence numbers of any kind, only each event's ticks, so
    the Ps' streams are merged by time. A P's own order is exact and kept;
    equal times go first to the P that appeared first in the stream."""
    events = list(heapq.merge(*batches.values(), key=lambda e: e.ts))
    if any(events[i].ts > events[i + 1].ts for i in range(len(events) - 1)):
        raise TraceFormatError(TIME_ORDER)
    return events


def _order_1005(batches: dict[int, list[LegacyEvent]]) -> list[LegacyEvent]:
    """Go 1.5 and 1.6: every event has a global sequence number."""
    events = [e for b in batches.values() for e in b]
    for e in events:
        if e.typ == EV_GO_SYS_EXIT:
            e.seq = e.args[1]
            if e.args[2]:
                e.ts = e.args[2]
    events.sort(key=lambda e: e.seq)
    if any(events[i].ts > events[i + 1].ts for i in range(len(events) - 1)):
        raise TraceFormatError(TIME_ORDER)
    return events


# Goroutine states of the 1.7+ merge; sequence sentinels.
G_DEAD, G_RUNNABLE, G_RUNNING, G_WAITING = range(4)
UNORDERED, GARBAGE = U64, U64 - 1  # keys: no goroutine; the GC's own sequence
NOSEQ, SEQINC = U64, U64 - 1


def _transition(e: LegacyEvent) -> tuple[int, int, int, int, int]:
    """(key, required seq, required status, next seq, next status)."""
    t, a = e.typ, e.args
    if t == EV_GO_CREATE:
        return a[0], 0, G_DEAD, 1, G_RUNNABLE
    if t in (EV_GO_WAITING, EV_GO_IN_SYSCALL):
        return e.g, 1, G_RUNNABLE, 2, G_WAITING
    if t in (EV_GO_START, EV_GO_START_LABEL):
        return e.g, a[1], G_RUNNABLE, a[1] + 1, G_RUNNING
    if t == EV_GO_START_LOCAL:
        return e.g, NOSEQ, G_RUNNABLE, SEQINC, G_RUNNING
    if t in BLOCKING or t == EV_GO_SYS_BLOCK:
        return e.g, NOSEQ, G_RUNNING, NOSEQ, G_WAITING
    if t in (EV_GO_SCHED, EV_GO_PREEMPT):
        return e.g, NOSEQ, G_RUNNING, NOSEQ, G_RUNNABLE
    if t in (EV_GO_UNBLOCK, EV_GO_SYS_EXIT):
        return a[0], a[1], G_WAITING, a[1] + 1, G_RUNNABLE
    if t in (EV_GO_UNBLOCK_LOCAL, EV_GO_SYS_EXIT_LOCAL):
        return a[0], NOSEQ, G_WAITING, SEQINC, G_RUNNABLE
    if t == EV_GC_START:
        return GARBAGE, a[0], G_DEAD, a[0] + 1, G_DEAD
    return UNORDERED, 0, 0, 0, 0


def _order_1007(batches: dict[int, list[LegacyEvent]]) -> list[LegacyEvent]:
    """Go 1.7+: merge the Ps' streams by time, taking an event only when its
    goroutine is in the state (and at the sequence number) it requires.

    Each P offers its next event once that event can happen; of those
    offered, the earliest goes next. Equal times are ordered arbitrarily
    (Go's own tool breaks them in map order)."""
    if PROFILE_P in batches:
        batches[PROFILE_P].sort(key=lambda e: e.ts)
    streams = [b for b in batches.values() if b]
    heads = [0] * len(streams)
    states: dict[int, tuple[int, int]] = {}  # key -> (seq, status)
    waiting: dict[int, list[int]] = {}  # key -> streams whose next event waits for it
    frontier: list[tuple[int, int, int]] = []  # (ticks, tie, stream)
    tie = 0
    out: list[LegacyEvent] = []

    def offer(s: int) -> None:
        nonlocal tie
        if heads[s] == len(streams[s]):
            return
        e = streams[s][heads[s]]
        key, seq, status, _, _ = _transition(e)
        if key != UNORDERED:
            cseq, cstatus = states.get(key, (0, G_DEAD))
            if not ((seq == NOSEQ or seq == cseq) and status == cstatus):
                waiting.setdefault(key, []).append(s)
                return
        heapq.heappush(frontier, (e.ts, tie, s))
        tie += 1

    for s in range(len(streams)):
        offer(s)
    total = sum(map(len, streams))
    while len(out) < total:
        if not frontier:
            raise TraceFormatError("no consistent ordering of events possible")
        _, _, s = heapq.heappop(frontier)
        e = streams[s][heads[s]]
        heads[s] += 1
        key, _, _, nseq, nstatus = _transition(e)
        e.typ = LOCAL_TO_PLAIN.get(e.typ, e.typ)
        out.append(e)
        if key != UNORDERED:
            cseq = states.get(key, (0, G_DEAD))[0]
            states[key] = (cseq if nseq == NOSEQ else cseq + 1 if nseq == SEQINC else nseq, nstatus)
            for w in waiting.pop(key, ()):
                offer(w)
        offer(s)
    if any(out[i].ts > out[i + 1].ts for i in range(len(out) - 1)):
        raise TraceFormatError(TIME_ORDER)
    # A syscall exit happened when the syscall returned, not when it was traced.
    last_block: dict[int, int] = {}
    for e in out:
        if e.typ in (EV_GO_SYS_BLOCK, EV_GO_IN_SYSCALL):
            last_block[e.g] = e.ts
        elif e.typ == EV_GO_SYS_EXIT and e.args[2]:
            block = last_block.get(e.g, 0)
            if not block:
                raise TraceFormatError("stray syscall exit")
            if e.args[2] < block:
                raise TraceFormatError(TIME_ORDER)
            e.ts = e.args[2]
    out.sort(key=lambda e: e.ts)
    return out


# The blocking events that end a futile wakeup.
FUTILE_BLOCKS = BLOCKING - {EV_GO_SLEEP, EV_GO_BLOCK_NET, EV_GO_BLOCK_GC}


def _remove_futile(events: list[LegacyEvent]) -> list[LegacyEvent]:
    """Drop wakeups that only led to blocking again (marked FutileWakeup)."""
    if not any(e.typ == EV_FUTILE_WAKEUP for e in events):
        return events
    chains: dict[int, tuple[bool, list[LegacyEvent]]] = {}
    futile: set[int] = set()
    for e in events:
        if e.typ == EV_GO_UNBLOCK:
            chains[e.args[0]] = (False, [e])
        elif e.typ in (EV_GO_START, EV_GO_PREEMPT, EV_FUTILE_WAKEUP):
            was, chain = chains.get(e.g, (False, []))
            chains[e.g] = (was or e.typ == EV_FUTILE_WAKEUP, chain + [e])
        elif e.typ in FUTILE_BLOCKS:
            was, chain = chains.pop(e.g, (False, []))
            if was:
                futile.add(id(e))
                futile.update(id(x) for x in chain)
    return [e for e in events if id(e) not in futile]


def _check_states(ver: TraceVersion, events: list[LegacyEvent]) -> None:
    """Go's consistency checks over the ordered events; also puts GC starts
    on the GC pseudo-P and network wakeups on the netpoll one."""
    gs: dict[int, list] = {0: [G_RUNNING, None]}  # g -> [state, type of its last event that matters here]
    ps: dict[int, list] = {}  # p -> [running, g, in STW, sweeping]
    gc_on = stw_on = False
    tasks: set[int] = set()
    regions: dict[int, list[tuple[int, bytes]]] = {}
    assists: set[int] = set()
    stw_per_p = ver.stw_per_p

    def err(msg: str, e: LegacyEvent) -> TraceFormatError:
        return TraceFormatError(f"{msg} (offset {e.off}, time {e.ts})", offset=e.off)

    def running(p: list, g: list, e: LegacyEvent, allow_g0: bool) -> None:
        if g[0] != G_RUNNING:
            raise err(f"g {e.g} is not running while {e.name}", e)
        if p[1] != e.g:
            raise err(f"p {e.p} is not running g {e.g} while {e.name}", e)
        if not allow_g0 and e.g == 0:
            raise err(f"g 0 did {e.name}", e)

    for e in events:
        t = e.typ
        g = gs.setdefault(0 if t in GLOBAL_G0 else e.g, [G_DEAD, None])
        p = ps.setdefault(e.p, [False, 0, False, False])
        if t == EV_PROC_START:
            if p[0]:
                raise err(f"p {e.p} is running before start", e)
            p[0] = True
        elif t == EV_PROC_STOP:
            if not p[0]:
                raise err(f"p {e.p} is not running before stop", e)
            if p[1]:
                raise err(f"p {e.p} is running a goroutine {p[1]} during stop", e)
            p[0] = False
        elif t == EV_GC_START:
            if gc_on:
                raise err("previous GC is not ended before a new one", e)
            gc_on = True
            e.p = GC_P
        elif t == EV_GC_DONE:
            if not gc_on:
                raise err("bogus GC end", e)
            gc_on = False
        elif t in (EV_STW_START, EV_STW_DONE):
            on = p[2] if stw_per_p else stw_on
            if t == EV_STW_START and on:
                raise err("previous STW is not ended before a new one", e)
            if t == EV_STW_DONE and not on:
                raise err("bogus STW end", e)
            if stw_per_p:
                p[2] = t == EV_STW_START
            else:
                stw_on = t == EV_STW_START
        elif t == EV_GC_SWEEP_START:
            if p[3]:
                raise err("previous sweeping is not ended before a new one", e)
            p[3] = True
        elif t == EV_GC_SWEEP_DONE:
            if not p[3]:
                raise err("bogus sweeping end", e)
            p[3] = False
        elif t == EV_GC_MARK_ASSIST_START:
            if e.g in assists:
                raise err("previous mark assist is not ended before a new one", e)
            assists.add(e.g)
        elif t == EV_GC_MARK_ASSIST_DONE:
            assists.discard(e.g)
        elif t in (EV_GO_WAITING, EV_GO_IN_SYSCALL):
            if g[0] != G_RUNNABLE:
                raise err(f"g {e.g} is not runnable before {'EvGoWaiting' if t == EV_GO_WAITING else 'EvGoInSyscall'}",
                          e)
            g[0], g[1] = G_WAITING, t
        elif t == EV_GO_CREATE:
            running(p, g, e, True)
            if e.args[0] in gs:
                raise err(f"g {e.args[0]} already exists", e)
            gs[e.args[0]] = [G_RUNNABLE, t]
        elif t in (EV_GO_START, EV_GO_START_LABEL):
            if g[0] != G_RUNNABLE:
                raise err(f"g {e.g} is not runnable before start", e)
            if p[1]:
                raise err(f"p {e.p} is already running g {p[1]} while start g {e.g}", e)
            g[0], g[1] = G_RUNNING, None
            p[1] = e.g
        elif t in (EV_GO_END, EV_GO_STOP):
            running(p, g, e, False)
            g[0], p[1] = G_DEAD, 0
            if t == EV_GO_END:
                regions.pop(e.g, None)
        elif t in (EV_GO_SCHED, EV_GO_PREEMPT):
            running(p, g, e, False)
            g[0], g[1], p[1] = G_RUNNABLE, t, 0
        elif t == EV_GO_UNBLOCK:
            if g[0] != G_RUNNING:
                raise err(f"g {e.g} is not running while unpark", e)
            if e.p != TIMER_P and p[1] != e.g:
                raise err(f"p {e.p} is not running g {e.g} while unpark", e)
            target = gs.setdefault(e.args[0], [G_DEAD, None])
            if target[0] != G_WAITING:
                raise err(f"g {e.args[0]} is not waiting before unpark", e)
            if target[1] == EV_GO_BLOCK_NET and e.p != TIMER_P:
                e.p = NETPOLL_P
            target[0], target[1] = G_RUNNABLE, t
        elif t == EV_GO_SYSCALL:
            running(p, g, e, False)
            g[1] = t
        elif t == EV_GO_SYS_BLOCK:
            running(p, g, e, False)
            g[0], p[1] = G_WAITING, 0
        elif t == EV_GO_SYS_EXIT:
            if g[0] != G_WAITING:
                raise err(f"g {e.g} is not waiting during syscall exit", e)
            g[0], g[1] = G_RUNNABLE, t
        elif t in BLOCKING:
            running(p, g, e, False)
            g[0], g[1], p[1] = G_WAITING, t, 0
        elif t == EV_USER_TASK_CREATE:
            if e.args[0] in tasks:
                raise TraceFormatError(f"task id conflicts (id:{e.args[0]})", offset=e.off)
            tasks.add(e.args[0])
        elif t == EV_USER_TASK_END:
            tasks.discard(e.args[0])
        elif t == EV_USER_REGION:
            stack = regions.setdefault(e.g, [])
            if e.args[1] == 0:
                stack.append((e.args[0], e.sargs[0]))
            elif e.args[1] == 1:
                if stack:
                    if stack[-1] != (e.args[0], e.sargs[0]):
                        raise TraceFormatError(f"misuse of region in goroutine {e.g}", offset=e.off)
                    stack.pop()
            else:
                raise TraceFormatError(f"invalid user region mode: {e.args[1]}", offset=e.off)
