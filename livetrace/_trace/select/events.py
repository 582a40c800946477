"""Choosing events by a :class:`Filter`, on a batch's columns.

The criteria that need no state (kinds, goroutines, procs, region types,
log categories, the stack regex) become, once per generation, a kind mask
per code and sets of ids; the compiled core (select.c) or its twin here
then tries each event with id lookups alone, and the kept events become a
sub-batch (:meth:`EventBatch.take`) without an Event object each. Tasks
need state: which task ids have a matching type, learnt from their
TaskBegin events. An :class:`EventSelector` keeps it for one stream of
batches, working through the few task events of each batch in order; only
those can pass a task filter, so they are the only candidates then. The
predicate, last, sees Event objects of the survivors only.
"""

from __future__ import annotations

import re
import threading
from array import array
from collections.abc import Collection, Iterable
from weakref import WeakKeyDictionary

from livetrace._items import Provisional
from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.model.batch import NARGS, NEXTRA, EventBatch, kind_mask
from livetrace._trace.model.events import KIND_OF_CODE, STACK_ARG, Kind
from livetrace._trace.model.tables import Tables
from livetrace._trace.select.filter import Filter
from livetrace._trace.select.match import extra_string_ids_matching, stack_ids_matching, string_ids_matching

ROLE_REGION, ROLE_LOG = 1, 2  # as select.c has them
NAME_ARG = 1  # a region's type, a log's category: the event's second argument
TASK_ARG = 0  # the task of a task, region or log event
TASK_NAME_ARG = 2  # a TaskBegin's type
TASK_END_TYPE_EXTRA = 1  # a TaskEnd's type: an index into its Tables' extra_strings
NO_STACK_ARG = 0xFF

ROLES = bytes(
    ROLE_REGION if k in (Kind.REGION_BEGIN, Kind.REGION_END) else ROLE_LOG if k == Kind.LOG else 0 for k in KIND_OF_CODE
)
STACK_ARG_TABLE = bytes(NO_STACK_ARG if a < 0 else a for a in STACK_ARG)
_TASKISH = (Kind.TASK_BEGIN, Kind.TASK_END, Kind.REGION_BEGIN, Kind.REGION_END, Kind.LOG)
# Finds the events a task filter can keep: a byte class of their codes.
_TASKISH_CODES = re.compile(
    b"[" + b"".join(re.escape(bytes([c])) for c, k in enumerate(KIND_OF_CODE) if k in _TASKISH) + b"]"
)


def _i64s(ids: Iterable[int]) -> array[int]:
    return array("q", sorted(ids))


def _u64s(ids: Iterable[int]) -> array[int]:
    return array("Q", sorted(ids))


def _maybe_u64s(ids: frozenset[int] | None) -> array[int] | None:
    return None if ids is None else _u64s(ids)


class _GenerationIds:
    """What a filter's names and regex match in one Tables."""

    __slots__ = ("arrays", "logs", "regions", "stacks", "task_names", "task_types")

    def __init__(self, flt: Filter, gen: Tables | None) -> None:
        empty: frozenset[int] = frozenset()

        def strings(globs: tuple[str, ...] | None) -> frozenset[int] | None:
            if globs is None:
                return None
            return empty if gen is None else string_ids_matching(gen, globs)

        self.regions = strings(flt.regions)
        self.logs = strings(flt.logs)
        self.task_names = strings(flt.tasks)
        self.task_types = (
            None if flt.tasks is None else empty if gen is None else extra_string_ids_matching(gen, flt.tasks)
        )
        self.stacks = None if flt.stack is None else empty if gen is None else stack_ids_matching(gen, flt.stack)
        # For the compiled core: the same sets as sorted arrays.
        self.arrays: tuple[array[int] | None, array[int] | None, array[int] | None] = (
            _maybe_u64s(self.regions),
            _maybe_u64s(self.logs),
            _maybe_u64s(self.stacks),
        )


