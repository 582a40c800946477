"""Arrow arrays over the core's column buffers, without a Python object per
row: a memoryview becomes an array's data buffer as it is (zero copy), and
every derived column is a pyarrow.compute kernel over those."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

_TYPES = {"B": pa.uint8(), "I": pa.uint32(), "q": pa.int64(), "Q": pa.uint64()}


def column(view: memoryview, n: int | None = None) -> pa.Array:
    """The memoryview's items as an array of its type, sharing its memory."""
    t = _TYPES[view.format]
    count = len(view) if n is None else n
    return pa.Array.from_buffers(t, count, [None, pa.py_buffer(view)])


def names(indices: pa.Array, dictionary: pa.Array) -> pa.DictionaryArray:
    """A string column that is ``dictionary[indices]``, as a dictionary
    array. Unsigned 32-bit indices (a span builder's names) are read as
    int32 in place, not copied: below 2**31 they are the same numbers, and
    from_arrays checks that each is in the dictionary (one above 2**31
    would read as negative, and fail there)."""
    if indices.type == pa.uint32() and indices.null_count == 0:
        buffers = indices.buffers()
        return pa.DictionaryArray.from_arrays(
            pa.Array.from_buffers(pa.int32(), len(indices), [None, buffers[1]], 0, indices.offset), dictionary
        )
    return pa.DictionaryArray.from_arrays(pc.cast(indices, pa.int32()), dictionary)


def name_table(values: Sequence[bytes]) -> pa.Array:
    """Strings of a trace's tables as Arrow strings: not always UTF-8 (Go's
    strings are bytes), so a bad sequence becomes U+FFFD rather than an error."""
    return pa.array([v.decode("utf-8", "replace") for v in values], pa.string())


def null_where_not(array: pa.Array, keep: pa.Array) -> pa.Array:
    """The array, null where ``keep`` (boolean) is false: its values shared,
    only a new validity bitmap made."""
    if isinstance(array, pa.DictionaryArray):
        return pa.DictionaryArray.from_arrays(null_where_not(array.indices, keep), array.dictionary)
    valid = pc.and_(pc.is_valid(array), keep)  # a boolean's data buffer is a bitmap
    if array.offset or valid.offset:
        return pc.if_else(keep, array, pa.scalar(None, array.type))
    return pa.Array.from_buffers(array.type, len(array), [valid.buffers()[1], array.buffers()[1]])


def whole(array: pa.Array) -> pa.Array:
    """The array from offset 0 of its buffers (a copy only where it had an offset)."""
    return pa.concat_arrays([array]) if array.offset else array


def sorted_by_keys(rows: pa.Table, keys: Sequence[str]) -> pa.Table:
    """The rows sorted by the key columns, each ascending, nulls first: the
    order of the compiled core's grouped rows. A key with nulls sorts by
    its validity first (false first), which needs no pyarrow's per-key
    null placement (25 and later)."""
    columns = {}
    for k in keys:
        if rows[k].null_count:
            columns[f"{k} valid"] = pc.is_valid(rows[k])
        columns[k] = rows[k]
    return rows.take(pc.sort_indices(pa.table(columns), sort_keys=[(c, "ascending") for c in columns]))


def flag(flags: pa.Array, bit: int) -> pa.Array:
    return pc.not_equal(pc.bit_wise_and(flags, pa.scalar(bit, flags.type)), pa.scalar(0, flags.type))


# Columns of one value, kept and sliced: a unit's capture, generation and
# unknown wall times are each the same few values, and a slice of a kept
# array costs no memory (arrays are immutable). Grown by doubling; the
# least recently used goes first (each unit's generation is a new value, and
# must not push out the capture that every unit's rows share).
_full: dict[tuple[object, pa.DataType], pa.Array] = {}
_KEEP_FULL = 16


def full(value: object, n: int, type: pa.DataType) -> pa.Array:
    """n copies of one value (null: None)."""
    key = (value, type)
    kept = _full.pop(key, None)
    if kept is None or len(kept) < n:
        size = max(n, 2 * len(kept)) if kept is not None else n
        kept = pa.nulls(size, type) if value is None else pa.repeat(pa.scalar(value, type), size)
        if len(_full) >= _KEEP_FULL:
            del _full[next(iter(_full))]  # the least recently used: a capture long gone
    _full[key] = kept  # last: the most recently used
    return kept.slice(0, n)


_counting = pa.array([0], pa.int64())


def strided(n: int, stride: int) -> pa.Array:
    """0, stride, 2 * stride, ... (n of them): where each row's items start
    in a flat column of ``stride`` items per row."""
    global _counting
    if len(_counting) < n:  # 0, 1, 2, ...: made by a kernel, kept, and grown by doubling
        _counting = pc.subtract(pc.cumulative_sum(full(1, max(n, 2 * len(_counting)), pa.int64())), 1)
    return pc.multiply(_counting.slice(0, n), stride)
