"""The tables' per-row passes, on either core: compiled (a single pass in C,
_ccore/tables/columns.c, whose buffers pyarrow wraps without a copy) or
this twin's pyarrow kernels. Both give the same arrays.

- :func:`event_columns`: EventBatches' flat columns as the ``events``
  table's, one after another: kind and code, time, thread, proc and
  goroutine, each argument and extra as its own column, and
  the arguments that per code are a stack, a created goroutine's stack and
  two strings (null where the code has none);
- :func:`lookup`: a column of ids as the values of their keys (null where
  an id is null or has no key), the first of equal keys counting;
- :func:`missing`: the distinct ids of a column that no key is;
- :func:`wakers_at_ends`: per goroutine state, the goroutine whose wake
  event at its end made it runnable (a lookup by time, checked);
- :func:`span_partition`: a unit's SpanBatches' columns as one batch's,
  its goroutine states first, then its P spans, then the rest (each part
  in the batches' order), so that ``goroutine_states`` and ``proc_states``
  are slices of the ``spans`` columns rather than copies of them.
"""

from __future__ import annotations

import functools
from array import array
from collections.abc import Sequence
from typing import NamedTuple, cast

import pyarrow as pa
import pyarrow.compute as pc

from livetrace._tables.columns import column, full, strided
from livetrace._trace.accel import ccore
from livetrace._trace.model.batch import NARGS, NEXTRA, EventBatch
from livetrace._trace.spans.batch import COLUMNS as SPAN_COLUMNS
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import RES_GOROUTINE, RES_PROC, SpanKind


class EventColumns(NamedTuple):
    kinds: pa.Array  # int32: per code, its kind (the kind_of lookup)
    codes: pa.Array  # int32
    times: pa.Array  # int64, and so the next three
    threads: pa.Array
    procs: pa.Array
    goroutines: pa.Array
    args: list[pa.Array]  # NARGS uint64 columns
    extra: list[pa.Array]  # NEXTRA uint64 columns
    picked: list[pa.Array]  # per picker, uint64 (null: the code has none)


# An EventBatch's columns' types, in its columns() order.
_EVENT_TYPES = (pa.uint8(), pa.int64(), pa.int64(), pa.int64(), pa.int64(), pa.uint64(), pa.uint64())


def _selector(index_of: list[int]) -> pa.Array:
    return pa.array([i if i >= 0 else None for i in index_of], pa.int64())


