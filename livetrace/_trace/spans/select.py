"""Choosing spans: :func:`select_spans` runs a :class:`Filter` over a
:class:`SpanBatch` in the core (compiled, or the twin below), then the
parts only Python can do: log categories and the predicate, on the spans
the rest kept."""

from __future__ import annotations

import functools
from array import array
from collections.abc import Sequence
from fnmatch import fnmatchcase
from itertools import repeat

from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.select.filter import Filter
from livetrace._trace.select.match import names_matching, stack_ids_matching
from livetrace._trace.spans.batch import COLUMNS, SpanBatch
from livetrace._trace.spans.model import RES_GOROUTINE, SpanKind


def _tables(flt: Filter, spans: SpanBatch) -> tuple[bytes | None, ...]:
    """The filter as the core's lookup tables: kind mask, goroutine and P
    ids (sorted int64), task and region name masks, (tables, stack id)
    pairs (sorted uint64 pairs)."""
    kinds = None if flt.kinds is None else _kind_mask(flt.kinds)
    gs = None if flt.goroutines is None else array("q", sorted(flt.goroutines)).tobytes()
    ps = None if flt.procs is None else array("q", sorted(flt.procs)).tobytes()
    tasks = None if flt.tasks is None else names_matching(spans.names_table, flt.tasks)
    regions = None if flt.regions is None else names_matching(spans.names_table, flt.regions)
    pairs = None
    if flt.stack is not None:
        keys = sorted((k, sid) for k, t in spans.tables.items() for sid in stack_ids_matching(t, flt.stack))
        pairs = array("Q", [v for pair in keys for v in pair]).tobytes()
    return kinds, gs, ps, tasks, regions, pairs


@functools.lru_cache(maxsize=64)
def _kind_mask(kinds: frozenset[int]) -> bytes:
    """The kinds as a table of 256 flags (made once a filter: it was a set made for each of the 256,
    for every batch of spans)."""
    wanted = {int(k) for k in kinds}
    return bytes(k in wanted for k in range(256))


def _has(sorted_ids: bytes, x: int) -> bool:
    return x in memoryview(sorted_ids).cast("q")


def select_rows(cols: Sequence[memoryview], tables: tuple[bytes | None, ...], min_duration: int) -> bytes:
    """The twin of _ccore/spans/spans_select.c's span_select: the rows kept, as uint32 indexes."""
    kinds, gs, ps, tasks, regions, pairs = tables
    kind, rkind, rid, start, end, sstack, estack, stok, etok, _, name, tname, _, _, proc = cols
    gset = None if gs is None else set(memoryview(gs).cast("q"))
    pset = None if ps is None else set(memoryview(ps).cast("q"))
    pairset = None
    if pairs is not None:
        flat = memoryview(pairs).cast("Q")
        pairset = {(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)}
    kept = array("I")
    for i in range(len(kind)):
        if kinds is not None and not kinds[kind[i]]:
            continue
        if gset is not None and not (rkind[i] == RES_GOROUTINE and rid[i] in gset):
            continue
        if pset is not None and not (proc[i] >= 0 and proc[i] in pset):
            continue
        if tasks is not None and not (tname[i] < len(tasks) and tasks[tname[i]]):
            continue
        if regions is not None and not (kind[i] != SpanKind.TASK and name[i] < len(regions) and regions[name[i]]):
            continue
        if min_duration >= 0 and end[i] - start[i] < min_duration:
            continue
        if pairset is not None and not (
            (sstack[i] and (stok[i], sstack[i]) in pairset) or (estack[i] and (etok[i], estack[i]) in pairset)
        ):
            continue
        kept.append(i)
    return kept.tobytes()


def take_rows(cols: Sequence[memoryview], rows: bytes) -> list[bytes]:
    """The twin of span_take: the given rows of each column."""
    idx = memoryview(rows).cast("I").tolist()
    return [array(t, [c[i] for i in idx]).tobytes() for c, (_, t) in zip(cols, COLUMNS, strict=True)]


_EVERY_SPAN = Filter()


def select_spans(spans: SpanBatch, flt: Filter, *, compiled: bool | None = None) -> SpanBatch:
    """The spans of the batch the filter keeps, in order (the batch itself
    when the filter keeps every span)."""
    if flt == _EVERY_SPAN:
        return spans
    fast = use_compiled(compiled)
    tables = _tables(flt, spans)
    min_duration = -1 if flt.min_duration is None else flt.min_duration
    if not fast:
        rows = select_rows(spans.columns(), tables, min_duration)
        cols = take_rows(spans.columns(), rows)
    else:
        raw: list[memoryview] = list(map(memoryview.cast, spans.columns(), repeat("B")))  # type: ignore[arg-type]
        kinds, gs, ps, tasks, regions, pairs = tables
        rows = ccore.span_select(raw, kinds, gs, ps, tasks, regions, min_duration, pairs)
        cols = ccore.span_take(raw, rows)
    idx = memoryview(rows).cast("I")
    logs = {j: spans.logs[i] for j, i in enumerate(idx) if i in spans.logs} if spans.logs else {}
    out = SpanBatch(cols, spans.tables, spans.names_table, logs, closed=spans.closed)
    if flt.logs is None and flt.predicate is None:
        return out
    keep = array("I")
    for j, span in enumerate(out):
        if flt.logs is not None and not any(fnmatchcase(cat, g) for cat, _ in span.logs for g in flt.logs):
            continue
        if flt.predicate is not None and not flt.predicate(span):
            continue
        keep.append(j)
    return SpanBatch(
        take_rows(out.columns(), keep.tobytes()), out.tables, out.names_table, _logs_of(out, keep), closed=out.closed
    )


def _logs_of(spans: SpanBatch, rows: array[int]) -> dict[int, tuple[tuple[bytes, bytes], ...]]:
    return {j: spans.logs[i] for j, i in enumerate(rows) if i in spans.logs}
