"""The span builder's core in pure Python: the twin of _ccore/spans/spans.c, and the
reference. One pass over a batch's columns; the state lives in dicts keyed
by goroutine and task id, the spans go out as columns (bytes).

What each event does (the same table as spans.c):

- a goroutine's state transition ends the span of its current state and
  begins one of its new state; a transition to the state it is already in
  (a generation's status report) changes nothing; the first one seen of a
  goroutine only begins one (clipped, when it reports a state the goroutine
  was already in); the P the event ran on is a running span's P; a
  goroutine's exit also ends the regions it left open (clipped_end);
- a P's ProcStart, and a ProcStatus that says it runs (or is in a system
  call), begin its running span (clipped, for a status first seen);
  ProcStop, ProcSteal and a ProcStatus that says it is idle end it;
- GCBegin/GCEnd, STWBegin/STWEnd, GCMarkAssistBegin/End,
  UserRegionBegin/End and UserTaskBegin/End bracket spans; an active marker
  (GCActive, GCMarkAssistActive) begins a clipped one if none is open; an
  end whose begin was not seen (a region or task begun before the trace or
  a gap) ends a clipped span from when the builder first saw an event.

Split (``SpanCore(split=True)``, one generation built on its own, with no
state from before it: ``spans/join.py`` says how the join uses it): the
rules are the same, and the core also records each place where the result
would depend on what was open before the generation: the first event of
each goroutine, P, task, GC, stop-the-world and mark assist (with the span
it opened, and where that span's row went), each region end past the
generation's own region begins, each span that takes its region or task
name from a region or task it did not see begin, and each clipped span
started at the origin. ``export`` hands these over with the open spans.
"""

from __future__ import annotations

from array import array

from livetrace._trace.model.batch import NARGS, NEXTRA
from livetrace._trace.model.events import PROC_IDLE, PROC_RUNNING, PROC_SYSCALL, PROC_SYSCALL_ABANDONED
from livetrace._trace.spans.batch import COLUMNS
from livetrace._trace.spans.model import (
    RES_GOROUTINE,
    RES_NONE,
    RES_PROC,
    SPAN_CLIPPED_END,
    SPAN_CLIPPED_START,
    Follow,
    SpanKind,
)
from livetrace._trace.spec import modern as m

# GoState values, and the span kind of each live state.
NOT_EXIST, RUNNABLE, RUNNING, WAITING, SYSCALL = 1, 2, 3, 4, 5
STATE_KIND = {
    RUNNABLE: SpanKind.RUNNABLE,
    RUNNING: SpanKind.RUNNING,
    WAITING: SpanKind.BLOCKED,
    SYSCALL: SpanKind.SYSCALL,
}
STATUS_STATE = (0, RUNNABLE, RUNNING, SYSCALL, WAITING)  # wire GoStatus -> GoState

