"""Ordering a legacy trace across Ps: each P's events are in order, but only each version's own rule merges Ps."""

from __future__ import annotations

import heapq

from livetrace._errors import TraceFormatError
from livetrace._trace.legacy.trace import (
    G_DEAD,
    G_RUNNABLE,
    G_RUNNING,
    G_WAITING,
    LOCAL_TO_PLAIN,
    TIME_ORDER,
    LegacyEvent,
)
from livetrace._trace.spec.legacy import (
    BLOCKING,
    EV_GC_START,
    EV_GO_CREATE,
    EV_GO_IN_SYSCALL,
    EV_GO_PREEMPT,
    EV_GO_SCHED,
    EV_GO_START,
    EV_GO_START_LABEL,
    EV_GO_START_LOCAL,
    EV_GO_SYS_BLOCK,
    EV_GO_SYS_EXIT,
    EV_GO_SYS_EXIT_LOCAL,
    EV_GO_UNBLOCK,
    EV_GO_UNBLOCK_LOCAL,
    EV_GO_WAITING,
    PROFILE_P,
)

U64 = (1 << 64) - 1
UNORDERED, GARBAGE = U64, U64 - 1  # keys: no goroutine; the GC's own sequence
NOSEQ, SEQINC = U64, U64 - 1


def order_gotrace(batches: dict[int, list[LegacyEvent]]) -> list[LegacyEvent]:
    """gotrace: no sequence numbers of any kind, only each event's ticks, so
    the Ps' streams are merged by time. A P's own order is exact and kept;
    equal times go first to the P that appeared first in the stream."""
    events = list(heapq.merge(*batches.values(), key=lambda e: e.ts))
    if any(events[i].ts > events[i + 1].ts for i in range(len(events) - 1)):
        raise TraceFormatError(TIME_ORDER)
    return events


def order_1005(batches: dict[int, list[LegacyEvent]]) -> list[LegacyEvent]:
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


def order_1007(batches: dict[int, list[LegacyEvent]]) -> list[LegacyEvent]:
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
            if not (seq in (NOSEQ, cseq) and status == cstatus):
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