class EventSelector:
    """Chooses the events of one stream of batches that a filter keeps.

    Feed it the stream's batches in order (:meth:`select`): it remembers
    which tasks have a type the filter's ``tasks`` names, from their
    TaskBegin events, and forgets each at its TaskEnd. Events of a task
    whose TaskBegin it never saw are not kept (a TaskEnd is, by the type it
    repeats). ``compiled`` chooses the compiled core (True), the twin
    (False), or whichever runs (None).
    """

    def __init__(self, flt: Filter | None = None, *, compiled: bool | None = None) -> None:
        flt = flt or Filter()
        if flt.kinds is not None and not all(isinstance(k, Kind) and type(k) is Kind for k in flt.kinds):
            raise ValueError("an event filter's kinds must be event kinds (livetrace.Kind), not span kinds")
        if flt.min_duration is not None:
            raise ValueError("min_duration selects spans; events have no duration")
        self.filter = flt
        self._fast = use_compiled(compiled)
        self._mask = None if flt.kinds is None else kind_mask(frozenset(flt.kinds))  # type: ignore[arg-type]  # checked above: Kinds
        self._goroutines = None if flt.goroutines is None else frozenset(flt.goroutines)
        self._procs = None if flt.procs is None else frozenset(flt.procs)
        self._g_array = None if self._goroutines is None else _i64s(self._goroutines)
        self._p_array = None if self._procs is None else _i64s(self._procs)
        self._tasks: set[int] = set()  # ids of open tasks whose type matches
        # Per generation being selected (a pool selects several at once), weakly: a
        # generation holds its raw batches, which must go with it.
        self._gen_ids: WeakKeyDictionary[Tables, tuple[int, _GenerationIds]] = WeakKeyDictionary()
        self._no_gen = _GenerationIds(flt, None)  # batches of no generation's tables
        self._lock = threading.Lock()
        self.everything = all(
            v is None
            for v in (flt.kinds, flt.goroutines, flt.procs, flt.tasks, flt.regions, flt.logs, flt.stack, flt.predicate)
        )

    def _ids(self, gen: Tables | None) -> _GenerationIds:
        if gen is None:
            return self._no_gen
        # A legacy trace's provisional tables grow: the entry is checked against their size.
        size = len(gen.strings) + len(gen.stacks) + len(gen.extra_strings)
        cached = self._gen_ids.get(gen)
        if cached is None or cached[0] != size:
            cached = (size, _GenerationIds(self.filter, gen))
            with self._lock:  # pool threads add at once
                self._gen_ids[gen] = cached
        return cached[1]

    def select(self, batch: EventBatch) -> EventBatch:
        """The batch's events the filter keeps, as a batch (the same one
        when the filter keeps everything)."""
        return self.pick(batch, self.order(batch))

    def order(self, batch: EventBatch) -> list[int] | None:
        """The part of :meth:`select` whose state crosses batches, run on
        the stream's batches in order: the candidates of a task filter
        (None: no task filter). :meth:`pick` does the rest, in any thread."""
        if self.everything or self.filter.tasks is None:
            return None
        return self._task_candidates(batch, self._ids(batch.gen))

    def pick(self, batch: EventBatch, cands: list[int] | None) -> EventBatch:
        """What :meth:`select` keeps, given what :meth:`order` said of the
        batch: needs no state from other batches (the predicate, if any,
        is called in the thread that calls this)."""
        if self.everything:
            return batch
        ids = self._ids(batch.gen)
        if cands is not None and not cands:
            return batch.take(())
        codes, _, _, procs, goroutines, args, _ = batch.columns()
        if self._fast:
            raw = ccore.select_indices(
                codes,
                procs,
                goroutines,
                args,
                self._mask,
                ROLES,
                STACK_ARG_TABLE,
                self._g_array,
                self._p_array,
                *ids.arrays,
                None if cands is None else array("q", cands),
            )
            kept: array[int] = array("q")
            kept.frombytes(raw)
        else:
            kept = array("q", _select_py(batch, self._mask, self._goroutines, self._procs, ids, cands))
        out = batch if len(kept) == len(batch) else batch.take(kept)
        pred = self.filter.predicate
        if pred is not None:
            keep = [i for i, e in enumerate(out) if pred(e)]
            if len(keep) != len(out):
                out = out.take(keep)
        return out

    def pick_provisional(self, item: Provisional, cands: list[int] | None) -> Provisional:
        """A legacy trace's provisional events, chosen as :meth:`pick` chooses
        (their stacks are ids until the footer: a stack filter keeps none of
        them), given what :meth:`order` said of them."""
        if self.everything:
            return item
        return Provisional(self.pick(item.events, cands), item.segment, item.late)

    def _task_candidates(self, batch: EventBatch, ids: _GenerationIds) -> list[int]:
        """In order, the task, region and log events of tasks whose type
        matches; learns and forgets tasks on the way."""
        codes = batch.codes.tobytes()
        args, extra = batch.args, batch.extra
        names, types = ids.task_names or frozenset(), ids.task_types or frozenset()
        tasks, out = self._tasks, []
        for m in _TASKISH_CODES.finditer(codes):
            i = m.start()
            kind = KIND_OF_CODE[codes[i]]
            task = args[i * NARGS + TASK_ARG]
            if kind == Kind.TASK_BEGIN:
                if args[i * NARGS + TASK_NAME_ARG] in names:
                    tasks.add(task)
                keep = task in tasks
            elif kind == Kind.TASK_END:
                keep = extra[i * NEXTRA + TASK_END_TYPE_EXTRA] in types
                tasks.discard(task)
            else:
                keep = task in tasks
            if keep:
                out.append(i)
        return out


def _select_py(
    batch: EventBatch,
    mask: bytes | None,
    goroutines: Collection[int] | None,
    procs: Collection[int] | None,
    ids: _GenerationIds,
    cands: list[int] | None,
) -> list[int]:
    """The twin of select.c's select_indices: the same criteria, in the same order."""
    codes, _, _, p_col, g_col, a_col, _ = batch.columns()
    code = codes.tobytes()
    p = p_col.tolist() if procs is not None else None
    g = g_col.tolist() if goroutines is not None else None
    need_args = ids.regions is not None or ids.logs is not None or ids.stacks is not None
    a = a_col.tolist() if need_args else None
    regions, logs, stacks = ids.regions, ids.logs, ids.stacks
    out = []
    for i in range(len(code)) if cands is None else cands:
        c = code[i]
        if mask is not None and not mask[c]:
            continue
        if g is not None and goroutines is not None and g[i] not in goroutines:
            continue
        if p is not None and procs is not None and p[i] not in procs:
            continue
        if a is not None:
            name = a[i * NARGS + NAME_ARG]
            if regions is not None and not (ROLES[c] & ROLE_REGION and name in regions):
                continue
            if logs is not None and not (ROLES[c] & ROLE_LOG and name in logs):
                continue
            if stacks is not None:
                s = STACK_ARG_TABLE[c]
                if s == NO_STACK_ARG or a[i * NARGS + s] not in stacks:
                    continue
        out.append(i)
    return out


def select_events(batch: EventBatch, flt: Filter) -> EventBatch:
    """The events of one batch that the filter keeps. A task filter needs
    the TaskBegin events of the stream before: for a stream of batches, use
    one :class:`EventSelector` for them all."""
    return EventSelector(flt).select(batch)