def event_columns(
    batches: Sequence[EventBatch],
    kind_of: list[int],
    pickers: list[list[int]],
    *,
    compiled: bool,
    scratch: Scratch | None = None,
) -> EventColumns:
    """The batches' events, one after another, as columns: ``kind_of`` per
    code (256) its kind, ``pickers`` per code (256 each) which argument to
    pick (-1: none). The batches' own columns are read where they are: a
    unit's are not joined first (a copy of every column, made to be read
    once). Compiled, the picked columns are in ``scratch``'s memory where
    one is given: they are ids to look up, not a table's columns."""
    n = sum(len(b) for b in batches)
    if compiled:
        nbits = (n + 7) // 8
        plain = [_alloc(4 * n), _alloc(4 * n), *(_alloc(8 * n) for _ in range(4 + NARGS + NEXTRA))]
        get = scratch.get if scratch is not None else lambda _, size: _alloc(size)
        picked = [(get(f"pick{p}", 8 * n), get(f"pick{p}bits", nbits)) for p in range(len(pickers))]
        nulls = ccore.table_event_columns(
            [b.columns() for b in batches],
            pa.array(kind_of, pa.int32()).buffers()[1],
            bytes(i & 0xFF for p in pickers for i in p),
            (*plain, *(b for pair in picked for b in pair)),
        )
        kinds, codes = (pa.Array.from_buffers(pa.int32(), n, [None, b]) for b in plain[:2])
        times, threads, procs, goroutines = (pa.Array.from_buffers(pa.int64(), n, [None, b]) for b in plain[2:6])
        wide = [pa.Array.from_buffers(pa.uint64(), n, [None, b]) for b in plain[6:]]
        return EventColumns(
            kinds,
            codes,
            times,
            threads,
            procs,
            goroutines,
            wide[:NARGS],
            wide[NARGS:],
            [
                pa.Array.from_buffers(pa.uint64(), n, [bits, values], k)
                for (values, bits), k in zip(picked, nulls, strict=True)
            ],
        )
    parts = [[column(c) for c in b.columns()] for b in batches]
    codes, times, threads, procs, goroutines, args, extra = (
        pa.concat_arrays([p[k] for p in parts]) if parts else pa.array([], t) for k, t in enumerate(_EVENT_TYPES)
    )
    # Gathers from the flat columns (each event's NARGS in a row): a take is
    # several times faster than list_element or choose.
    at_args, at_extra = strided(n, NARGS), strided(n, NEXTRA)

    def pick(selector: pa.Array) -> pa.Array:
        return pc.take(args, pc.add(at_args, pc.take(selector, codes)))

    return EventColumns(
        pc.take(pa.array(kind_of, pa.int32()), codes),
        pc.cast(codes, pa.int32()),
        times,
        threads,
        procs,
        goroutines,
        [pc.take(args, pc.add(at_args, k)) for k in range(NARGS)],
        [pc.take(extra, pc.add(at_extra, k)) for k in range(NEXTRA)],
        [pick(_selector(p)) for p in pickers],
    )


def _alloc(size: int) -> pa.Buffer:
    """A writable buffer from malloc's pool (pyarrow's "system"), whatever
    the process's default: most of the tables' bytes are these columns, and
    pyarrow's default on Linux, mimalloc, backs them with transparent huge
    pages that cost twice the time to fault in (docs/sql.md, "A sixth pass")."""
    return pa.allocate_buffer(size, memory_pool=pa.system_memory_pool())


