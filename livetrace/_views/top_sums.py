"""What `top` adds up per span, from a SpanBatch's columns: the twin of
_ccore/views/top.c's TopSums (the compiled one), which
:class:`~livetrace._views.top.TopStats` drives. The rules (what counts, and
why) are TopStats's; this keeps the numbers:

- per span kind (GC, stop-the-world, mark assist, runnable), and per name
  id of the regions and tasks, the durations of the spans that ended (a
  batch's name ids are mapped through ``ids``, the caller's own ids of
  the names its table holds: a pool's batches each have a table);
- per goroutine, the time since ``since`` it spent running, runnable and
  in system calls, and blocked by reason id; :meth:`take` adds them up by
  the goroutines' name ids, in the order goroutines were first counted
  (so both twins give their groups in one order);
- per goroutine, the name id of its start function (``root_of(tables,
  stack)`` names a stack; ``name`` sets one from a creation) and the
  snapshot it was last seen in.

:meth:`take` hands over the sums and starts afresh; :meth:`forget` drops
the names of goroutines not seen for a while. Durations come sorted, with
their total.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable

from livetrace._trace.spans.model import RES_GOROUTINE, SpanKind

RootOf = Callable[[int, int], int]
Durations = tuple[bytes, int]  # sorted int64 durations, and their sum
# (name id, goroutines, running, runnable, syscall, [(reason id, blocked ns)])
GroupSums = tuple[int, int, int, int, int, list[tuple[int, int]]]
Taken = tuple[list[GroupSums], dict[int, Durations], dict[int, Durations], dict[int, Durations]]

# Goroutine names kept when more than this many: those seen lately.
KEEP_NAMES = 1024
# Root names kept by (tables, stack), past which they are forgotten (top.c's KEEP_ROOTS).
KEEP_ROOTS = 65536
_I64 = (-(1 << 63), 1 << 63)


def _name_id(ids: memoryview, v: int) -> int:
    if v >= len(ids):
        raise ValueError("a span's name id is past the name ids given")
    return int(ids[v])


def _durations(values: list[int]) -> Durations:
    values.sort()
    return array("q", values).tobytes(), sum(values)


class TopSums:
    def __init__(self) -> None:
        self._names: dict[int, tuple[int, int]] = {}  # goroutine -> (name id, snapshot last seen)
        self._roots: dict[int, int] = {}  # tables << 32 | stack -> root_of's name id
        self._reset()

    def _root(self, root_of: RootOf, tok: int, stack: int) -> int:
        """root_of(tok, stack) through the cache, as top.c's: asked once a
        stack, whatever it answers (an unnamed root, 0, too)."""
        cached = not stack >> 32
        key = tok << 32 | stack
        if cached:
            got = self._roots.get(key)
            if got is not None:
                return got
        name = root_of(tok, stack)
        if cached:
            if len(self._roots) >= KEEP_ROOTS:
                self._roots.clear()
            self._roots[key] = name
        return name

    def _reset(self) -> None:
        self._kinds: dict[int, list[int]] = {}
        self._regions: dict[int, list[int]] = {}
        self._tasks: dict[int, list[int]] = {}
        self._order: dict[int, None] = {}  # goroutines, as first counted
        self._per_g: dict[int, list[int]] = {}  # goroutine -> ns running, runnable, syscall
        self._blocked: dict[int, dict[int, int]] = {}  # goroutine -> reason id -> ns

    def name(self, g: int, name: int, index: int) -> None:
        """A creation in snapshot ``index`` names goroutine g."""
        self._names[g] = (name, index)

    def name_all(self, created: array[int], names: array[int], index: int) -> None:
        """Creations in snapshot ``index`` name goroutines: ``created[i]``
        (a u64 id, as a creation's argument holds it) ``names[i]`` (a u64;
        0: not named), in order."""
        gs, ns = memoryview(created).cast("B"), memoryview(names).cast("B")
        if len(gs) % 8 or len(gs) != len(ns):
            raise ValueError("name_all takes as many 8-byte names as 8-byte goroutine ids")
        for g, name in zip(gs.cast("Q"), ns.cast("Q"), strict=True):
            if name:
                self._names[g - (1 << 64) if g >> 63 else g] = (name, index)

    def feed(
        self,
        kinds: memoryview,
        resource_kinds: memoryview,
        resource_ids: memoryview,
        starts: memoryview,
        ends: memoryview,
        reasons: memoryview,
        names: memoryview,
        start_stacks: memoryview,
        end_stacks: memoryview,
        start_tables: memoryview,
        end_tables: memoryview,
        ids: memoryview,
        since: int | None,
        index: int,
        root_of: RootOf,
    ) -> None:
        seen, per_g, blocked, order = self._names, self._per_g, self._blocked, self._order
        if len(ids.cast("B")) % 4:
            raise ValueError("name ids are 4 bytes each")
        ids = ids.cast("B").cast("I")
        for k, rk, g, s, e, r, n, ss, es, st, et in zip(
            kinds,
            resource_kinds,
            resource_ids,
            starts,
            ends,
            reasons,
            names,
            start_stacks,
            end_stacks,
            start_tables,
            end_tables,
            strict=True,
        ):
            d = e - s
            if not _I64[0] <= d < _I64[1]:
                raise ValueError(f"a span from {s} to {e} lasts longer than int64 nanoseconds")
            if k > SpanKind.SYSCALL:  # a range: GC, stop-the-world, mark assist, region, task
                group = self._tasks if k == SpanKind.TASK else self._regions if k == SpanKind.REGION else self._kinds
                key = _name_id(ids, n) if k in (SpanKind.TASK, SpanKind.REGION) else k
                got = group.get(key)
                if got is None:
                    got = group[key] = []
                got.append(d)
                continue
            if rk != RES_GOROUTINE:  # a P's running span says nothing top shows
                continue
            if k == SpanKind.RUNNABLE:
                self._kinds.setdefault(k, []).append(d)
            # The goroutine's own stack: where it stopped running, or where it blocked or entered a syscall.
            own = es if k == SpanKind.RUNNING else ss if k != SpanKind.RUNNABLE else 0
            was = seen.get(g)
            if was is None or (own and not was[0]):
                seen[g] = (self._root(root_of, et if k == SpanKind.RUNNING else st, own) if own else 0, index)
            elif was[1] != index:
                seen[g] = (was[0], index)
            part = e - (s if since is None or s >= since else since)
            if part <= 0:
                continue
            order[g] = None
            if k == SpanKind.BLOCKED:
                reasons_of = blocked.get(g)
                if reasons_of is None:
                    reasons_of = blocked[g] = {}
                r = _name_id(ids, r)
                reasons_of[r] = reasons_of.get(r, 0) + part
            else:
                acc = per_g.get(g)
                if acc is None:
                    acc = per_g[g] = [0, 0, 0]
                acc[0 if k == SpanKind.RUNNING else 1 if k == SpanKind.RUNNABLE else 2] += part

    def take(self) -> Taken:
        """The sums since the last take: the goroutines' per name id (in the
        order the first of each was counted: each one's goroutines, and
        blocked reasons in the order first met), per span kind, per region
        name id, per task name id."""
        groups: dict[int, list[int]] = {}  # name id -> goroutines, running, runnable, syscall
        blocked: dict[int, dict[int, int]] = {}
        for g in self._order:
            name = self._names.get(g, (0, 0))[0]
            sums = groups.get(name)
            if sums is None:
                sums = groups[name] = [0, 0, 0, 0]
                blocked[name] = {}
            sums[0] += 1
            for k, ns in enumerate(self._per_g.get(g, (0, 0, 0))):
                sums[k + 1] += ns
            reasons = blocked[name]
            for r, ns in self._blocked.get(g, {}).items():
                reasons[r] = reasons.get(r, 0) + ns
        out = (
            [(name, n, run, ready, sys, list(blocked[name].items())) for name, (n, run, ready, sys) in groups.items()],
            {k: _durations(v) for k, v in self._kinds.items()},
            {k: _durations(v) for k, v in self._regions.items()},
            {k: _durations(v) for k, v in self._tasks.items()},
        )
        self._reset()
        return out

    def forget(self, old: int) -> None:
        """Names of goroutines last seen before snapshot ``old`` (most have
        exited: a service may start millions), when there are many."""
        if len(self._names) > KEEP_NAMES:
            self._names = {g: v for g, v in self._names.items() if v[1] >= old}
