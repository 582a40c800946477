"""Go's pprof-like trace profiles (`go tool trace -pprof=KIND`) from spans.

Each profile sums, per stack, the intervals goroutines spend in one state:
runnable (``sched``), blocked on a channel, select or sync primitive
(``sync``), blocked on the network (``net``), in a system call
(``syscall``). What `go tool trace` counts (its cmd/trace/pprof.go, read,
not copied), and so what this counts:

- an interval runs from the transition into the state to the next one out
  of it: exactly a goroutine span of that kind (the builder merges a state
  entered again without leaving it, as Go's loop ignores it);
- it is attributed to the stack of the event that began it (the span's
  start stack), cut to its first 128 frames;
- stacks are told apart by their first 128 PCs padded with zeros, so a
  stack of one frame at PC 0 and the empty stack are one sample. The runtime
  writes such a frame (PC 0, no function, no file) where a stack it took
  comes out empty once its skipped frames are gone (runtime.makeTraceFrames
  keeps one zero frame for no PCs): in Go 1.26, runtime/trace's reader
  goroutine unblocks the runtime's trace advancer so at each generation's
  end (tests/corpus/runtime has such traces).
  Go's stackMap.getOrAdd keeps, for each sample, the stack of the interval
  it counted last, and its profile shows that stack's frames: one location
  at address 0x0 where that was the zero frame, none where it was the empty
  stack. So does this: the stack last counted (the latest end; the trace
  fed last) is the one shown;
- intervals still open at the trace's end are left out;
- each is clipped to its goroutine's lifetime as Go's goroutine summary has
  it: from when the goroutine first ran (the whole trace if it never ran)
  to when it exited or blocked forever (the trace's last event if it did
  neither); an interval that overlaps it by nothing is not counted.

Go keeps its records in a map; the order of its samples (and so of its
location ids) differs from run to run. Ours come in the order their stacks
were first seen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import RES_GOROUTINE, SPAN_CLIPPED_END, SpanKind

MAX_STACK = 128  # Go's profiles tell stacks apart, and keep them, to this many frames

Totals = dict[tuple[int, ...], tuple[int, int]]  # stack PCs -> (count, ns)
Counted = tuple[tuple[int, ...], int, int, tuple[int, int]]  # stack, count, ns, when last counted (trace, end)

_GOROUTINE_STATES = frozenset({SpanKind.RUNNING, SpanKind.RUNNABLE, SpanKind.BLOCKED, SpanKind.SYSCALL})
_FOREVER = b"forever"
REASON_COUNTS, REASON_FOREVER = 1, 2  # the bits of a _ReasonMask entry (_ccore/views/pprof.c's)


@dataclass(frozen=True, slots=True)
class ProfileRule:
    """The goroutine states a profile counts: those of one span kind, with
    a blocking reason that is ``reason``, or that holds one of ``words``
    (neither: any reason). The one statement of them: the tables' build and
    their SQL (for datasets written before the build counted them) read
    them too."""

    state: SpanKind
    reason: bytes | None = None
    words: tuple[bytes, ...] = ()

    def counts(self, reason: bytes) -> bool:
        if self.reason is not None:
            return reason == self.reason
        return not self.words or any(word in reason for word in self.words)


# In the order `livetrace profile --kind` lists them.
PROFILE_RULES: dict[str, ProfileRule] = {
    "sched": ProfileRule(SpanKind.RUNNABLE),
    "sync": ProfileRule(SpanKind.BLOCKED, words=(b"chan", b"sync", b"select")),
    "net": ProfileRule(SpanKind.BLOCKED, reason=b"network"),
    "syscall": ProfileRule(SpanKind.SYSCALL),
}
PROFILE_KINDS = tuple(PROFILE_RULES)


@dataclass(frozen=True, slots=True)
class Frame:
    pc: int
    function: str
    file: str
    line: int


@dataclass(slots=True)
class Record:
    """One sample of a profile: intervals counted at one stack (innermost
    frame first) and their total time."""

    stack: tuple[Frame, ...]
    count: int
    ns: int


def stack_key(pcs: tuple[int, ...]) -> tuple[int, ...]:
    """A stack's PCs as Go's profiles tell stacks apart: its first 128,
    padded with zeros (so a stack of one frame at PC 0 is the empty one)."""
    pcs = pcs[:MAX_STACK]
    while pcs and not pcs[-1]:
        pcs = pcs[:-1]
    return pcs


class _Trace:
    """One trace's goroutine lifetimes and its counted intervals, waiting
    for the trace's end to be clipped to those lifetimes."""

    __slots__ = ("first_run", "forever", "last", "pending")

    def __init__(self) -> None:
        self.first_run: dict[int, int] = {}
        self.last: dict[int, tuple[int, int]] = {}  # goroutine -> (start, end) of its latest-starting span
        self.forever: dict[int, int] = {}  # goroutine -> when it blocked forever
        self.pending: list[tuple[int, int, int, tuple[int, ...]]] = []  # (goroutine, start, end, stack)

    def lifetime(self, g: int) -> tuple[int, int]:
        # A span cut at the trace's end ends at its last event: the end Go
        # gives a goroutine that neither exited nor blocked forever.
        end = self.forever.get(g, self.last[g][1])
        return self.first_run.get(g, 0), end


