"""The logs of tasks and regions, followed beside the span core (both
twins): rare events, found with a byte search rather than a per-event loop.
It follows region begins and ends, and goroutine exits while regions are
open, by the same rules as the core, so that the k-th region span the core
emits is the k-th region this side saw end.

Split (one generation on its own, ``spans/join.py``), a task or region
that began before the generation is unknown here: logs for a task not seen
begin wait in ``pending_tasks``, logs on a goroutine that may have regions
from before in ``pending_regions``, and the end of such a task or region is
a :class:`Prior` for the join to resolve.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.model.batch import NARGS
from livetrace._trace.spans.model import MAX_SPAN_LOGS
from livetrace._trace.spans.twin import IN_REGIONS, IN_TASKS, OPEN_SEQ, OPEN_TASK
from livetrace._trace.spec.modern import (
    EV_GO_DESTROY,
    EV_GO_DESTROY_SYSCALL,
    EV_USER_LOG,
    EV_USER_REGION_BEGIN,
    EV_USER_REGION_END,
    EV_USER_TASK_BEGIN,
    EV_USER_TASK_END,
)


def _any_of(*codes: int) -> bytes:
    """A bytes.translate table: 1 for each of the codes, 0 for the rest."""
    return bytes(1 if c in codes else 0 for c in range(256))


_USER = (EV_USER_TASK_BEGIN, EV_USER_TASK_END, EV_USER_LOG, EV_USER_REGION_BEGIN, EV_USER_REGION_END)
_USER_EVENTS = _any_of(*_USER)
_USER_EVENTS_OR_EXITS = _any_of(*_USER, EV_GO_DESTROY, EV_GO_DESTROY_SYSCALL)
_REGION_BEGIN = bytes([EV_USER_REGION_BEGIN])
Log = tuple[bytes, bytes]
Logs = list[Log]
Region = tuple[int, int, Logs]  # an open region: its task, its begin order, its logs


@dataclass
class Prior:
    """Split mode: the logs of a span that began before the generation:
    task ``key``'s (``pending``: those logged in the generation), or the
    region of goroutine ``key`` that was ``depth`` regions below the top of
    its stack at the generation's start."""

    key: int
    depth: int = -1
    pending: Logs = field(default_factory=list)


def _follow_open(logs: UserLogs | CompiledUserLogs, opens: list[tuple[int, ...]]) -> None:
    """Both twins' follow_open: the tasks and regions open in a span core
    (``opens``, its export's), each with no logs, and the regions' order
    counted on from the greatest among them."""
    tasks: dict[int, Logs] = {key: [] for where, key, *_ in opens if where == IN_TASKS}
    regions: dict[int, list[Region]] = {}
    seq = 0
    for where, key, *f in opens:  # (each goroutine's outermost first)
        if where == IN_REGIONS:
            regions.setdefault(key, []).append((f[OPEN_TASK], f[OPEN_SEQ], []))
            seq = max(seq, f[OPEN_SEQ])
    logs.tasks, logs.regions = tasks, regions
    logs.seq = max(logs.seq, seq)
    logs.following = True


class UserLogs:
    """The scan in Python, the twin of :class:`CompiledUserLogs`.
    ``following`` False: the logs are not followed (a builder that does
    not follow Follow.LOGS), and a scan finds none, until :meth:`follow_open`."""

    def __init__(self, *, split: bool = False, following: bool = True) -> None:
        self.split = split
        self.following = following
        self.tasks: dict[int, Logs] = {}  # open task -> its logs
        self.regions: dict[int, list[Region]] = {}  # goroutine -> its open regions, innermost last
        self.seq = 0
        # Split mode only:
        self.touched: set[int] = set()  # tasks begun or ended in the generation
        self.pending_tasks: dict[int, Logs] = {}
        self.pops: dict[int, list[int]] = {}  # goroutine -> [regions from before ended, exited]
        self.pending_regions: dict[int, list[tuple[int, int, Log]]] = {}  # goroutine -> (pops, task, log)

    def clear(self) -> None:
        self.tasks.clear()
        self.regions.clear()

    def follow_open(self, opens: list[tuple[int, ...]]) -> None:
        """Follow the logs from now on, of the tasks and regions open in a
        span core (``opens``, its export's): their logs so far are not
        known, so each starts with none, and the regions the core ends are
        those this side ends, one for one."""
        _follow_open(self, opens)

    def scan(
        self, codes: memoryview, goroutines: memoryview, args: memoryview, strings: dict[int, bytes]
    ) -> tuple[dict[int, Logs | Prior], list[Logs | Prior]]:
        """Follow a batch's tasks, regions and logs: the logs of the tasks
        that end in it, by task id, and of the regions that end in it, in
        the order the core ends them."""
        if not self.following:
            return {}, []
        ended_tasks: dict[int, Logs | Prior] = {}
        ended_regions: list[Logs | Prior] = []
        raw = codes.tobytes()
        regions, split = self.regions, self.split
        # Goroutine exits matter only while a region is open (split: or may be).
        exits = regions or _REGION_BEGIN in raw or (split and bool(self.pops or self.pending_regions))
        # The codes marked in one pass (a table lookup a byte), then found with memchr: no
        # Python object for the events that are none of these.
        marked = raw.translate(_USER_EVENTS_OR_EXITS if exits else _USER_EVENTS)
        find = marked.find
        open_tasks = self.tasks
        i = find(1)
        while i >= 0:
            code, g, a0 = raw[i], goroutines[i], args[i * NARGS]
            if code == EV_USER_LOG:
                entry = (strings.get(args[i * NARGS + 1], b""), strings.get(args[i * NARGS + 2], b""))
                logs = open_tasks.get(a0)
                if logs is not None:
                    if len(logs) < MAX_SPAN_LOGS:
                        logs.append(entry)
                elif split and a0 not in self.touched:
                    self.pending_tasks.setdefault(a0, []).append(entry)
                for task, _, logs in regions.get(g, ()):
                    if task == a0 and len(logs) < MAX_SPAN_LOGS:
                        logs.append(entry)
                if split:
                    pops = self.pops.get(g, [0, 0])
                    if not pops[1]:
                        self.pending_regions.setdefault(g, []).append((pops[0], a0, entry))
            elif code == EV_USER_REGION_BEGIN:
                self.seq += 1
                regions.setdefault(g, []).append((a0, self.seq, []))
            elif code == EV_USER_REGION_END:
                stack = regions.get(g)
                if stack:
                    ended_regions.append(stack.pop()[2])
                    if not stack:
                        del regions[g]
                elif split and not self.pops.get(g, [0, 0])[1]:
                    pops = self.pops.setdefault(g, [0, 0])
                    ended_regions.append(Prior(g, pops[0]))
                    pops[0] += 1
                else:
                    ended_regions.append([])  # none open: the core clips one
            elif code == EV_USER_TASK_BEGIN:
                open_tasks[a0] = []
                if split:
                    self.touched.add(a0)
                    self.pending_tasks.pop(a0, None)
            elif code == EV_USER_TASK_END:
                got = open_tasks.pop(a0, None)
                if got is not None or not split or a0 in self.touched:
                    ended_tasks[a0] = got or []
                else:
                    ended_tasks[a0] = Prior(a0, -1, self.pending_tasks.pop(a0, []))
                if split:
                    self.touched.add(a0)
            else:  # a goroutine's exit ends its open regions, innermost first
                ended = regions.pop(g, None)
                if ended:
                    ended_regions.extend(r[2] for r in reversed(ended))
                if split and (g in self.pops or g in self.pending_regions):
                    # (Those it has no record of: the join finds any that mattered in the core's.)
                    self.pops.setdefault(g, [0, 0])[1] = 1
            i = find(1, i + 1)
        return ended_tasks, ended_regions