# Per transition code: (whose: 0 the event's goroutine, 1 its first argument;
# new state, 0 from the status argument; index of the reason string argument
# or -1; index of the event's own stack argument or -1).
TRANSITIONS: dict[int, tuple[int, int, int, int]] = {
    m.EV_GO_CREATE: (1, RUNNABLE, -1, 2),
    m.EV_GO_CREATE_BLOCKED: (1, WAITING, -1, 2),
    m.EV_GO_CREATE_SYSCALL: (1, SYSCALL, -1, -1),
    m.EV_GO_START: (1, RUNNING, -1, -1),
    m.EV_GO_DESTROY: (0, NOT_EXIST, -1, -1),
    m.EV_GO_DESTROY_SYSCALL: (0, NOT_EXIST, -1, -1),
    m.EV_GO_STOP: (0, RUNNABLE, 0, 1),
    m.EV_GO_BLOCK: (0, WAITING, 0, 1),
    m.EV_GO_UNBLOCK: (1, RUNNABLE, -1, 2),
    m.EV_GO_SWITCH: (1, RUNNABLE, -1, -1),
    m.EV_GO_SWITCH_DESTROY: (1, RUNNABLE, -1, -1),
    m.EV_GO_SYSCALL_BEGIN: (0, SYSCALL, -1, 1),
    m.EV_GO_SYSCALL_END: (0, RUNNING, -1, -1),
    m.EV_GO_SYSCALL_END_BLOCKED: (0, RUNNABLE, -1, -1),
    m.EV_GO_STATUS: (1, 0, -1, -1),
    m.EV_GO_STATUS_STACK: (1, 0, -1, 3),
}
PROC_CODES = frozenset((m.EV_PROC_START, m.EV_PROC_STOP, m.EV_PROC_STEAL, m.EV_PROC_STATUS))
PROC_STATUS_RUNS = {PROC_RUNNING: True, PROC_SYSCALL: True, PROC_IDLE: False, PROC_SYSCALL_ABANDONED: False}
RANGE_CODES = frozenset(
    (
        m.EV_GC_BEGIN,
        m.EV_GC_ACTIVE,
        m.EV_GC_END,
        m.EV_STW_BEGIN,
        m.EV_STW_END,
        m.EV_GC_MARK_ASSIST_BEGIN,
        m.EV_GC_MARK_ASSIST_ACTIVE,
        m.EV_GC_MARK_ASSIST_END,
        m.EV_USER_REGION_BEGIN,
        m.EV_USER_REGION_END,
        m.EV_USER_TASK_BEGIN,
        m.EV_USER_TASK_END,
    )
)

# An open span: [kind, resource kind, resource id, start, start stack, start
# tables, reason, name, task name, task, flags, seq, proc, fix, dep, state]:
# fix and dep (split mode) index the record of the span's first touch or
# origin and of the name it took from before the generation, + 1 (0: none);
# state is a goroutine state span's state.
_KIND, _RKIND, _RID, _START, _STACK, _TOK, _REASON, _NAME, _TNAME, _TASK, _FLAGS, _SEQ, _PROC, _FIX, _DEP, _STATE = (
    range(16)
)
Open = list[int]
# An open span's task and seq where export gives them (after where and key).
OPEN_TASK, OPEN_SEQ = _TASK, _SEQ

# Where an open span is kept (export and load): its map, keyed by goroutine,
# task or P (regions: one entry per region, innermost last).
IN_STATES, IN_ASSISTS, IN_TASKS, IN_PROCS, IN_REGIONS, IN_GC, IN_STW = range(7)

# Split mode's records: (type, what, key, depth, batch, row); batch and row
# are where the span the record is about was emitted (-1: still open, or
# no span). What each says is in spans/join.py.
FT_G, FT_P, FT_GC, FT_STW, FT_MA, FT_TASK, FT_REGPOP, DEP_REGION, DEP_TASK, ORIGIN = range(10)
BEGIN, ACTIVE, END = 0, 1, 2
Fix = list[int]


def _signed(v: int) -> int:
    """A goroutine id argument (uint64) as the goroutine columns hold one."""
    return v - (1 << 64) if v >= 1 << 63 else v


def _check_follow(flags: int) -> None:
    if int(flags) & ~int(Follow.ALL):
        only = f"{Follow.GOROUTINES:d} (goroutines), {Follow.PROCS:d} (Ps) and {Follow.LOGS:d} (logs)"
        raise ValueError(f"follow flags {flags}: only {only}")


