"""The tables' per-row passes (livetrace/_tables/kernels.py): the compiled
one (_ccore/tables/columns.c) gives the twin's arrays, on the cases whole
traces seldom reach: ids with nulls and an offset, equal keys, keys that
are small ints (a table of positions) and keys that are not (a hash map),
an id past every key, codes with no argument to pick."""

from __future__ import annotations

from array import array

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._tables.kernels import event_columns, lookup, missing
from livetrace._trace.accel import ccore
from livetrace._trace.model.batch import NARGS, NEXTRA, EventBatch

pytestmark = pytest.mark.compiled_core  # it names both cores, so the compiled pass alone runs it

_U64 = st.integers(0, 2**64 - 1)


@pytest.mark.parametrize(
    ("keys", "ids"),
    [
        ([3, 1, 2, 1], [1, 2, 3, 4, 0, None, 1]),  # small ints, 1 twice: the first counts
        ([0, 5, 2**63, 2**64 - 1, 5], [0, 5, 2**63, 2**64 - 1, 7, None]),  # a hash map; key 0 is a key
        ([], [1, None, 0]),
        ([7], []),
    ],
)
def test_lookup_gives_the_first_equal_keys_value_and_null_for_none(keys: list[int], ids: list[int | None]) -> None:
    k = pa.array(keys, pa.uint64())
    values = pa.array([10 * i + 1 for i in range(len(keys))], pa.int64())
    column = pa.array(ids, pa.uint64())
    expected = [None if i is None or i not in keys else 10 * keys.index(i) + 1 for i in ids]
    for compiled in (True, False):
        assert lookup(column, k, values, compiled=compiled).to_pylist() == expected
        narrow = lookup(column, k, values.cast(pa.int32()), compiled=compiled)
        assert narrow.type == pa.int32() and narrow.to_pylist() == expected


@settings(max_examples=50)
@given(
    keys=st.lists(st.integers(0, 300) | _U64, max_size=40),
    ids=st.lists(st.none() | st.integers(0, 300) | _U64, max_size=60),
    offset=st.integers(0, 9),
)
def test_lookup_on_both_cores_alike(keys: list[int], ids: list[int | None], offset: int) -> None:
    """Also on a slice of the ids (an offset into their buffers), and on
    signed ids (times) whose keys are signed too."""
    k = pa.array(keys, pa.uint64())
    values = pa.array(range(len(keys)), pa.int64())
    column = pa.array([None] * offset + ids, pa.uint64()).slice(offset)
    compiled = lookup(column, k, values, compiled=True)
    assert compiled.to_pylist() == lookup(column, k, values, compiled=False).to_pylist()
    assert compiled.null_count == sum(1 for i in ids if i is None or i not in keys)
    signed = column.cast(pa.int64(), safe=False)
    assert lookup(signed, k.cast(pa.int64(), safe=False), values, compiled=True).to_pylist() == compiled.to_pylist()


def _batch(rows: list[tuple[int, list[int]]]) -> EventBatch:
    n = len(rows)
    cols = (
        array("B", [c for c, _ in rows]),
        array("q", [1000 + i for i in range(n)]),
        array("q", [-1 - i for i in range(n)]),
        array("q", [i % 3 for i in range(n)]),
        array("q", [7 * i for i in range(n)]),
        array("Q", [v for _, vs in rows for v in vs[:NARGS]]),
        array("Q", [v for _, vs in rows for v in vs[NARGS:]]),
    )
    return EventBatch(None, n, tuple(c.tobytes() for c in cols))


_ROWS = st.lists(st.tuples(st.integers(0, 255), st.lists(_U64, min_size=NARGS + NEXTRA, max_size=NARGS + NEXTRA)))


@given(parts=st.lists(_ROWS, max_size=4), step=st.integers(1, 7))
def test_event_columns_on_both_cores_alike(parts: list[list[tuple[int, list[int]]]], step: int) -> None:
    """Each picker names every argument, and none (-1), for some codes; the
    events of several batches (an empty one among them) one after another."""
    pickers = [[(c * step + p) % (NARGS + 1) - 1 for c in range(256)] for p in range(4)]
    batches = [_batch(rows) for rows in parts]
    rows = [r for part in parts for r in part]
    kind_of = [(c * 7) % 13 for c in range(256)]
    cols = [event_columns(batches, kind_of, pickers, compiled=compiled) for compiled in (True, False)]
    a, b = (
        [
            c.to_pylist()
            for c in (x.kinds, x.codes, x.times, x.threads, x.procs, x.goroutines, *x.args, *x.extra, *x.picked)
        ]
        for x in cols
    )
    assert a == b
    assert a[1] == [c for c, _ in rows] and a[0] == [kind_of[c] for c, _ in rows]
    assert a[2] == [1000 + i for part in parts for i in range(len(part))]
    assert a[6] == [vs[0] for _, vs in rows]
    assert a[6 + NARGS + NEXTRA] == [vs[p] if (p := pickers[0][c]) >= 0 else None for c, vs in rows]


def test_event_columns_refuses_a_batch_whose_columns_disagree() -> None:
    good = _batch([(1, [0] * (NARGS + NEXTRA))] * 3).columns()
    short = (good[0], good[1][:2], *good[2:])
    with pytest.raises(ValueError, match="lengths"):
        ccore.table_event_columns([good, short], bytes(1024), bytes(1024), tuple(bytearray(64) for _ in range(20)))


@settings(max_examples=100)
@given(
    keys=st.lists(st.integers(0, 300) | _U64, max_size=20),
    ids=st.lists(st.none() | st.integers(0, 300) | _U64, max_size=60),
    offset=st.integers(0, 9),
)
def test_missing_on_both_cores_alike(keys: list[int], ids: list[int | None], offset: int) -> None:
    """The distinct ids no key is, 0 and nulls left out, in the order they first appear."""
    k = pa.array(keys, pa.uint64())
    column = pa.array([None] * offset + ids, pa.uint64()).slice(offset)
    expected = list(dict.fromkeys(i for i in ids if i and i not in keys))
    assert missing(column, k, compiled=True) == missing(column, k, compiled=False) == expected
    signed = column.cast(pa.int64(), safe=False)
    as_signed = [i - (1 << 64) if i >= 1 << 63 else i for i in expected]
    assert missing(signed, k, compiled=True) == missing(signed, k, compiled=False) == as_signed


@settings(max_examples=50)
@given(
    ids=st.lists(st.none() | st.integers(0, 20), min_size=1, max_size=40),
    put=st.lists(st.tuples(st.integers(0, 39), st.none() | st.integers(-5, 5)), max_size=6),
    narrow=st.booleans(),
)
def test_lookup_puts_a_few_rows_answers_on_both_cores_alike(
    ids: list[int | None], put: list[tuple[int, int | None]], narrow: bool
) -> None:
    """The rows given take the values given (null where None), valid or
    null before; the null count follows."""
    keys = pa.array(range(1, 15, 2), pa.uint64())
    values = pa.array([100 + k for k in range(1, 15, 2)], pa.int32() if narrow else pa.int64())
    given = {r: v for r, v in put if r < len(ids)}  # one value a row, in row order
    rows = pa.array(sorted(given), pa.int64())
    put_values = pa.array([given[r] for r in sorted(given)], pa.int64())
    column = pa.array(ids, pa.uint64())
    plain = lookup(column, keys, values, compiled=False).to_pylist()
    expected = [given.get(i, v) for i, v in enumerate(plain)]
    for compiled in (True, False):
        got = lookup(column, keys, values, compiled=compiled, put=(rows, put_values))
        assert got.to_pylist() == expected and got.null_count == expected.count(None)