class Scratch:
    """Buffers kept from unit to unit, for the compiled kernels' columns
    that do not outlive a unit's build (ids to look up, a span's stacks and
    flags): a unit's fresh memory costs a page fault per page, each zeroing
    it, where kept memory is written over as it is. Each is grown to the
    largest unit's size, so what is kept is bounded by a unit. Not for two
    threads at once."""

    def __init__(self) -> None:
        self._buffers: dict[str, pa.Buffer] = {}

    def get(self, name: str, size: int) -> pa.Buffer:
        """The buffer kept as ``name``, of ``size`` bytes at least; what an
        earlier call gave under that name is written over from now on."""
        kept = self._buffers.get(name)
        if kept is None or kept.size < size:
            kept = self._buffers[name] = _alloc(size + size // 8)  # room for a unit a little bigger
        return kept


def _data(array: pa.Array, width: int) -> memoryview:
    """The memory of a fixed-width array's values (from its offset)."""
    return memoryview(array.buffers()[1])[array.offset * width : (array.offset + len(array)) * width]


def lookup(
    ids: pa.Array, keys: pa.Array, values: pa.Array, *, compiled: bool, put: tuple[pa.Array, pa.Array] | None = None
) -> pa.Array:
    """Per id (a 64-bit integer column), the value (int32 or int64) of the
    first key (64-bit, compared as bits) equal to it; null where the id is
    null or no key is. ``put``: (rows, values), a few rows (int64
    positions, ascending) whose answers are those values instead (null
    where one is): written into the column made, not a copy of it."""
    if compiled:
        n = len(ids)
        valid = ids.buffers()[0]
        width = values.type.byte_width
        data, bits = _alloc(n * width), _alloc((n + 7) // 8)
        nulls = ccore.table_lookup(
            ids.buffers()[1], valid, ids.offset, n, _data(keys, 8), _data(values, width), width, (data, bits)
        )
        if put is not None:
            nulls += _put(data, bits, "q" if width == 8 else "i", *put)
        return pa.Array.from_buffers(values.type, n, [bits, data], nulls)
    out = pc.take(values, pc.index_in(ids, value_set=pc.cast(keys, ids.type, safe=False)))
    if put is None:
        return out
    rows, given = put
    return pc.replace_with_mask(out, pc.is_in(strided(len(ids), 1), value_set=rows), given.cast(values.type))


def _put(data: pa.Buffer, bits: pa.Buffer, typecode: str, rows: pa.Array, values: pa.Array) -> int:
    """Writes the values at the rows of a column's buffers (a few: one by
    one); how many more nulls it has now."""
    items, valid, more = memoryview(data).cast(typecode), memoryview(bits).cast("B"), 0  # type: ignore[call-overload]
    for row, value in zip(rows.to_pylist(), values.to_pylist(), strict=True):
        byte, bit = row >> 3, 1 << (row & 7)
        was = bool(valid[byte] & bit)
        if value is None:
            items[row], valid[byte] = 0, valid[byte] & ~bit
        else:
            items[row], valid[byte] = value, valid[byte] | bit
        more += (value is None) - (not was)
    return more


def missing(ids: pa.Array, keys: pa.Array, *, compiled: bool) -> list[int]:
    """The distinct ids (a 64-bit integer column) that are not null, not 0
    and no key (64-bit, compared as bits), in the order they first appear:
    the ids a lookup by ``keys`` would leave null that more keys could
    fill, found without making its column."""
    if compiled:
        found = ccore.table_missing(ids.buffers()[1], ids.buffers()[0], ids.offset, len(ids), _data(keys, 8))
        return [i if ids.type == pa.uint64() else i - (1 << 64) * (i >> 63) for i in array("Q", found)]
    out = ids.filter(pc.invert(pc.is_in(ids, value_set=pc.cast(keys, ids.type, safe=False))))
    return [i for i in pc.unique(out).to_pylist() if i]


def one_of(values: pa.Array, wanted: Sequence[int]) -> pa.Array:
    """Where an int32 column (an event's code, a dictionary's indices) is one
    of a few ``wanted``: compares, four times faster than is_in's hash."""
    return functools.reduce(pc.or_, [pc.equal(values, pa.scalar(c, pa.int32())) for c in wanted])


class Wakes(NamedTuple):
    """The wake events alone (what :func:`wakers_at_ends` filtered out of
    the events, where only a join answers): their times, the goroutines
    they woke (int64) and their wakers."""

    times: pa.Array
    woken: pa.Array
    wakers: pa.Array


def wakers_at_ends(
    ends: pa.Array,
    goroutines: pa.Array,
    codes: pa.Array,
    times: pa.Array,
    woken: pa.Array,
    wakers: pa.Array,
    wakes: Sequence[int],
    *,
    compiled: bool,
) -> pa.Array | Wakes:
    """Per row (``ends`` and ``goroutines``, int64), the waker of the first
    wake event (of the events' ``codes``, int32, those in ``wakes``) whose
    time (``times``, int64) is the row's end, where that wake woke the
    row's goroutine (``woken``, 64-bit; ``wakers``, int64, its waker); null
    where no wake is at its end (or the end is null). Where a row's first
    wake at its end woke another goroutine (two wakes at one time, a legacy
    trace's ties), only a join on both answers: the wakes, for the caller's
    join. Compiled, one pass over the events as they are, not the wakes
    filtered out of them first."""
    n = len(ends)
    if not n:
        return full(None, 0, pa.int64())
    if compiled and not any(a.null_count for a in (goroutines, codes, times, woken, wakers)):
        data, bits = _alloc(n * 8), _alloc((n + 7) // 8)
        nulls = ccore.table_wakers(
            ends.buffers()[1],
            ends.buffers()[0],
            ends.offset,
            n,
            goroutines.buffers()[1],
            goroutines.offset,
            _data(codes, 4),
            _data(times, 8),
            _data(woken, 8),
            _data(wakers, 8),
            bytes(1 if c in wakes else 0 for c in range(256)),
            (data, bits),
        )
        if nulls is not None:
            return pa.Array.from_buffers(pa.int64(), n, [bits, data], nulls)
        # (times out of order: the lookup's hash map answers)
    is_wake = one_of(codes, wakes)
    times, wakers = times.filter(is_wake), wakers.filter(is_wake)
    woken = pc.cast(woken.filter(is_wake), pa.int64(), safe=False)
    if not len(times):
        return full(None, n, pa.int64())
    at = lookup(ends, times, strided(len(times), 1), compiled=compiled)
    mine = pc.equal(pc.take(woken, at), goroutines)
    if pc.any(pc.invert(mine)).as_py():
        return Wakes(times, woken, wakers)
    return pc.if_else(mine, pc.take(wakers, at), pa.scalar(None, pa.int64()))


_WIDTHS = {"B": 1, "I": 4, "q": 8, "Q": 8}


class Partitioned(NamedTuple):
    columns: list[bytes]  # a SpanBatch's (buffers of bytes), in its COLUMNS order
    states: int  # the goroutine states: its first rows
    procs: int  # the P spans: the rows after those


# The span columns no table keeps as they are: read while a unit is built
# (stacks and their tables looked up, kinds and flags made into columns).
_SPAN_SCRATCH = frozenset(
    {"kinds", "resource_kinds", "start_stacks", "end_stacks", "start_tables", "end_tables", "flags"}
)


def span_partition(batches: Sequence[SpanBatch], *, compiled: bool, scratch: Scratch | None = None) -> Partitioned:
    """The batches' columns as one batch's, its rows partitioned: goroutine
    states (running, runnable, blocked, syscall), then P spans, then the
    rest, each part in the batches' order. Compiled, the columns no table
    keeps as they are (_SPAN_SCRATCH) are in ``scratch``'s memory where one
    is given."""
    if compiled:
        n = sum(len(b) for b in batches)
        outs = tuple(
            scratch.get(name, n * _WIDTHS[t])
            if scratch is not None and name in _SPAN_SCRATCH
            else _alloc(n * _WIDTHS[t])
            for name, t in SPAN_COLUMNS
        )
        states, procs = ccore.table_span_partition([b.columns() for b in batches], outs)
        return Partitioned([_view(b, t, n) for b, (_, t) in zip(outs, SPAN_COLUMNS, strict=True)], states, procs)
    cols = [pa.concat_arrays([column(c) for c in parts]) for parts in zip(*(b.columns() for b in batches), strict=True)]
    kinds, resources = cols[0], cols[1]
    state = pc.and_(
        pc.equal(resources, pa.scalar(RES_GOROUTINE, pa.uint8())),
        pc.less_equal(kinds, pa.scalar(int(SpanKind.SYSCALL), pa.uint8())),
    )
    proc = pc.equal(resources, pa.scalar(RES_PROC, pa.uint8()))
    rest = pc.invert(pc.or_(state, proc))
    order = pa.concat_arrays([pc.indices_nonzero(m) for m in (state, proc, rest)])
    taken = [pc.take(c, order) for c in cols]
    n = len(order)
    columns = [_view(a.buffers()[1], t, n) for a, (_, t) in zip(taken, SPAN_COLUMNS, strict=True)]
    return Partitioned(columns, pc.sum(state, min_count=0).as_py(), pc.sum(proc, min_count=0).as_py())


def _view(buffer: pa.Buffer, typecode: str, n: int) -> bytes:
    """The bytes of a buffer's first n items of a typecode, as a buffer
    that SpanBatch takes (it wraps it as a memoryview: no copy)."""
    return cast(bytes, memoryview(buffer).cast("B")[: n * _WIDTHS[typecode]])