# kinds, resource kinds and ids, starts, ends, reasons, flags, start stacks and their tables
CountedColumns = tuple[
    memoryview, memoryview, memoryview, memoryview, memoryview, memoryview, memoryview, memoryview, memoryview
]


def counted_columns(spans: SpanBatch) -> CountedColumns:
    """The span columns a profile counts from, in the order the compiled counter takes them."""
    return (
        spans.kinds,
        spans.resource_kinds,
        spans.resource_ids,
        spans.starts,
        spans.ends,
        spans.reasons,
        spans.flags,
        spans.start_stacks,
        spans.start_tables,
    )


class ProfileBuilder:
    """Builds one of Go's pprof-like profiles (``kind`` one of
    PROFILE_KINDS) from the spans of a trace, fed batch by batch, in order.
    Several traces (a legacy session's segments, a net/http/pprof session's
    windows) add up: call :meth:`end_trace` between two, as `go tool trace`
    profiles each file on its own."""

    def __init__(self, kind: str, *, compiled: bool | None = None) -> None:
        if kind not in PROFILE_RULES:
            raise ValueError(f"unknown profile kind {kind!r}: one of {', '.join(PROFILE_KINDS)}")
        self.kind = kind
        rule = PROFILE_RULES[kind]
        self._state, self._reason_counts = rule.state, rule.counts
        self._trace = _Trace()
        self._traces = 0  # end_trace calls so far
        # stack -> [count, ns, trace, end] (the last two: when last counted), first counted first
        self._totals: dict[tuple[int, ...], list[int]] = {}
        self._frames: dict[int, Frame] = {}  # pc -> its frame, as first seen
        # (tables key, stack id) -> stack (its first 128 PCs): ids are per
        # tables, and tables (a generation's) live as long as their spans do.
        # Counted per stack; stacks with one key are added up at the end.
        self._stacks: dict[tuple[int, int], tuple[int, ...]] = {}
        # The compiled core counts (ccore.ProfileCounts); this class keeps
        # the stacks, which it knows by id.
        self._core = ccore.ProfileCounts(int(self._state)) if use_compiled(compiled) else None
        self._key_ids: dict[tuple[int, ...], int] = {}
        self._mask = _ReasonMask(self._reason_counts)

    def feed(self, spans: SpanBatch) -> None:
        if self._core is not None:
            self._feed_compiled(self._core, spans)
            return
        t = self._trace
        first_run, last, forever, pending = t.first_run, t.last, t.forever, t.pending
        state, reason_counts = int(self._state), self._reason_counts
        running, blocked = int(SpanKind.RUNNING), int(SpanKind.BLOCKED)
        states = {int(k) for k in _GOROUTINE_STATES}
        names, stacks = spans.names_table, self._stacks
        counted: dict[int, bool] = {}  # reason index -> counts (the names table is the batch's)
        # zip over the columns: no Python object per span, no index arithmetic.
        for kind, rkind, g, start, end, reason, flags, stack, tab in zip(*counted_columns(spans), strict=True):
            if kind not in states or rkind != RES_GOROUTINE:
                continue
            if kind == running:
                first = first_run.get(g)
                if first is None or start < first:
                    first_run[g] = start
            prev = last.get(g)
            if prev is None or start >= prev[0]:
                last[g] = (start, end)
            if kind == blocked and names[reason] == _FOREVER:
                forever[g] = start
            if kind != state or flags & SPAN_CLIPPED_END:
                continue
            ok = counted.get(reason)
            if ok is None:
                ok = counted[reason] = reason_counts(names[reason])
            if not ok:
                continue
            pcs = stacks.get((tab, stack))
            if pcs is None:
                pcs = stacks[tab, stack] = self._stack(spans, tab, stack)
            pending.append((g, start, end, pcs))

    def _feed_compiled(self, core: ccore.ProfileCounts, spans: SpanBatch) -> None:
        key_ids = self._key_ids

        def key_of(tab: int, stack: int) -> int:
            # The core asks once per stack and trace, in the order the twin makes its stacks.
            return key_ids.setdefault(self._stack(spans, tab, stack), len(key_ids))

        core.feed(*counted_columns(spans), self._mask.of(spans.names_table), key_of)

    def _stack(self, spans: SpanBatch, tab: int, stack: int) -> tuple[int, ...]:
        """The first 128 PCs of a stack of a batch's tables; their frames noted."""
        tables = spans.tables.get(tab)
        if tables is None or not stack:
            return ()
        pcs = tables.stacks.get(stack, ())[:MAX_STACK]
        for pc in pcs:
            if pc not in self._frames:
                f = tables.frames.get(pc)
                s = tables.strings
                self._frames[pc] = (
                    Frame(pc, _text(s.get(f[0], b"")), _text(s.get(f[1], b"")), f[2])
                    if f is not None
                    else Frame(pc, "", "", 0)
                )
        return pcs

    def end_trace(self) -> None:
        """The trace fed so far has ended: clip its intervals to its
        goroutines' lifetimes and count them."""
        if self._core is not None:
            self._core.end_trace()
            return
        t, self._trace = self._trace, _Trace()
        self._stacks.clear()
        totals, trace = self._totals, self._traces
        self._traces += 1
        for g, start, end, pcs in t.pending:
            lo, hi = t.lifetime(g)
            if hi < start or end < lo:
                continue
            overlap = min(hi, end) - max(lo, start)
            if overlap > 0:
                rec = totals.get(pcs)
                if rec is None:
                    totals[pcs] = [1, overlap, trace, end]
                else:
                    rec[0] += 1
                    rec[1] += overlap
                    if rec[2] != trace or end > rec[3]:
                        rec[2], rec[3] = trace, end

    def _counted(self) -> list[tuple[tuple[int, ...], int, int]]:
        """(stack, count, ns) of every stack key counted, first counted
        first, its stack the one counted last (ends the trace)."""
        self.end_trace()
        if self._core is None:
            counted: list[Counted] = [(pcs, c, ns, (tr, end)) for pcs, (c, ns, tr, end) in self._totals.items()]
        else:
            stacks = list(self._key_ids)
            counted = [(stacks[i], c, ns, (tr, end)) for i, c, ns, tr, end in self._core.totals()]
        return _by_key(counted)

    def totals(self) -> Totals:
        """(count, ns) per stack of PCs, innermost first (ends the trace)."""
        return {stack_key(pcs): (c, ns) for pcs, c, ns in self._counted()}

    def records(self) -> list[Record]:
        """The profile's samples (ends the trace)."""
        frames = self._frames
        return [
            Record(tuple(frames.get(pc, Frame(pc, "", "", 0)) for pc in pcs), c, ns) for pcs, c, ns in self._counted()
        ]


