"""The compiled lookup's search for keys in order (a unit's wake times,
searched from where the last id's search ended while the ids ascend):
the twin's answer, the first of equal keys, for ids in order, out of
order, null, past every key and before every key, and on a slice."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._tables.kernels import lookup

pytestmark = pytest.mark.compiled_core  # it names both cores, so the compiled pass alone runs it

# Times: far from 0, so the keys are not small ints (a table of positions).
_BASE = 10**15
_TIMES = st.integers(_BASE, _BASE + 400)


def _both(ids: pa.Array, keys: list[int]) -> list[int | None]:
    k = pa.array(keys, pa.int64())
    values = pa.array([3 * i + 1 for i in range(len(keys))], pa.int64())
    compiled = lookup(ids, k, values, compiled=True)
    assert compiled.to_pylist() == lookup(ids, k, values, compiled=False).to_pylist()
    got: list[int | None] = compiled.to_pylist()
    return got


def test_keys_in_order_give_the_first_equal_keys_value() -> None:
    keys = [_BASE + t for t in (5, 5, 9, 12, 12, 12, 40)]
    ids = pa.array([_BASE + t if t is not None else None for t in (5, 9, 12, 12, 13, 40, 41, 4, 12, None, 5)])
    assert _both(ids, keys) == [1, 7, 10, 10, None, 19, None, None, 10, None, 1]


@settings(max_examples=100)
@given(
    keys=st.lists(_TIMES, max_size=80).map(sorted),
    ids=st.lists(st.none() | _TIMES, max_size=120),
    ascending=st.booleans(),
    offset=st.integers(0, 9),
)
def test_keys_in_order_on_both_cores_alike(
    keys: list[int], ids: list[int | None], ascending: bool, offset: int
) -> None:
    if ascending:  # the ids in order too (nulls among them): the search goes on from the last
        ascending_ids = iter(sorted(i for i in ids if i is not None))
        ids = [None if i is None else next(ascending_ids) for i in ids]
    column = pa.array([None] * offset + ids, pa.int64()).slice(offset)
    got = _both(column, keys)
    assert got == [None if i is None or i not in keys else 3 * keys.index(i) + 1 for i in ids]
