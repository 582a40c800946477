"""A generation ordered by a fresh compiled engine, for ``carry``.

``Engine(fresh=True)`` orders a generation as if it were the trace's first,
without the GIL, and notes in C what the twin's ``FreshOrdering`` notes
(decode/fresh.h). Here its notes become a ``FreshOrdering``'s, so that
``carry`` decides on them as on the twin's, and the events they name become
``_Row``s, which the carry patches as it patches the twin's events; the
patches then go into the columns of the few batches that hold those events
(the generation's first ones, mostly), with the times clamped against the
carried last time and the Sync's count.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from livetrace._errors import TraceFormatError
from livetrace._trace.model.batch import NEXTRA, EventBatch
from livetrace._trace.model.events import SYNC_CODE
from livetrace._trace.modern.carry import Carried, Fresh, FreshOrdering, _First, _Unk
from livetrace._trace.modern.decoder import _CompiledEngine
from livetrace._trace.modern.generation import Generation
from livetrace._trace.spec.modern import timed_specs

# decode/fresh.h's note kinds
(
    _FIRST_G,
    _FIRST_P,
    _FIRST_TASK,
    _GC,
    _READ,
    _SYSCALL_SELF,
    _SYSCALL_OTHER,
    _UNKNOWN_CTX,
    _TASK_END,
    _RANGED,
    _ACTIVE,
    _UNMATCHED,
    _ITERATED,
) = range(13)
_UNK_P, _UNK_G = 1, 2
# the arguments a thread's event carries (its timestamp's left out), as the twin reads them
_WIRE_ARGS = [0] * 256
for _spec in timed_specs():
    _WIRE_ARGS[_spec.code] = len(_spec.args) - 1
_KINDS = ("p", "g")


class _Row:
    """An event the compiled engine ordered (``out``: its index among those
    written, -1 if the filter left it out), as the carry reads and patches it:
    the fields set after it was made are written back."""

    __slots__ = ("args", "dirty", "extra", "g", "m", "out", "p")
    out: int
    m: int
    p: int
    g: int
    args: list[int]
    extra: tuple[int, ...]
    dirty: set[str]

    def __init__(self, out: int, m: int, p: int, g: int, args: list[int], extra: tuple[int, ...]) -> None:
        set_ = object.__setattr__
        set_(self, "dirty", set())
        for k, v in (("out", out), ("m", m), ("p", p), ("g", g), ("args", args), ("extra", extra)):
            set_(self, k, v)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        self.dirty.add(name)


class _ColumnsFresh(Fresh):
    """The compiled engine's fresh result: its batches, patched in copies of
    their columns where the carry changes them."""

    def __init__(
        self,
        gen: Generation,
        order: FreshOrdering,
        error: TraceFormatError | None,
        batches: list[EventBatch],
        skips: list[tuple[int, int]],
        rows: list[_Row],
        last: int,
    ) -> None:
        super().__init__(gen, order, error)
        self._batches, self._skips, self._rows, self._last = batches, skips, rows, last
        self._starts = [0]
        for b in batches:
            self._starts.append(self._starts[-1] + len(b))
        self._copies: dict[int, list[bytearray]] = {}

    def _at(self, out: int) -> tuple[list[bytearray], int]:
        """The columns (copied, to patch) of the batch that holds event out, and its index there."""
        k = bisect_right(self._starts, out) - 1
        cols = self._copies.get(k)
        if cols is None:
            cols = self._copies[k] = [bytearray(c) for c in self._batches[k].columns()]
        return cols, out - self._starts[k]

    def stamp(self, last: int, syncs: int) -> int:
        n = self._starts[-1]
        skipped = si = 0
        for j in range(n):
            while si < len(self._skips) and self._skips[si][0] <= j:
                skipped += self._skips[si][1]
                si += 1
            cols, i = self._at(j)
            times = memoryview(cols[1]).cast("q")
            floor = last + j + skipped + 1
            if times[i] >= floor:
                break
            times[i] = floor
        if n and self._batches[0].columns()[0][0] == SYNC_CODE:
            cols, _ = self._at(0)
            memoryview(cols[5]).cast("Q")[0] = syncs
        stamps = n + sum(c for _, c in self._skips)
        return max(self._last, last + stamps)

    def batches(self) -> list[EventBatch]:
        for r in self._rows:
            if r.out < 0 or not r.dirty:
                continue
            cols, i = self._at(r.out)
            if "p" in r.dirty:
                memoryview(cols[3]).cast("q")[i] = int(r.p)
            if "g" in r.dirty:
                memoryview(cols[4]).cast("q")[i] = int(r.g)
            if "extra" in r.dirty:
                extra = memoryview(cols[6]).cast("Q")
                for x, v in enumerate(r.extra):
                    extra[i * NEXTRA + x] = v
        out = list(self._batches)
        for k, cols in self._copies.items():
            out[k] = EventBatch(self.gen, len(out[k]), tuple(bytes(c) for c in cols))
        return out


def compiled_fresh_generation(gen: Generation, mask: bytes) -> Fresh:
    """Orders a generation as if it were the trace's first on the compiled
    engine (any thread; the GIL released while it orders)."""
    eng = _CompiledEngine(mask, fresh=True)
    batches: list[EventBatch] = []
    error: TraceFormatError | None = None
    try:
        batches.extend(eng.generation(gen))
    except TraceFormatError as e:
        error = e
    if error is not None:
        return Fresh(gen, FreshOrdering(), error)
    notes, skips, threads = eng.notes()
    state = eng.state()
    order, rows = _read_notes(gen, Carried.from_values(state), notes, threads, batches)
    return _ColumnsFresh(gen, order, None, batches, skips, rows, state[7])


def _read_notes(
    gen: Generation,
    st: Carried,
    notes: list[tuple[int, int, int, int, int, tuple[int, int, int, int], int, int, int, int]],
    threads: list[tuple[int, int, int]],
    batches: list[EventBatch],
) -> tuple[FreshOrdering, list[_Row]]:
    """The engine's end state and notes, as the twin's FreshOrdering holds them."""
    o = FreshOrdering()
    for gid, gstate in st.gs.items():
        dict.__setitem__(o.gs, gid, gstate)
    for pid, pstate in st.ps.items():
        dict.__setitem__(o.ps, pid, pstate)
    for tid, task in st.tasks.items():
        dict.__setitem__(o.tasks, tid, task)
    o.gc_seq, o.gc_state, o.initial_gen = st.gc_seq, st.gc_state, st.initial_gen
    for m, unk, own in threads:
        mp, mg = st.ms[m]
        cells = [_Unk(m, 0, o.reads) if unk & _UNK_P else mp, _Unk(m, 1, o.reads) if unk & _UNK_G else mg]
        dict.__setitem__(o.ms, m, cells)
        o.ms.firsts[m] = _First(0, [])
        if own:
            o.own.add(m)
    starts = [0]
    for b in batches:
        starts.append(starts[-1] + len(b))
    by_out: dict[int, _Row] = {}
    rows: list[_Row] = []

    def row(out: int, m: int, p: int, g: int, unk: int, args: list[int], extra: tuple[int, ...] = ()) -> _Row:
        """The event written at out (shared by every note that names it), or one left out, from the note."""
        if out >= 0:
            r = by_out.get(out)
            if r is None:
                k = bisect_right(starts, out) - 1
                _, _, ms, ps, gs, _, xs = batches[k].columns()
                i = out - starts[k]
                r = by_out[out] = _Row(out, ms[i], ps[i], gs[i], args, tuple(xs[i * NEXTRA : i * NEXTRA + NEXTRA]))
                rows.append(r)
            return r
        return _Row(
            -1, m, _Unk(m, 0, o.reads) if unk & _UNK_P else p, _Unk(m, 1, o.reads) if unk & _UNK_G else g, args, extra
        )

    firsts = {_FIRST_G: o.gs.firsts, _FIRST_P: o.ps.firsts, _FIRST_TASK: o.tasks.firsts}
    for kind, code, accepted, unk, key, a, m, p, g, out in notes:
        args = list(a[: _WIRE_ARGS[code]])
        if kind in firsts:
            event = row(out, m, p, g, unk, args) if accepted else None
            firsts[kind][key] = _First(code, args, bool(accepted), event)  # type: ignore[arg-type]
        elif kind == _GC:
            event = row(out, m, p, g, unk, args) if accepted else None
            if event is not None and out >= 0:  # its context is the attempt's, cells left from before included
                object.__setattr__(event, "p", _Unk(m, 0, o.reads) if unk & _UNK_P else p)
                object.__setattr__(event, "g", _Unk(m, 1, o.reads) if unk & _UNK_G else g)
            o.gc_first = _First(code, args, bool(accepted), event)  # type: ignore[arg-type]
        elif kind == _READ:
            o.reads.add((m, key))
        elif kind == _SYSCALL_SELF:
            o.syscall_self.append((_Unk(m, 1, o.reads) if unk & _UNK_G else g, key))
        elif kind == _SYSCALL_OTHER:
            o.syscall_other[m] = (key, row(out, m, p, g, 0, args) if out >= 0 else None)  # type: ignore[assignment]
        elif kind == _UNKNOWN_CTX:
            r = row(out, m, p, g, 0, args)
            if unk & _UNK_P:
                r.p = _Unk(m, 0, o.reads)
            if unk & _UNK_G:
                r.g = _Unk(m, 1, o.reads)
            o.unknown_ctx.append(r)  # type: ignore[arg-type]
        elif kind == _TASK_END:
            r = row(out, m, p, g, 0, [key], (a[0], a[1]))
            object.__setattr__(r, "args", [key])
            object.__setattr__(r, "extra", (a[0], a[1]))
            o.task_ends.append(r)  # type: ignore[arg-type]
        elif kind == _RANGED:
            o._range_op(_KINDS[a[0]], key)
        elif kind == _ACTIVE:
            o._active(_KINDS[a[0]], key, (a[1], 0))
        elif kind == _UNMATCHED:
            name = gen.strings.get(a[1], b"")
            o.unmatched.setdefault(key, []).append((a[0], name))
        elif kind == _ITERATED:
            o.ms.iterated = True
    return o, rows