def _by_key(counted: list[Counted]) -> list[tuple[tuple[int, ...], int, int]]:
    """Stacks counted apart added up per stack key, in the order the
    first of each was counted; each key's stack is the one counted last
    (the first of those counted last together)."""
    merged: dict[tuple[int, ...], list[Counted]] = {}
    for rec in counted:
        merged.setdefault(stack_key(rec[0]), []).append(rec)
    out = []
    for recs in merged.values():
        shown = recs[0]
        for rec in recs[1:]:
            if rec[3] > shown[3]:
                shown = rec
        out.append((shown[0], sum(r[1] for r in recs), sum(r[2] for r in recs)))
    return out


class _ReasonMask:
    """For the compiled core: per entry of a names table, whether a
    profile counts that reason (REASON_COUNTS) and whether it is blocking
    forever (REASON_FOREVER). A span builder's names table only grows, so
    the mask grows with it; another table starts it again."""

    def __init__(self, counts: Callable[[bytes], bool]) -> None:
        self._counts = counts
        self._names: Sequence[bytes] | None = None
        self._mask = bytearray()

    def of(self, names: Sequence[bytes]) -> bytearray:
        if names is not self._names or len(names) < len(self._mask):
            self._names, self._mask = names, bytearray()
        mask, counts = self._mask, self._counts
        for i in range(len(mask), len(names)):
            name = names[i]
            mask.append((REASON_COUNTS if counts(name) else 0) | (REASON_FOREVER if name == _FOREVER else 0))
        return mask


def _text(b: bytes) -> str:
    # A profile's strings are UTF-8 (protobuf refuses anything else).
    return b.decode("utf-8", "replace")


def profile_totals(batches: Iterable[SpanBatch], *, compiled: bool | None = None) -> dict[str, Totals]:
    """Every kind's totals per stack over one trace's spans."""
    builders = [ProfileBuilder(kind, compiled=compiled) for kind in PROFILE_KINDS]
    for sb in batches:
        for b in builders:
            b.feed(sb)
    return {b.kind: b.totals() for b in builders}
