"""Spans a generation at a time: :func:`build_generation` builds one
generation's spans from its batches alone (in any thread: the compiled core
runs without the GIL), and :class:`SpanJoin`, fed the results in order,
stitches each to what the ones before left open. What comes out is what
:class:`SpanBuilder` makes of the same batches fed in order: the same spans
in the same order, with the same fields and logs (``docs/decoder.md``,
"Spans a generation at a time", says why).

A generation's builder starts empty. Where the sequential builder would
have consulted a span open from before, it does what an empty builder does
(a goroutine's status opens a clipped span, a region or task that ends
unbegun is clipped from the origin, a span under no region of its own has
no region name) and records it: the first event of each goroutine, P, task,
GC, stop-the-world and mark assist, with the row or open span it made; each
region end past the generation's own begins; each span that took a name
from a region or task it did not see begin; each clipped span from the
origin. The join then, for each of those that met a span open from before,
puts that span's start in place of the guess (a row's start fields patched
in place, or the open span replaced), and carries the open spans on. Its
work is the records and the spans open at the boundary, not the events.

A record the patches cannot express (a goroutine whose first event
contradicts its open state, an end whose begin is in an earlier generation
without an active marker to open it, an exit that ends regions begun
before, task 0 open across the boundary) does not occur in a trace Go
wrote, where each generation restates every goroutine's and P's status;
for it the join builds the generation again, in order, from the state it
carries (``fallbacks`` counts those).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, cast

from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.tables import Tables
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.builder import SpanBuilder, slim_tables, span_logs
from livetrace._trace.spans.logs import CompiledUserLogs, Logs, Prior, UserLogs, user_logs
from livetrace._trace.spans.model import MAX_SPAN_LOGS, SPAN_CLIPPED_END, Follow, SpanKind
from livetrace._trace.spans.twin import (
    ACTIVE,
    END,
    FT_G,
    FT_GC,
    FT_MA,
    FT_P,
    FT_REGPOP,
    FT_STW,
    FT_TASK,
    IN_ASSISTS,
    IN_GC,
    IN_PROCS,
    IN_REGIONS,
    IN_STATES,
    IN_STW,
    IN_TASKS,
    ORIGIN,
    SpanCore,
)


class Carried(NamedTuple):
    """A span open across a boundary (as twin.py's Open), its names as bytes."""

    kind: int
    rkind: int
    rid: int
    start: int
    stack: int
    tok: int
    reason: bytes
    name: bytes
    tname: bytes
    task: int
    flags: int
    seq: int
    proc: int
    state: int


_STATE = Carried._fields.index("state")  # where span_join_fits finds a carried span's state
# The fields of an exported open span (after where and key), as twin.py's Open, and its region depth.
_F_FIX, _F_DEP, _F_RDEPTH = 13, 14, 16
# Span columns (spans.batch.COLUMNS) a patch writes.
_C_START, _C_SSTACK, _C_STOK, _C_REASON, _C_NAME, _C_TNAME, _C_TASK, _C_FLAGS, _C_PROC = 3, 5, 7, 9, 10, 11, 12, 13, 14
_TYPECODES: dict[int, Literal["q", "Q", "I", "B"]] = {
    3: "q",
    5: "Q",
    7: "I",
    9: "I",
    10: "I",
    11: "I",
    12: "Q",
    13: "B",
    14: "q",
}
Record = tuple[int, ...]  # (index, type, what, key, depth, batch, row)
Part = tuple[list[bytes], dict[int, Logs | Prior], list[Logs | Prior]]


@dataclass
class GenerationSpans:
    """One generation's spans, built on their own: what the join needs."""

    token: int
    tables: Tables | None
    core: SpanCore | ccore.SpanCore  # kept for the join's questions about regions and tasks
    logs: UserLogs | CompiledUserLogs
    names: list[bytes]
    parts: list[Part]  # per batch fed: span columns (bytearrays), its tasks' and regions' logs
    opens: list[tuple[int, ...]]
    touches: list[Record]
    task0: bool
    origin: int
    last: int
    seq: int
    events: int
    follow: Follow  # what its builder followed (model.Follow)


def build_generation(
    batches: Iterable[EventBatch], token: int, *, compiled: bool | None = None, follow: Follow = Follow.ALL
) -> GenerationSpans:
    """The spans of one generation's batches, with no state from before it;
    ``token`` is its key in the tables of the spans (the generation's
    number, counted from 0, in the order :class:`SpanJoin` is fed);
    ``follow`` as for :class:`SpanBuilder`, never less than the generations
    joined before it followed."""
    hint = sum(map(len, batches)) if isinstance(batches, list | tuple) else 0
    core: SpanCore | ccore.SpanCore = (
        ccore.SpanCore(True, int(follow), hint) if use_compiled(compiled) else SpanCore(True, follow, hint)
    )
    logs = user_logs(split=True, compiled=compiled, following=bool(follow & Follow.LOGS))
    names: list[bytes] = [b""]
    parts: list[Part] = []
    tables: Tables | None = None
    events = 0
    for batch in batches:
        gen = batch.gen
        if gen is not None:
            if tables is not None and gen is not tables:
                raise ValueError("batches of more than one generation")
            tables = gen
        codes, times, _, procs, goroutines, args, extra = batch.columns()
        strings = gen.strings if gen is not None else {}
        extra_strings = gen.extra_strings if gen is not None else [b""]
        task_logs, region_logs = logs.scan(codes, goroutines, args, strings)
        cols = core.feed(codes, times, procs, goroutines, args, extra, token, strings, extra_strings, names)
        parts.append((cols, task_logs, region_logs))
        events += len(batch)
    opens, touches, task0, origin, last, seq = core.export()
    return GenerationSpans(
        token, tables, core, logs, names, parts, opens, touches, task0, origin, last, seq, events, follow
    )


def _capped(logs: Logs) -> Logs:
    return logs[:MAX_SPAN_LOGS]


class SpanJoin:
    """Generations' spans, joined in order: :meth:`join` each generation's
    :class:`GenerationSpans` (with its batches, for the rare generation it
    must build again) and get its span batches; :meth:`gap` and
    :meth:`close` as :class:`SpanBuilder`'s."""

    def __init__(self, *, compiled: bool | None = None) -> None:
        self._compiled = compiled
        self._states: dict[int, Carried] = {}
        self._assists: dict[int, Carried] = {}
        self._tasks: dict[int, Carried] = {}
        self._procs: dict[int, Carried] = {}
        self._regions: dict[int, list[Carried]] = {}
        self._gc: Carried | None = None
        self._stw: Carried | None = None
        self._origin = -1
        self._last = 0
        self._seq = 0
        self._task_logs: dict[int, Logs] = {}
        self._region_logs: dict[int, list[Logs]] = {}  # as _regions, one per region
        self._tables: dict[int, Tables] = {}
        self._token = -1
        self.fallbacks = 0  # generations built again, in order
        self._follow = Follow.ALL  # what the last generation joined followed

    # -- the state carried across boundaries --

    def _all(self) -> list[Carried]:
        opens = [*self._states.values(), *self._assists.values(), *self._tasks.values(), *self._procs.values()]
        opens += [r for rs in self._regions.values() for r in rs]
        return opens + [o for o in (self._gc, self._stw) if o is not None]

    def open_counts(self) -> tuple[int, ...]:
        """How many spans are open after the generations joined so far, by
        span kind (as :meth:`SpanBuilder.open_counts`)."""
        counts = [0] * len(SpanKind)
        for o in self._all():
            counts[o.kind] += 1
        return tuple(counts)

    def gap(self) -> None:
        """Generations were lost: forget every open span."""
        self._clear()

    def _clear(self) -> None:
        for d in (self._states, self._assists, self._tasks, self._procs, self._regions):
            d.clear()
        self._gc = self._stw = None
        self._origin = -1
        self._task_logs.clear()
        self._region_logs.clear()

    def _builder(self) -> SpanBuilder:
        """A sequential builder that goes on from here."""
        b = SpanBuilder(compiled=self._compiled, follow=self._follow)
        names, ids = b.names, {b"": 0}

        def nid(s: bytes) -> int:
            i = ids.get(s)
            if i is None:
                i = ids[s] = len(names)
                names.append(s)
            return i

        def fields(where: int, key: int, o: Carried) -> tuple[int, ...]:
            kind, rkind, rid, start, stack, tok, reason, name, tname, task, flags, seq, proc, state = o
            r, n, tn = nid(reason), nid(name), nid(tname)
            return (where, key, kind, rkind, rid, start, stack, tok, r, n, tn, task, flags, seq, proc, 0, 0, state, -1)

        opens = [fields(where, k, o) for where, d in self._maps() for k, o in d.items()]
        opens += [fields(IN_REGIONS, g, o) for g, rs in self._regions.items() for o in rs]
        opens += [fields(IN_GC, 0, self._gc)] if self._gc is not None else []
        opens += [fields(IN_STW, 0, self._stw)] if self._stw is not None else []
        b._core.load(opens, self._origin, self._last, self._seq)
        if self._follow & Follow.LOGS:
            b._logs.tasks = {k: list(v) for k, v in self._task_logs.items()}
            b._logs.regions = {
                g: [(o.task, o.seq, list(lg)) for o, lg in zip(rs, self._region_logs[g], strict=True)]
                for g, rs in self._regions.items()
            }
            b._logs.seq = self._seq
        b._tables, b._token, b._last = dict(self._tables), self._token, self._tables.get(self._token)
        return b

    def _maps(self) -> tuple[tuple[int, dict[int, Carried]], ...]:
        return (
            (IN_STATES, self._states),
            (IN_ASSISTS, self._assists),
            (IN_TASKS, self._tasks),
            (IN_PROCS, self._procs),
        )

    def _take(self, b: SpanBuilder) -> None:
        """Carry on from where builder b is."""
        self._clear()
        opens, _, _, origin, last, seq = b._core.export()
        self._put_opens(opens, b.names, 0, {}, {}, {})
        self._origin, self._last, self._seq = origin, last, seq
        self._task_logs = dict(b._logs.tasks)
        for g, rs in b._logs.regions.items():
            self._region_logs[g] = [lg for _, _, lg in rs]
        self._tables, self._token = b._tables, b._token
        if not b.follow & Follow.LOGS:  # (b's logs are empty: it never followed them)
            self._no_logs()

    def _no_logs(self) -> None:
        """No logs were followed: each task and region carried on has none
        (not a missing entry), as many as the spans open, so that a generation
        that follows them (widened) finds one for each."""
        for g, carried in self._regions.items():
            got = self._region_logs.setdefault(g, [])
            got += [[] for _ in range(len(carried) - len(got))]
        for task in self._tasks:
            self._task_logs.setdefault(task, [])

    def _put_opens(
        self,
        opens: list[tuple[int, ...]],
        names: list[bytes],
        base: int,
        fixed: dict[int, Carried],
        deps: dict[int, bytes],
        prior_regions: dict[int, list[Carried]],
    ) -> None:
        """Carry on the open spans a core exported (its seqs counted from
        base), with the names they took from spans open before."""
        for where, key, *f in opens:
            c = fixed.get(f[_F_FIX] - 1) if f[_F_FIX] else None
            if c is None:
                reason, name, tname, task = names[f[6]], names[f[7]], names[f[8]], f[9]
                if f[_F_DEP] and f[_F_DEP] - 1 in deps:
                    tname = deps[f[_F_DEP] - 1]
                prior = prior_regions.get(key, [])
                if 0 <= f[_F_RDEPTH] < len(prior):
                    reg = prior[len(prior) - 1 - f[_F_RDEPTH]]
                    name, tname, task = reg.name, reg.tname, reg.task
                c = Carried(
                    f[0], f[1], f[2], f[3], f[4], f[5], reason, name, tname, task, f[10], base + f[11], f[12], f[15]
                )
            if where == IN_STATES:
                self._states[key] = c
            elif where == IN_ASSISTS:
                self._assists[key] = c
            elif where == IN_TASKS:
                self._tasks[key] = c
            elif where == IN_PROCS:
                self._procs[key] = c
            elif where == IN_REGIONS:
                self._regions.setdefault(key, []).append(c)
            elif where == IN_GC:
                self._gc = c
            else:
                self._stw = c

    def _advance(self, token: int, tables: Tables | None) -> None:
        """The tables of a new generation, as SpanBuilder's _token_of keeps them."""
        if tables is None:
            return
        previous, self._token = self._token, token
        self._tables[token] = tables
        opens = self._all()
        oldest = min((o.tok for o in opens), default=token)
        for k in [k for k in self._tables if k < oldest]:
            del self._tables[k]
        if previous in self._tables and previous != token:
            stacks = {o.stack for o in opens if o.tok == previous}
            self._tables[previous] = slim_tables(self._tables[previous], stacks)

    # -- joining --

    def _fits(self, w: GenerationSpans) -> bool:
        """Whether patches express what the state carried in changes about w."""
        if w.task0 and 0 in self._tasks:
            return False
        if use_compiled(self._compiled):
            if not ccore.span_join_fits(
                w.touches, self._states, self._procs, self._gc is not None, self._stw is not None, self._assists, _STATE
            ):
                return False
        elif not self._touches_fit(w.touches):
            return False
        for g, prior in self._regions.items():
            pops, cleared = w.core.regions_ended(g)
            if cleared and len(prior) > pops:
                return False
        for g in w.logs.pops.keys() | w.logs.pending_regions.keys():
            pops, cleared = w.core.regions_ended(g)
            if [pops, cleared] != w.logs.pops.get(g, [0, 0]):
                return False
        return True

    def _touches_fit(self, touches: list[Record]) -> bool:
        """The twin of the core's span_join_fits: whether no first touch
        clashes with a span carried in."""
        for _, typ, what, key, _, _, _ in touches:
            if typ == FT_G:
                p = self._states.get(key)
                if p is not None and p.state != what:
                    return False
            elif typ == FT_P:
                if not what and key in self._procs:
                    return False
            elif typ == FT_GC:
                if what == END and self._gc is not None:
                    return False
            elif typ == FT_STW:
                if what == END and self._stw is not None:
                    return False
            elif typ == FT_MA and what == END and key in self._assists:
                return False
        return True

    def join(self, w: GenerationSpans, batches: Sequence[EventBatch]) -> list[SpanBatch]:
        """The span batches of generation w (built from ``batches``), one
        per batch, as SpanBuilder would have given them."""
        if w.token != self._token + 1 and w.tables is not None:
            raise ValueError(f"generation {w.token} joined after {self._token}")
        self._follow = w.follow
        if not self._fits(w):
            self.fallbacks += 1
            b = self._builder()
            out = [b.feed(batch) for batch in batches]
            self._take(b)
            return out
        self._advance(w.token, w.tables)
        return _Patch(self, w).apply()

    def close(self) -> SpanBatch:
        """The spans still open, cut at the last event; then empty, as new."""
        b = self._builder()
        out = b.close()
        self._clear()
        self._tables.clear()
        return out


class _Patch:
    """One generation's join: the patches, then the state carried on."""

    def __init__(self, j: SpanJoin, w: GenerationSpans) -> None:
        self.j, self.w = j, w
        self.ids: dict[bytes, int] | None = None
        self.views: dict[tuple[int, int], memoryview] = {}
        self.toks: dict[int, set[int]] = {}  # batch -> tables keys its patched rows start in
        self.fast = use_compiled(j._compiled)

    def nid(self, s: bytes) -> int:
        names = self.w.names
        if self.ids is None:
            self.ids = {}
            for k, n in enumerate(names):
                self.ids.setdefault(n, k)
        i = self.ids.get(s)
        if i is None:
            i = self.ids[s] = len(names)
            names.append(s)
        return i

    def col(self, b: int, c: int) -> memoryview:
        v = self.views.get((b, c))
        if v is None:
            v = self.views[(b, c)] = memoryview(self.w.parts[b][0][c]).cast(_TYPECODES[c])
        return v

    def take_states(self) -> list[tuple[Record, Carried | None]]:
        """The twin of the core's span_join_take_states: the first touches
        to look at, each goroutine's with the span it carried in (taken
        from the state), those of goroutines that carried none left out, and
        those of tasks begun here that none carried in (no state to take,
        no end to patch)."""
        out: list[tuple[Record, Carried | None]] = []
        j = self.j
        for t in self.w.touches:
            if t[1] == FT_G:
                if (p := j._states.pop(t[3], None)) is not None:
                    out.append((t, p))
            elif t[1] != FT_TASK or t[2] == END or t[3] in j._tasks or t[3] in j._task_logs:
                out.append((t, None))
        return out

    def start_from(self, b: int, r: int, p: Carried) -> None:
        """Row r of batch b is span p, which began before the generation."""
        col = self.col
        col(b, _C_START)[r] = p.start
        col(b, _C_SSTACK)[r] = p.stack
        col(b, _C_STOK)[r] = p.tok
        col(b, _C_REASON)[r] = self.nid(p.reason)
        col(b, _C_NAME)[r] = self.nid(p.name)
        col(b, _C_TNAME)[r] = self.nid(p.tname)
        col(b, _C_TASK)[r] = p.task
        flags = col(b, _C_FLAGS)
        flags[r] = p.flags | (flags[r] & SPAN_CLIPPED_END)
        col(b, _C_PROC)[r] = p.proc
        self.toks.setdefault(b, set()).add(p.tok)

    def from_origin(self, b: int, r: int) -> None:
        if self.j._origin >= 0:
            self.col(b, _C_START)[r] = self.j._origin

    def apply(self) -> list[SpanBatch]:
        j, w = self.j, self.w
        base = j._seq
        metas = {g: w.core.region_meta(g) for g in j._regions}
        # Names taken from regions and tasks begun before (the state as it was).
        deps: dict[int, bytes] = {}
        prior_regions = {g: list(prior) for g, prior in j._regions.items()}
        for g, prior in j._regions.items():
            top = len(prior) - 1
            for depth, b, r in metas[g][2]:
                k = top - depth
                if k >= 0:
                    reg = prior[k]
                    self.col(b, _C_NAME)[r] = self.nid(reg.name)
                    self.col(b, _C_TNAME)[r] = self.nid(reg.tname)
                    self.col(b, _C_TASK)[r] = reg.task
        for task, tk in j._tasks.items():
            for i, _, _, _, _, b, r in w.core.task_deps(task):
                if b >= 0:
                    self.col(b, _C_TNAME)[r] = self.nid(tk.name)
                else:
                    deps[i] = tk.name
        # First touches: a span open from before goes on, or is replaced.
        fixed: dict[int, Carried] = {}
        ended_task_logs: dict[int, Logs] = {}
        if self.fast:
            taken = ccore.span_join_take_states(w.touches, j._states, j._tasks, j._task_logs, FT_TASK, END)
        else:
            taken = self.take_states()
        for (i, typ, what, key, depth, b, r), p in taken:
            if typ == FT_G:
                pass  # p: the span its goroutine carried in
            elif typ == FT_P:
                p = j._procs.pop(key, None)
            elif typ == FT_GC:
                p, j._gc = j._gc, None
                p = p if what == ACTIVE else None
            elif typ == FT_STW:
                j._stw = None
            elif typ == FT_MA:
                p = j._assists.pop(key, None)
                p = p if what == ACTIVE else None
            elif typ == FT_TASK:
                p = j._tasks.pop(key, None)
                logs = j._task_logs.pop(key, None)
                if logs is not None:
                    ended_task_logs[key] = logs
                if what != END:
                    continue
                if p is None:
                    self.from_origin(b, r)
                    continue
            elif typ == FT_REGPOP:
                prior = j._regions.get(key, [])
                k = len(prior) - 1 - depth
                if k < 0:
                    self.from_origin(b, r)
                    continue
                p = prior[k]
            elif typ == ORIGIN:
                self.from_origin(b, r)
                continue
            if p is None:
                continue
            if b >= 0:
                self.start_from(b, r, p)
            else:
                fixed[i] = p
        # Logs of tasks and regions begun before.
        region_prior: dict[int, list[Logs]] = {}
        for g in w.logs.pending_regions.keys() & j._regions.keys():  # (a log a goroutine's, on the rest)
            pending, regs, prior_logs = w.logs.pending_regions[g], j._regions[g], j._region_logs.get(g, [])
            for d0, task, entry in pending:
                for k in range(len(regs) - d0):
                    if regs[k].task == task and len(prior_logs[k]) < MAX_SPAN_LOGS:
                        prior_logs[k].append(entry)
        for g, prior in list(j._regions.items()):
            pops, cleared, _ = metas[g]
            region_prior[g] = list(j._region_logs[g])
            if cleared or pops >= len(prior):
                del j._regions[g], j._region_logs[g]
            elif pops:
                del prior[len(prior) - pops :], j._region_logs[g][len(prior) :]
        for task, waiting in w.logs.pending_tasks.items():
            kept = j._task_logs.get(task)
            if kept is not None:
                kept[:] = _capped(kept + waiting)
        # The open spans carried on.
        j._put_opens(w.opens, w.names, base, fixed, deps, prior_regions)
        for g, rs in w.logs.regions.items():
            j._region_logs.setdefault(g, []).extend(lg for _, _, lg in rs)
        j._task_logs.update(w.logs.tasks)
        if not w.follow & Follow.LOGS:
            j._no_logs()
        j._origin = j._origin if j._origin >= 0 else w.origin
        j._last = w.last if w.events else j._last
        j._seq = base + w.seq
        return [self.batch(b, part, ended_task_logs, region_prior) for b, part in enumerate(w.parts)]

    def batch(
        self, b: int, part: Part, ended_task_logs: dict[int, Logs], region_prior: dict[int, list[Logs]]
    ) -> SpanBatch:
        cols, task_logs, region_logs = part
        # Looked for in C (a type a log), as most batches have no Prior: thousands of regions end in some.
        tasks = cast("dict[int, Logs]", task_logs)
        if Prior in map(type, task_logs.values()):
            tasks = {}
            for task, got in task_logs.items():
                if isinstance(got, Prior):  # logs go to a task only while it is open
                    before = ended_task_logs.get(task)
                    got = [] if before is None else _capped(before + got.pending)
                tasks[task] = got
        regions = cast("list[Logs]", region_logs)
        if Prior in map(type, region_logs):
            regions = []
            for got in region_logs:
                if isinstance(got, Prior):
                    prior = region_prior.get(got.key, [])
                    k = len(prior) - 1 - got.depth
                    regions.append(prior[k] if k >= 0 else [])
                else:
                    regions.append(got)
        w = self.w
        tables: dict[int, Tables] = {}
        if len(cols[0]) and w.tables is not None:
            tables = {k: self.j._tables[k] for k in {w.token, *self.toks.get(b, ())} if k in self.j._tables}
        return SpanBatch(cols, tables, w.names, span_logs(cols, tasks, regions, fast=self.fast))
