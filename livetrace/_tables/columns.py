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
    """A string column that is ``dictionary[indices]``, as a dictionary array."""
    return pa.DictionaryArray.from_arrays(pc.cast(indices, pa.int32()), dictionary)


def name_table(values: Sequence[bytes]) -> pa.Array:
    """Strings of a trace's tables as Arrow strings: not always UTF-8 (Go's
    strings are bytes), so a bad sequence becomes U+FFFD rather than an error."""
    return pa.array([v.decode("utf-8", "replace") for v in values], pa.string())


def flag(flags: pa.Array, bit: int) -> pa.Array:
    return pc.not_equal(pc.bit_wise_and(flags, pa.scalar(bit, flags.type)), pa.scalar(0, flags.type))


def full(value: object, n: int, type: pa.DataType) -> pa.Array:
    """n copies of one value (null: None)."""
    if value is None:
        return pa.nulls(n, type)
    return pa.repeat(pa.scalar(value, type), n)