class SpanCore:
    """Open spans across batches and generations; ``feed`` returns the
    spans that ended, as columns."""

    def __init__(self, split: bool = False, follow: int = Follow.ALL, events: int = 0) -> None:
        # (events: the compiled core's hint for the room it reserves; a list needs none.)
        _check_follow(follow)
        self.split = split
        self.follow = int(follow)
        self.fixes: list[Fix] = []
        self.touched_g: set[int] = set()
        self.touched_p: set[int] = set()
        self.touched_ma: set[int] = set()
        self.touched_task: set[int] = set()
        self.touched_gc = self.touched_stw = False
        # goroutine -> [regions it ended that began before the generation, whether its exit cleared them]
        self.region_pops: dict[int, list[int]] = {}
        self.touches: list[int] = []  # indexes of the records not found through deps
        self.deps: dict[tuple[int, int], list[int]] = {}  # (DEP_REGION, goroutine) or (DEP_TASK, task) -> indexes
        self.task0 = False  # a span took task 0's name while task 0 was not seen
        self.nbatch = 0
        self.states: dict[int, Open] = {}  # goroutine -> its state's span (state appended)
        self.assists: dict[int, Open] = {}
        self.regions: dict[int, list[Open]] = {}  # goroutine -> open regions, innermost last
        self.tasks: dict[int, Open] = {}
        self.procs: dict[int, Open] = {}  # P -> its running span
        self.gc: Open | None = None
        self.stw: Open | None = None
        self.seq = 0
        self.origin = -1  # time of the first event since the start or the last gap
        self.last = 0  # time of the last event
        self._token = -1
        self._cache: dict[int, int] = {}  # string id of the current tables -> name id
        # What the batch being fed refers to.
        self._out: list[list[int]] = []
        self._strings: dict[int, bytes] = {}
        self._intern: dict[bytes, int] = {}  # what names holds -> its id
        self._known = 0  # how many of names _intern has seen
        self._names: list[bytes] = []
        self._extra_strings: list[bytes] = []

    def gap(self) -> None:
        """Forget every open span: their ends, if they come, are after a
        stretch of the trace that was lost."""
        self.states.clear()
        self.assists.clear()
        self.regions.clear()
        self.tasks.clear()
        self.procs.clear()
        self.gc = self.stw = None
        self.origin = -1

    def _open_spans(self) -> list[Open]:
        opens = [*self.states.values(), *self.assists.values(), *self.tasks.values(), *self.procs.values()]
        opens += [r for rs in self.regions.values() for r in rs]
        return opens + [o for o in (self.gc, self.stw) if o is not None]

    def min_tables(self) -> int:
        """The oldest tables key an open span refers to (-1: none)."""
        return min((o[_TOK] for o in self._open_spans()), default=-1)

    def open_stacks(self) -> list[tuple[int, int]]:
        """(tables key, start stack id) of every open span."""
        return [(o[_TOK], o[_STACK]) for o in self._open_spans()]

    def open_counts(self) -> list[int]:
        """How many spans are open, by span kind."""
        counts = [0] * len(SpanKind)
        for o in self._open_spans():
            counts[o[_KIND]] += 1
        return counts

    def _intern_bytes(self, s: bytes) -> int:
        nid = self._intern.get(s)
        if nid is None:
            nid = self._intern[s] = len(self._names)
            self._names.append(s)
            self._known += 1
        return nid

    def _sync_names(self, names: list[bytes]) -> None:
        """Know the ids of what names holds: others may have appended to it."""
        if names is not self._names:
            self._names, self._intern, self._known = names, {}, 0
        for i in range(self._known, len(names)):
            self._intern.setdefault(names[i], i)
        self._known = len(names)

    def _name(self, sid: int) -> int:
        """The name id of string sid of the batch's tables (0: it has none)."""
        nid = self._cache.get(sid)
        if nid is None:
            nid = self._cache[sid] = self._intern_bytes(self._strings.get(sid, b""))
        return nid

    def _fix(self, kind: int, what: int, key: int, depth: int = 0) -> int:
        self.fixes.append([kind, what, key, depth, -1, -1])
        n = len(self.fixes)
        if kind in (DEP_REGION, DEP_TASK):
            self.deps.setdefault((kind, key), []).append(n - 1)
        else:
            self.touches.append(n - 1)
        return n

    def _pops(self, g: int) -> list[int]:
        return self.region_pops.setdefault(g, [0, 0])

    def _region_dep(self, g: int) -> int:
        """Split mode, a span opened on goroutine g with none of its regions
        begun in the generation: its names may come from one begun before."""
        pops = self.region_pops.get(g)
        if pops is None:
            return self._fix(DEP_REGION, 0, g, 0)
        return 0 if pops[1] else self._fix(DEP_REGION, 0, g, pops[0])

    def _emit(self, o: Open, end: int, end_stack: int, end_tok: int, flags: int = 0) -> None:
        for f in (o[_FIX], o[_DEP]):
            if f:
                self.fixes[f - 1][4:] = [self.nbatch, len(self._out[0])]
        row = (o[_KIND], o[_RKIND], o[_RID], o[_START], end, o[_STACK], end_stack, o[_TOK], end_tok)
        rest = (o[_REASON], o[_NAME], o[_TNAME], o[_TASK], o[_FLAGS] | flags, o[_PROC])
        for col, v in zip(self._out, (*row, *rest), strict=True):
            col.append(v)

    def _opened(self, kind: int, rkind: int, rid: int, t: int, stack: int, flags: int, task: int = 0) -> Open:
        self.seq += 1
        tk = self.tasks.get(task)
        o = [kind, rkind, rid, t, stack, self._token, 0, 0, tk[_NAME] if tk else 0, task, flags, self.seq, -1, 0, 0, 0]
        if tk is None and self.split and task not in self.touched_task:
            if task:
                o[_DEP] = self._fix(DEP_TASK, 0, task)
            else:
                self.task0 = True
        return o

    def _columns(self) -> list[bytes]:
        kind = bytearray if self.split else bytes
        out = [kind(array(tc, col)) for col, (_, tc) in zip(self._out, COLUMNS, strict=True)]
        self._out = []
        self.nbatch += 1
        return out  # type: ignore[return-value]  # bytearrays in split mode: the join patches them

    def feed(
        self,
        codes_col: memoryview,
        times_col: memoryview,
        procs_col: memoryview,
        goroutines_col: memoryview,
        args_col: memoryview,
        extra_col: memoryview,
        token: int,
        strings: dict[int, bytes],
        extra_strings: list[bytes],
        names: list[bytes],
    ) -> list[bytes]:
        codes: list[int] = codes_col.tolist()
        times: list[int] = times_col.tolist()
        procs: list[int] = procs_col.tolist()
        goroutines: list[int] = goroutines_col.tolist()
        args: list[int] = args_col.tolist()
        extra: list[int] = extra_col.tolist()
        if token != self._token:
            self._token, self._cache = token, {}
        self._out = [[] for _ in COLUMNS]
        self._strings = strings
        self._sync_names(names)
        self._extra_strings = extra_strings
        if codes and self.origin < 0:
            self.origin = times[0]
        states, ps = self.follow & Follow.GOROUTINES, self.follow & Follow.PROCS
        for i, code in enumerate(codes):
            t = times[i]
            self.last = t
            if code in TRANSITIONS:
                if states:
                    self._transition(code, t, procs[i], goroutines[i], args[i * NARGS : i * NARGS + NARGS])
                else:
                    self._exit_only(code, t, goroutines[i], args[i * NARGS])
            elif code in PROC_CODES:
                if ps:
                    self._proc(code, t, procs[i], args[i * NARGS : i * NARGS + NARGS])
            elif code in RANGE_CODES:
                self._range(code, t, goroutines[i], args[i * NARGS : i * NARGS + NARGS], extra[i * NEXTRA + 1])
        return self._columns()

    def _transition(self, code: int, t: int, p: int, g: int, a: list[int]) -> None:
        whose, new, reason_arg, stack_arg = TRANSITIONS[code]
        gid = _signed(a[0]) if whose else g
        if not new:
            if not 0 < a[2] < len(STATUS_STATE):
                return
            new = STATUS_STATE[a[2]]
        stack = a[stack_arg] if stack_arg >= 0 else 0
        st = self.states.get(gid)
        first = 0
        if st is not None:
            if st[_STATE] == new:
                return
            self._emit(st, t, stack, self._token)
            del self.states[gid]
        elif self.split and gid not in self.touched_g:
            self.touched_g.add(gid)
            first = self._fix(FT_G, new, gid)
        if new == NOT_EXIST:
            self._exit(gid, t)
            return
        clipped = SPAN_CLIPPED_START if st is None and code in (m.EV_GO_STATUS, m.EV_GO_STATUS_STACK) else 0
        regs = self.regions.get(gid)
        inner = regs[-1] if regs else None
        o = self._opened(STATE_KIND[new], RES_GOROUTINE, gid, t, stack, clipped, inner[_TASK] if inner else 0)
        o[_FIX] = first
        if inner is not None:
            o[_NAME], o[_TNAME] = inner[_NAME], inner[_TNAME]
            dep = self.fixes[inner[_DEP] - 1] if inner[_DEP] else None
            o[_DEP] = self._fix(*dep[:4]) if dep else 0
        elif self.split:
            o[_DEP] = self._region_dep(gid)
        if reason_arg >= 0:
            o[_REASON] = self._name(a[reason_arg])
        if new == RUNNING:
            o[_PROC] = p
        o[_STATE] = new
        self.states[gid] = o

    def _exit(self, gid: int, t: int) -> None:
        """Goroutine gid exits: the regions it left open end with it, as Go's goroutine analysis ends them."""
        for o in reversed(self.regions.pop(gid, [])):
            self._emit(o, t, 0, self._token, SPAN_CLIPPED_END)
        if self.split:
            self._pops(gid)[1] = 1

    def _exit_only(self, code: int, t: int, g: int, arg0: int) -> None:
        """A transition where goroutines' states are not followed: only an exit matters, to the regions."""
        whose, new, _, _ = TRANSITIONS[code]
        if new == NOT_EXIST:
            self._exit(_signed(arg0) if whose else g, t)

    def widen(self, more: int) -> int:
        """Follow these too (:class:`Follow` flags) from now on; the flags now followed."""
        _check_follow(more)
        self.follow |= int(more)
        return self.follow

    def _proc(self, code: int, t: int, p: int, a: list[int]) -> None:
        if code == m.EV_PROC_STOP:
            pid, runs = p, False
        elif code == m.EV_PROC_STATUS:
            pid = _signed(a[0])
            if a[1] not in PROC_STATUS_RUNS:
                return
            runs = PROC_STATUS_RUNS[a[1]]
        else:
            pid, runs = _signed(a[0]), code == m.EV_PROC_START
        o = self.procs.get(pid)
        first = 0
        if o is None and self.split and pid not in self.touched_p:
            self.touched_p.add(pid)
            first = self._fix(FT_P, runs, pid)
        if runs and o is None:
            clipped = SPAN_CLIPPED_START if code == m.EV_PROC_STATUS else 0
            o = self.procs[pid] = self._opened(SpanKind.RUNNING, RES_PROC, pid, t, 0, clipped)
            o[_PROC], o[_FIX] = pid, first
        elif not runs and o is not None:
            self._emit(o, t, 0, self._token)
            del self.procs[pid]

    def _first_gc(self, what: int) -> int:
        """Split mode: the record of the generation's first GC event."""
        if not self.split or self.touched_gc:
            return 0
        self.touched_gc = True
        return self._fix(FT_GC, what, 0)

    def _first_stw(self, what: int) -> int:
        if not self.split or self.touched_stw:
            return 0
        self.touched_stw = True
        return self._fix(FT_STW, what, 0)

    def _first_of(self, touched: set[int], kind: int, what: int, key: int) -> int:
        if not self.split or key in touched:
            return 0
        touched.add(key)
        return self._fix(kind, what, key)

    def _unbegun(self, kind: int, g: int, name: int, task: int) -> Open:
        """A region or task that ends with its begin unseen (before the
        trace, a gap, or, split, the generation): clipped, from the origin."""
        rkind = RES_NONE if kind == SpanKind.TASK else RES_GOROUTINE
        o = self._opened(kind, rkind, g, self.origin, 0, SPAN_CLIPPED_START, task)
        o[_NAME] = name
        return o

    def _range(self, code: int, t: int, g: int, a: list[int], extra_name: int) -> None:
        tok = self._token
        if code == m.EV_GC_BEGIN or (code == m.EV_GC_ACTIVE and self.gc is None):
            active = code == m.EV_GC_ACTIVE
            first = self._first_gc(ACTIVE if active else BEGIN)
            self.gc = self._opened(SpanKind.GC, RES_NONE, 0, t, 0 if active else a[1], SPAN_CLIPPED_START * active)
            self.gc[_FIX] = first * active
        elif code == m.EV_GC_END:
            if self.gc is not None:
                self._emit(self.gc, t, 0, tok)
                self.gc = None
            else:
                self._first_gc(END)
        elif code == m.EV_STW_BEGIN:
            self._first_stw(BEGIN)
            self.stw = self._opened(SpanKind.STW, RES_GOROUTINE, g, t, a[1], 0)
            self.stw[_REASON] = self._name(a[0])
        elif code == m.EV_STW_END:
            if self.stw is not None:
                self._emit(self.stw, t, 0, tok)
                self.stw = None
            else:
                self._first_stw(END)
        elif code in (m.EV_GC_MARK_ASSIST_BEGIN, m.EV_GC_MARK_ASSIST_ACTIVE):
            active = code == m.EV_GC_MARK_ASSIST_ACTIVE
            gid = _signed(a[0]) if active else g
            if not (active and gid in self.assists):
                first = 0 if gid in self.assists else self._first_of(self.touched_ma, FT_MA, active, gid)
                stack, flags = (0, SPAN_CLIPPED_START) if active else (a[0], 0)
                assist = self.assists[gid] = self._opened(SpanKind.MARK_ASSIST, RES_GOROUTINE, gid, t, stack, flags)
                assist[_FIX] = first * active
        elif code == m.EV_GC_MARK_ASSIST_END:
            o = self.assists.pop(g, None)
            if o is not None:
                self._emit(o, t, 0, tok)
            else:
                self._first_of(self.touched_ma, FT_MA, END, g)
        elif code == m.EV_USER_REGION_BEGIN:
            o = self._opened(SpanKind.REGION, RES_GOROUTINE, g, t, a[2], 0, a[0])
            o[_NAME] = self._name(a[1])
            self.regions.setdefault(g, []).append(o)
        elif code == m.EV_USER_REGION_END:
            regs = self.regions.get(g)
            if regs:
                o = regs.pop()
            else:  # begun before the trace or a gap
                o = self._unbegun(SpanKind.REGION, g, self._name(a[1]), a[0])
                if self.split:
                    pops = self._pops(g)
                    o[_FIX] = self._fix(ORIGIN, 0, g) if pops[1] else self._fix(FT_REGPOP, 0, g, pops[0])
                    pops[0] += not pops[1]
            self._emit(o, t, a[2], tok)
        elif code == m.EV_USER_TASK_BEGIN:
            if a[0] not in self.tasks:
                self._first_of(self.touched_task, FT_TASK, BEGIN, a[0])
            o = self._opened(SpanKind.TASK, RES_NONE, 0, t, a[3], 0, a[0])
            o[_NAME] = o[_TNAME] = self._name(a[2])
            o[_DEP] = 0
            self.tasks[a[0]] = o
        elif code == m.EV_USER_TASK_END:
            o = self.tasks.pop(a[0], None)
            if o is None:  # begun before the trace or a gap: its type is the end's
                es = self._extra_strings
                o = self._unbegun(SpanKind.TASK, 0, 0, a[0])
                o[_NAME] = o[_TNAME] = self._intern_bytes(es[extra_name] if extra_name < len(es) else b"")
                o[_DEP] = 0
                if self.split:
                    o[_FIX] = self._first_of(self.touched_task, FT_TASK, END, a[0]) or self._fix(ORIGIN, 0, 0)
            self._emit(o, t, a[1], tok)

    def export(self) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]], bool, int, int, int]:
        """Split mode, after the generation's last batch: the open spans
        ((where, key, *fields, region depth), fields as the Open list holds
        them, regions outermost first; region depth: the span's names may be
        those of the region this deep below its goroutine's first from
        before, -1 not), the records of first touches and origins
        ((index, type, what, key, depth, batch, row)), whether a span took
        task 0's name unseen, the origin, the last time and the last seq."""
        out = self._exported
        opens = [out(IN_STATES, k, o) for k, o in self.states.items()]
        opens += [out(IN_ASSISTS, k, o) for k, o in self.assists.items()]
        opens += [out(IN_TASKS, k, o) for k, o in self.tasks.items()]
        opens += [out(IN_PROCS, k, o) for k, o in self.procs.items()]
        opens += [out(IN_REGIONS, k, o) for k, rs in self.regions.items() for o in rs]
        opens += [out(IN_GC, 0, self.gc)] if self.gc is not None else []
        opens += [out(IN_STW, 0, self.stw)] if self.stw is not None else []
        touches = [(i, *self.fixes[i]) for i in self.touches]
        return opens, touches, self.task0, self.origin, self.last, self.seq

    def _exported(self, where: int, key: int, o: Open) -> tuple[int, ...]:
        dep = self.fixes[o[_DEP] - 1] if o[_DEP] else None
        if dep is not None and dep[0] == DEP_REGION:
            return (where, key, *o[:_DEP], 0, o[_STATE], dep[3])
        return (where, key, *o, -1)

    def region_meta(self, g: int) -> tuple[int, int, list[tuple[int, int, int]]]:
        """Split mode: how many regions goroutine g ended that began before
        the generation, whether its exit ended the rest, and (depth, batch,
        row) of the spans emitted whose names may be those of the region
        that deep below the first of those."""
        pops = self.region_pops.get(g, [0, 0])
        deps = [self.fixes[i] for i in self.deps.get((DEP_REGION, g), ())]
        return pops[0], pops[1], [(f[3], f[4], f[5]) for f in deps if f[4] >= 0]

    def regions_ended(self, g: int) -> tuple[int, int]:
        """region_meta's first two, without its rows."""
        pops = self.region_pops.get(g, [0, 0])
        return pops[0], pops[1]

    def task_deps(self, task: int) -> list[tuple[int, ...]]:
        """Split mode: the records of the spans that took task's name
        while the generation had not seen it begin or end."""
        return [(i, *self.fixes[i]) for i in self.deps.get((DEP_TASK, task), ())]

    def load(self, opens: list[tuple[int, ...]], origin: int, last: int, seq: int) -> None:
        """The state of a builder (open spans as export gives them, names
        as this builder's ids) to go on from."""
        self.gap()
        for where, key, *f in opens:
            o = list(f[:-1])  # (not the region depth)
            o[_FIX] = o[_DEP] = 0
            if where == IN_STATES:
                self.states[key] = o
            elif where == IN_ASSISTS:
                self.assists[key] = o
            elif where == IN_TASKS:
                self.tasks[key] = o
            elif where == IN_PROCS:
                self.procs[key] = o
            elif where == IN_REGIONS:
                self.regions.setdefault(key, []).append(o)
            elif where == IN_GC:
                self.gc = o
            else:
                self.stw = o
        self.origin, self.last, self.seq = origin, last, seq

    def close(self) -> list[bytes]:
        """Every span still open, cut at the last event, in the order they
        began; the core is then empty."""
        self._out = [[] for _ in COLUMNS]
        for o in sorted(self._open_spans(), key=lambda o: o[_SEQ]):
            self._emit(o, max(self.last, o[_START]), 0, o[_TOK], SPAN_CLIPPED_END)
        self.gap()
        return self._columns()
