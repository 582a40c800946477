"""Go's pprof-like trace profiles (`go tool trace -pprof=TYPE`) read back,
and the same totals computed from our spans, per stack.

A profile is a gzip'ed protocol buffer (profile.proto); the few fields we
need are read with a small varint reader here rather than a dependency.
What `go tool trace` counts (cmd/trace/pprof.go, read, not copied): for
each goroutine, the intervals it spends in one state (runnable for sched,
waiting for some reasons for sync and net, syscall for syscall), from the
transition into the state to the next one out of it, attributed to the
stack of the event that began the interval; intervals still open at the
trace's end are left out; each is clipped to the goroutine's lifetime as
its goroutine summary has it: from when it first ran (the whole trace if
it never ran) to when it exited or blocked forever (the trace's last event
if it did neither).
"""

from __future__ import annotations

import gzip
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator

from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import RES_GOROUTINE, SpanKind

Totals = dict[tuple[int, ...], tuple[int, int]]  # stack PCs -> (count, ns)
MAX_STACK = 128  # Go's profiles cut stacks at 128 frames


def _varint(b: bytes, i: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def _fields(b: bytes) -> Iterator[tuple[int, int | bytes]]:
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(b, i)
            yield field, v
        elif wire == 2:
            n, i = _varint(b, i)
            yield field, b[i : i + n]
            i += n
        elif wire == 1:
            yield field, int.from_bytes(b[i : i + 8], "little")
            i += 8
        elif wire == 5:
            yield field, int.from_bytes(b[i : i + 4], "little")
            i += 4
        else:
            raise ValueError(f"wire type {wire}")


def _ints(v: int | bytes) -> list[int]:
    """A repeated varint field's values (packed or one)."""
    if isinstance(v, int):
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def _key(pcs: tuple[int, ...]) -> tuple[int, ...]:
    """A stack's PCs as Go's profiles tell stacks apart: its first 128,
    padded with zeros (so a stack of one frame at PC 0 is the empty one)."""
    pcs = pcs[:MAX_STACK]
    while pcs and not pcs[-1]:
        pcs = pcs[:-1]
    return pcs


def read_profile(data: bytes) -> Totals:
    """(count, delay ns) per stack of PCs, innermost first."""
    samples: list[tuple[list[int], list[int]]] = []
    address: dict[int, int] = {}
    for field, v in _fields(gzip.decompress(data)):
        if field == 2 and isinstance(v, bytes):  # Sample
            locs: list[int] = []
            values: list[int] = []
            for f, x in _fields(v):
                (locs if f == 1 else values if f == 2 else []).extend(_ints(x))
            samples.append((locs, values))
        elif field == 4 and isinstance(v, bytes):  # Location
            loc = {f: x for f, x in _fields(v) if isinstance(x, int)}
            address[loc.get(1, 0)] = loc.get(3, 0)
    out: dict[tuple[int, ...], tuple[int, int]] = {}
    for locs, (count, ns) in samples:
        key = _key(tuple(address[i] for i in locs))
        c0, n0 = out.get(key, (0, 0))
        out[key] = (c0 + count, n0 + ns)
    return out


def _sync(reason: str) -> bool:
    return "chan" in reason or "sync" in reason or "select" in reason


# Which spans each profile counts.
PROFILES: dict[str, Callable[[int, str], bool]] = {
    "sched": lambda kind, reason: kind == SpanKind.RUNNABLE,
    "sync": lambda kind, reason: kind == SpanKind.BLOCKED and _sync(reason),
    "net": lambda kind, reason: kind == SpanKind.BLOCKED and reason == "network",
    "syscall": lambda kind, reason: kind == SpanKind.SYSCALL,
}

GOROUTINE_STATES = (SpanKind.RUNNING, SpanKind.RUNNABLE, SpanKind.BLOCKED, SpanKind.SYSCALL)


def our_profiles(batches: Iterable[SpanBatch], trace_end: int) -> dict[str, Totals]:
    """Our spans summed as each of Go's four profiles sums them."""
    rows = []  # (goroutine, kind, start, end, reason, stack pcs, clipped end)
    for sb in batches:
        kinds, rkinds, rids, starts, ends = sb.kinds, sb.resource_kinds, sb.resource_ids, sb.starts, sb.ends
        stacks, tabs, reasons, flags, names = sb.start_stacks, sb.start_tables, sb.reasons, sb.flags, sb.names_table
        for i in range(len(sb)):
            if kinds[i] not in GOROUTINE_STATES or rkinds[i] != RES_GOROUTINE:
                continue
            tables = sb.tables.get(tabs[i])
            pcs = tables.stacks[stacks[i]] if tables is not None and stacks[i] else ()
            reason = names[reasons[i]].decode()
            rows.append((rids[i], kinds[i], starts[i], ends[i], reason, _key(pcs), flags[i] & 2))
    # Each goroutine's lifetime as Go's goroutine summary has it.
    first_run: dict[int, int] = {}
    last: dict[int, tuple[int, int, bool]] = {}  # goroutine -> (end, start, clipped) of its latest span
    for g, kind, start, end, _, _, clipped in rows:
        if kind == SpanKind.RUNNING:
            first_run[g] = min(first_run.get(g, start), start)
        if g not in last or start >= last[g][1]:
            last[g] = (end, start, bool(clipped))
    lifetime: dict[int, tuple[int, int]] = {}
    for g, (end, _, clipped) in last.items():
        lifetime[g] = (first_run.get(g, 0), trace_end if clipped else end)
    for g, kind, start, _, reason, _, _ in rows:
        if kind == SpanKind.BLOCKED and reason == "forever":
            lifetime[g] = (lifetime[g][0], start)
    out: dict[str, Totals] = {}
    for name, counts in PROFILES.items():
        acc: dict[tuple[int, ...], list[int]] = defaultdict(lambda: [0, 0])
        for g, kind, start, end, reason, pcs, clipped in rows:
            if clipped or not counts(kind, reason):
                continue
            lo, hi = lifetime[g]
            if hi < start or end < lo:
                continue
            overlap = min(hi, end) - max(lo, start)
            if overlap > 0:
                rec = acc[pcs]
                rec[0] += 1
                rec[1] += overlap
        out[name] = {k: (c, ns) for k, (c, ns) in acc.items()}
    return out
