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

from array import array
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any, Literal

from livetrace._errors import TraceFormatError
from livetrace._trace.model.batch import NEXTRA, EventBatch
from livetrace._trace.model.events import SYNC_CODE
from livetrace._trace.modern.carry import Carried, Fresh, FreshOrdering, _First, _Unk
from livetrace._trace.modern.decoder import _CompiledEngine
from livetrace._trace.modern.generation import Generation
from livetrace._trace.modern.state import NO_ID, signed
from livetrace._trace.spec.modern import EV_GO_STATUS, EV_GO_STATUS_STACK, EV_PROC_STATUS, timed_specs

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
    _ACTIVE,
    _UNMATCHED,
    _ITERATED,
) = range(11)
_UNK_P, _UNK_G = 1, 2
_FORMATS: tuple[Literal["B", "q", "Q"], ...] = ("B", "q", "q", "q", "q", "Q", "Q")  # EventBatch's columns
_STATUS = frozenset({EV_GO_STATUS, EV_GO_STATUS_STACK, EV_PROC_STATUS})
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
        notes: _Notes,
        last: int,
    ) -> None:
        super().__init__(gen, order, error)
        self._batches, self._skips, self._last = batches, skips, last
        self._rows, self._unknown, self._task_ends = notes.rows, notes.unknown, notes.task_ends
        self._starts = [0]
        for b in batches:
            self._starts.append(self._starts[-1] + len(b))
        self._copies: dict[tuple[int, int], memoryview] = {}

    def _at(self, out: int, col: int) -> tuple[memoryview, int]:
        """Column col of the batch that holds event out (a copy, to patch), and the event's index there."""
        k = bisect_right(self._starts, out) - 1
        view = self._copies.get((k, col))
        if view is None:
            old = self._batches[k].columns()[col]
            view = self._copies[k, col] = memoryview(bytearray(old.obj)).cast(_FORMATS[col])
        return view, out - self._starts[k]

    def stamp(self, last: int, syncs: int) -> int:
        # The j-th event stamped becomes max(t, last + j + 1): a prefix, as
        # the times less their indexes never go down. The events the filter
        # left out count in j.
        n = self._starts[-1]
        skips = iter(self._skips)
        ahead = next(skips, None)
        skipped = 0
        for k, b in enumerate(self._batches):
            start, old = self._starts[k], b.columns()[1]
            times: memoryview | None = None
            for i in range(len(b)):
                while ahead is not None and ahead[0] <= start + i:
                    skipped += ahead[1]
                    ahead = next(skips, None)
                floor = last + start + i + skipped + 1
                if old[i] >= floor:
                    break
                if times is None:
                    times = self._at(start, 1)[0]
                times[i] = floor
            else:
                continue
            break
        if n and self._batches[0].columns()[0][0] == SYNC_CODE:
            self._at(0, 5)[0][0] = syncs
        stamps = n + sum(c for _, c in self._skips)
        return max(self._last, last + stamps)

    def patch_contexts(self, state: Carried) -> None:
        written = {r.out: r for r in self._rows}
        for out, m, unk in self._unknown:
            cells = state.ms.get(m)
            if cells is None:
                continue  # NO_ID, as the fresh engine wrote it
            p, g = cells
            row = written.get(out)
            if unk & _UNK_P and p != NO_ID:
                col, i = self._at(out, 3)
                col[i] = p
            if unk & _UNK_G and g != NO_ID and (row is None or "g" not in row.dirty):
                col, i = self._at(out, 4)
                col[i] = g

    def task_ends(self) -> list[tuple[int, tuple[int, ...]]]:
        v = self._task_ends
        return [(v[k + 1], (v[k + 2], v[k + 3])) for k in range(0, len(v), 4)]

    def set_task_end(self, k: int, extra: tuple[int, int]) -> None:
        out = signed(self._task_ends[4 * k])
        if out >= 0:
            col, i = self._at(out, 6)
            col[i * NEXTRA : i * NEXTRA + 2] = array("Q", extra)

    def batches(self) -> list[EventBatch]:
        for r in self._rows:
            if r.out < 0 or not r.dirty:
                continue
            # Only what changed is written: a batch's columns are copied once one of them changes.
            k = bisect_right(self._starts, r.out) - 1
            i = r.out - self._starts[k]
            old = self._batches[k].columns()
            for name, col in (("p", 3), ("g", 4)):
                if name in r.dirty and old[col][i] != int(getattr(r, name)):
                    self._at(r.out, col)[0][i] = int(getattr(r, name))
            if "extra" in r.dirty:
                for x, v in enumerate(r.extra):
                    if old[6][i * NEXTRA + x] != v:
                        self._at(r.out, 6)[0][i * NEXTRA + x] = v
        out = list(self._batches)
        for k in sorted({k for k, _ in self._copies}):
            cols = [c.obj for c in out[k].columns()]
            for col in range(len(cols)):
                view = self._copies.get((k, col))
                if view is not None:
                    cols[col] = bytes(view.obj)
            out[k] = EventBatch(self.gen, len(out[k]), tuple(cols))  # type: ignore[arg-type]
        return out


def compiled_fresh_generation(gen: Generation, mask: bytes) -> Fresh:
    """Orders a generation as if it were the trace's first on the compiled
    engine (any thread; the GIL released once, while it orders the whole
    generation: a pool thread never waits for it between batches)."""
    eng = _CompiledEngine(mask, fresh=True)
    try:
        batches = eng.whole_generation(gen)
    except TraceFormatError as e:
        return Fresh(gen, FreshOrdering(), e)
    notes, skips, threads, created, begun, task_ends = eng.notes()
    state = eng.state()
    order, read = _read_notes(gen, Carried.from_values(state), notes, threads, batches)
    order.created.update(array("Q", created))
    order.begun.update(array("Q", begun))
    read.task_ends = array("Q", task_ends)
    return _ColumnsFresh(gen, order, None, batches, skips, read, state[7])


class _Notes:
    """What the carry patches, beside the FreshOrdering's notes: the events
    it may change (rows), and, made into rows only when a carry needs them,
    the events emitted with cells left from before (out, thread, which
    cells) and the TaskEnds (out, task, parent, derived string)."""

    def __init__(self) -> None:
        self.rows: list[_Row] = []
        self.unknown: list[tuple[int, int, int]] = []
        self.task_ends: Sequence[int] = ()  # out, task, parent, derived string, and so on


def _read_notes(
    gen: Generation,
    st: Carried,
    notes: list[tuple[int, int, int, int, int, tuple[int, int, int, int], int, int, int, int]],
    threads: list[tuple[int, int, int]],
    batches: list[EventBatch],
) -> tuple[FreshOrdering, _Notes]:
    """The engine's end state and notes, as the twin's FreshOrdering holds them."""
    o = FreshOrdering()
    read = _Notes()
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
    rows = read.rows

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
            # Only a status's event is patched: the carry sends anything else first met back to be ordered again.
            event = row(out, m, p, g, unk, args) if accepted and code in _STATUS else None
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
            read.unknown.append((out, m, unk))
        elif kind == _ACTIVE:
            o.actives.setdefault((_KINDS[a[0]], key), []).append((a[1], 0))
            if a[2]:
                o.early.add((_KINDS[a[0]], key))
        elif kind == _UNMATCHED:
            name = gen.strings.get(a[1], b"")
            o.unmatched.setdefault(key, []).append((a[0], name))
        elif kind == _ITERATED:
            o.ms.iterated = True
    return o, read
