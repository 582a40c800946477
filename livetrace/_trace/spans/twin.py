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
# tables, reason, name, task name, task, flags, seq, proc]; a goroutine's
# state span also carries its state last.
_KIND, _RKIND, _RID, _START, _STACK, _TOK, _REASON, _NAME, _TNAME, _TASK, _FLAGS, _SEQ, _PROC = range(13)
Open = list[int]


def _signed(v: int) -> int:
    """A goroutine id argument (uint64) as the goroutine columns hold one."""
    return v - (1 << 64) if v >= 1 << 63 else v


class SpanCore:
    """Open spans across batches and generations; ``feed`` returns the
    spans that ended, as columns."""

    def __init__(self) -> None:
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
        self._intern: dict[bytes, int] = {}
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
        return nid

    def _name(self, sid: int) -> int:
        """The name id of string sid of the batch's tables (0: it has none)."""
        nid = self._cache.get(sid)
        if nid is None:
            nid = self._cache[sid] = self._intern_bytes(self._strings.get(sid, b""))
        return nid

    def _emit(self, o: Open, end: int, end_stack: int, end_tok: int, flags: int = 0) -> None:
        row = (o[_KIND], o[_RKIND], o[_RID], o[_START], end, o[_STACK], end_stack, o[_TOK], end_tok)
        rest = (o[_REASON], o[_NAME], o[_TNAME], o[_TASK], o[_FLAGS] | flags, o[_PROC])
        for col, v in zip(self._out, (*row, *rest), strict=True):
            col.append(v)

    def _opened(self, kind: int, rkind: int, rid: int, t: int, stack: int, flags: int, task: int = 0) -> Open:
        self.seq += 1
        tname = self.tasks[task][_NAME] if task in self.tasks else 0
        return [kind, rkind, rid, t, stack, self._token, 0, 0, tname, task, flags, self.seq, -1]

    def _columns(self) -> list[bytes]:
        out = [array(tc, col).tobytes() for col, (_, tc) in zip(self._out, COLUMNS, strict=True)]
        self._out = []
        return out

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
        intern: dict[bytes, int],
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
        self._strings, self._intern, self._names = strings, intern, names
        self._extra_strings = extra_strings
        if codes and self.origin < 0:
            self.origin = times[0]
        for i, code in enumerate(codes):
            t = times[i]
            self.last = t
            if code in TRANSITIONS:
                self._transition(code, t, procs[i], goroutines[i], args[i * NARGS : i * NARGS + NARGS])
            elif code in PROC_CODES:
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
        if st is not None:
            if st[-1] == new:
                return
            self._emit(st, t, stack, self._token)
            del self.states[gid]
        if new == NOT_EXIST:
            # Regions it left open end with it, as Go's goroutine analysis ends them.
            for o in reversed(self.regions.pop(gid, [])):
                self._emit(o, t, 0, self._token, SPAN_CLIPPED_END)
            return
        clipped = SPAN_CLIPPED_START if st is None and code in (m.EV_GO_STATUS, m.EV_GO_STATUS_STACK) else 0
        regs = self.regions.get(gid)
        inner = regs[-1] if regs else None
        o = self._opened(STATE_KIND[new], RES_GOROUTINE, gid, t, stack, clipped, inner[_TASK] if inner else 0)
        if inner is not None:
            o[_NAME], o[_TNAME] = inner[_NAME], inner[_TNAME]
        if reason_arg >= 0:
            o[_REASON] = self._name(a[reason_arg])
        if new == RUNNING:
            o[_PROC] = p
        o.append(new)
        self.states[gid] = o

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
        if runs and o is None:
            clipped = SPAN_CLIPPED_START if code == m.EV_PROC_STATUS else 0
            o = self.procs[pid] = self._opened(SpanKind.RUNNING, RES_PROC, pid, t, 0, clipped)
            o[_PROC] = pid
        elif not runs and o is not None:
            self._emit(o, t, 0, self._token)
            del self.procs[pid]

    def _range(self, code: int, t: int, g: int, a: list[int], extra_name: int) -> None:
        tok = self._token
        if code == m.EV_GC_BEGIN or (code == m.EV_GC_ACTIVE and self.gc is None):
            active = code == m.EV_GC_ACTIVE
            self.gc = self._opened(SpanKind.GC, RES_NONE, 0, t, 0 if active else a[1], SPAN_CLIPPED_START * active)
        elif code == m.EV_GC_END and self.gc is not None:
            self._emit(self.gc, t, 0, tok)
            self.gc = None
        elif code == m.EV_STW_BEGIN:
            self.stw = self._opened(SpanKind.STW, RES_GOROUTINE, g, t, a[1], 0)
            self.stw[_REASON] = self._name(a[0])
        elif code == m.EV_STW_END and self.stw is not None:
            self._emit(self.stw, t, 0, tok)
            self.stw = None
        elif code in (m.EV_GC_MARK_ASSIST_BEGIN, m.EV_GC_MARK_ASSIST_ACTIVE):
            active = code == m.EV_GC_MARK_ASSIST_ACTIVE
            gid = _signed(a[0]) if active else g
            if not (active and gid in self.assists):
                stack, flags = (0, SPAN_CLIPPED_START) if active else (a[0], 0)
                self.assists[gid] = self._opened(SpanKind.MARK_ASSIST, RES_GOROUTINE, gid, t, stack, flags)
        elif code == m.EV_GC_MARK_ASSIST_END:
            o = self.assists.pop(g, None)
            if o is not None:
                self._emit(o, t, 0, tok)
        elif code == m.EV_USER_REGION_BEGIN:
            o = self._opened(SpanKind.REGION, RES_GOROUTINE, g, t, a[2], 0, a[0])
            o[_NAME] = self._name(a[1])
            self.regions.setdefault(g, []).append(o)
        elif code == m.EV_USER_REGION_END:
            regs = self.regions.get(g)
            if regs:
                o = regs.pop()
            else:  # begun before the trace or a gap
                o = self._opened(SpanKind.REGION, RES_GOROUTINE, g, self.origin, 0, SPAN_CLIPPED_START, a[0])
                o[_NAME] = self._name(a[1])
            self._emit(o, t, a[2], tok)
        elif code == m.EV_USER_TASK_BEGIN:
            o = self._opened(SpanKind.TASK, RES_NONE, 0, t, a[3], 0, a[0])
            o[_NAME] = o[_TNAME] = self._name(a[2])
            self.tasks[a[0]] = o
        elif code == m.EV_USER_TASK_END:
            o = self.tasks.pop(a[0], None)
            if o is None:  # begun before the trace or a gap: its type is the end's
                o = self._opened(SpanKind.TASK, RES_NONE, 0, self.origin, 0, SPAN_CLIPPED_START, a[0])
                es = self._extra_strings
                o[_NAME] = o[_TNAME] = self._intern_bytes(es[extra_name] if extra_name < len(es) else b"")
            self._emit(o, t, a[1], tok)

    def close(self) -> list[bytes]:
        """Every span still open, cut at the last event, in the order they
        began; the core is then empty."""
        self._out = [[] for _ in COLUMNS]
        for o in sorted(self._open_spans(), key=lambda o: o[_SEQ]):
            self._emit(o, max(self.last, o[_START]), 0, o[_TOK], SPAN_CLIPPED_END)
        self.gap()
        return self._columns()