class CompiledUserLogs:
    """:class:`UserLogs` with its state and scan in the core
    (``ccore.UserLogsCore``): the same calls, and the same state to read
    and set, as the twin's dicts, made when asked (until the next scan or
    change: the join reads them many times over, once a generation). The
    dicts read are the state's copies (the lists in them its own): a
    change to them is set whole (``tasks``, ``regions``)."""

    def __init__(self, *, split: bool = False, following: bool = True) -> None:
        self.split = split
        self.following = following
        self._core = ccore.UserLogsCore(split, MAX_SPAN_LOGS, Prior)
        self._state: _State | None = None

    def _read(self) -> _State:
        if self._state is None:
            self._state = _State(*self._core.export())
        return self._state

    def clear(self) -> None:
        self._state = None
        self._core.clear()

    def follow_open(self, opens: list[tuple[int, ...]]) -> None:
        """As :meth:`UserLogs.follow_open`."""
        _follow_open(self, opens)

    def scan(
        self, codes: memoryview, goroutines: memoryview, args: memoryview, strings: dict[int, bytes]
    ) -> tuple[dict[int, Logs | Prior], list[Logs | Prior]]:
        """As :meth:`UserLogs.scan`."""
        if not self.following:
            return {}, []
        self._state = None
        tasks, regions = self._core.scan(codes, goroutines, args, strings)
        return tasks, regions

    @property
    def tasks(self) -> dict[int, Logs]:
        return self._read().tasks

    @tasks.setter
    def tasks(self, tasks: dict[int, Logs]) -> None:
        self._state = None
        self._core.set_tasks(tasks)

    @property
    def regions(self) -> dict[int, list[Region]]:
        return self._read().regions

    @regions.setter
    def regions(self, regions: dict[int, list[Region]]) -> None:
        self._state = None
        self._core.set_regions(regions)

    @property
    def seq(self) -> int:
        return int(self._core.seq)

    @seq.setter
    def seq(self, seq: int) -> None:
        self._core.seq = seq

    @property
    def touched(self) -> set[int]:
        return self._read().touched

    @property
    def pending_tasks(self) -> dict[int, Logs]:
        return self._read().pending_tasks

    @property
    def pops(self) -> dict[int, list[int]]:
        return self._read().pops

    @property
    def pending_regions(self) -> dict[int, list[tuple[int, int, Log]]]:
        return self._read().pending_regions


class _State(NamedTuple):
    """CompiledUserLogs' state as the twin holds it (UserLogsCore.export)."""

    tasks: dict[int, Logs]
    regions: dict[int, list[Region]]
    seq: int
    touched: set[int]
    pending_tasks: dict[int, Logs]
    pops: dict[int, list[int]]
    pending_regions: dict[int, list[tuple[int, int, Log]]]


def user_logs(
    *, split: bool = False, compiled: bool | None = None, following: bool = True
) -> UserLogs | CompiledUserLogs:
    """The logs' side of a span builder: ``compiled`` as for
    :func:`open_decoder` (the core's, or the twin); ``split``: a generation
    built on its own; ``following`` as for :class:`UserLogs`."""
    if use_compiled(compiled):
        return CompiledUserLogs(split=split, following=following)
    return UserLogs(split=split, following=following)
