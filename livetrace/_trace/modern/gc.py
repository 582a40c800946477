"""The GC rules of the ordering engine: one global GC sequence and the ranges open on procs and goroutines."""

from __future__ import annotations

from livetrace._trace.modern.generation import Generation
from livetrace._trace.modern.state import (
    GC_NOT_RUNNING,
    GC_RUNNING,
    GC_UNDETERMINED,
    MAY,
    MUST,
    USER_GO,
    Ctx,
    OrderingError,
    OrderState,
    check_ctx,
    code_name,
)
from livetrace._trace.spec.modern import (
    EV_STW_BEGIN,
    EV_STW_END,
    range_begins,
)

# The event that opens the range a given event belongs to.
RANGE_START = range_begins()


def _begin_range(ranges: list[tuple[int, int]], key: tuple[int, int]) -> None:
    if key in ranges:
        raise OrderingError(f"discovered event already in-flight for when starting event {code_name(key[0])}")
    ranges.append(key)


def _active_range(ranges: list[tuple[int, int]], key: tuple[int, int], initial: bool) -> None:
    if initial:
        if key in ranges:
            raise OrderingError(f"found named active range already in first gen: {key}")
        ranges.append(key)
    elif key not in ranges:
        raise OrderingError(f"resource is missing active range: {code_name(key[0])} {ranges}")


def _end_range(ranges: list[tuple[int, int]], code: int) -> int:
    start = RANGE_START[code]
    for i, (typ, desc) in enumerate(ranges):
        if typ == start:
            ranges[i] = ranges[-1]
            ranges.pop()
            return desc
    raise OrderingError(f"tried to end event {code_name(start)}, but not in-flight")


class GCRules(OrderState):
    """The GC cycle's sequence, the ranges it opens on procs and goroutines
    (sweeps, mark assists, stop-the-worlds) and the heap metrics."""

    def _gc_active(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        seq = a[0]
        if gen.gen == self.initial_gen:
            if self.gc_state != GC_UNDETERMINED:
                raise OrderingError("GCActive in the first generation isn't first GC event")
            self.gc_seq, self.gc_state = seq, GC_RUNNING
            self._emit(code, t, ctx, a, gen)
            return ctx
        if seq != self.gc_seq + 1:
            return None
        if self.gc_state != GC_RUNNING:
            raise OrderingError("encountered GCActive while GC was not in progress")
        self.gc_seq = seq
        check_ctx(ctx, USER_GO)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _gc_begin(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        seq = a[0]
        if self.gc_state == GC_UNDETERMINED:
            self.gc_seq, self.gc_state = seq, GC_RUNNING
            self._emit(code, t, ctx, a, gen)
            return ctx
        if seq != self.gc_seq + 1:
            return None
        if self.gc_state == GC_RUNNING:
            raise OrderingError("encountered GCBegin while GC was already in progress")
        self.gc_seq, self.gc_state = seq, GC_RUNNING
        check_ctx(ctx, USER_GO)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _gc_end(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        seq = a[0]
        if seq != self.gc_seq + 1:
            return None
        if self.gc_state == GC_NOT_RUNNING:
            raise OrderingError("encountered GCEnd when GC was not in progress")
        if self.gc_state == GC_UNDETERMINED:
            raise OrderingError("encountered GCEnd when GC was in an undetermined state")
        self.gc_seq, self.gc_state = seq, GC_NOT_RUNNING
        check_ctx(ctx, USER_GO)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _sweep_begin(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        check_ctx(ctx, (MUST, MUST, MAY))
        _begin_range(self.ps[ctx[1]].ranges, (code, 0))
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _sweep_active(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        ps = self.ps.get(a[0])
        if ps is None:
            raise OrderingError(f"encountered GCSweepActive for unknown proc {a[0]}")
        _active_range(ps.ranges, (RANGE_START[code], 0), gen.gen == self.initial_gen)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _sweep_end(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        check_ctx(ctx, (MUST, MUST, MAY))
        _end_range(self.ps[ctx[1]].ranges, code)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _go_range_begin(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        check_ctx(ctx, USER_GO)
        s = self.gs.get(ctx[2])
        if s is None:
            raise OrderingError(f"encountered event of type {code} without known state for current goroutine {ctx[2]}")
        _begin_range(s.ranges, (code, a[0] if code == EV_STW_BEGIN else 0))
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _go_range_active(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        s = self.gs.get(a[0])
        if s is None:
            raise OrderingError(f"uninitialized goroutine {a[0]} found during {code_name(code)}")
        _active_range(s.ranges, (RANGE_START[code], 0), gen.gen == self.initial_gen)
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _go_range_end(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        check_ctx(ctx, USER_GO)
        s = self.gs.get(ctx[2])
        if s is None:
            raise OrderingError(f"encountered event of type {code} without known state for current goroutine {ctx[2]}")
        desc = _end_range(s.ranges, code)
        if code == EV_STW_END:  # the end of a stop-the-world names what its begin named
            a = [desc]
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _heap_metric(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        check_ctx(ctx, (MUST, MUST, MAY))
        self._emit(code, t, ctx, a, gen)
        return ctx

    def _alloc_free(self, code: int, t: int, a: list[int], gen: Generation, ctx: Ctx) -> Ctx | None:
        check_ctx(ctx, (MUST, MAY, MAY))
        self._emit(code, t, ctx, a, gen)
        return ctx
