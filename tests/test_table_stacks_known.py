"""Stable stack ids asked for column after column of one generation
(livetrace/_tables/stacks.py): where every id is known already the lookup
alone answers; a column with a stack not seen before still finds it (and
emits its row once), an id the tables do not hold stays null, and 0 (no
stack) is null, on both cores."""

from __future__ import annotations

import pyarrow as pa
import pytest

from livetrace._tables.stacks import StackIds
from livetrace._trace.model.tables import Tables

pytestmark = pytest.mark.compiled_core  # it names both cores, so the compiled pass alone runs it


def _tables() -> Tables:
    return Tables(
        gen=1,
        strings={0: b"", 1: b"main.f", 2: b"main.go", 3: b"main.g"},
        stacks={0: (), 1: (0x10,), 2: (0x20, 0x10), 3: (0x30,)},
        frames={0x10: (1, 2, 7), 0x20: (3, 2, 9), 0x30: (3, 2, 11)},
    )


@pytest.mark.parametrize("compiled", [True, False])
def test_known_ids_then_a_new_one_then_one_the_tables_lack(compiled: bool) -> None:
    tables, stacks = _tables(), StackIds(compiled=compiled)
    first = stacks.stable(tables, pa.array([1, 0, None, 1], pa.uint64())).to_pylist()
    one = first[0]
    assert one is not None and first == [one, None, None, one]
    assert stacks.take_new()[0].num_rows == 1

    again = stacks.stable(tables, pa.array([1, 0, 1], pa.uint64())).to_pylist()  # every id known
    assert again == [one, None, one] and stacks.take_new()[0].num_rows == 0

    more = stacks.stable(tables, pa.array([0, 1, 2, 2, None], pa.uint64())).to_pylist()  # 2 is new
    two = more[2]
    assert two is not None and two != one and more == [None, one, two, two, None]
    assert stacks.take_new()[0]["stack_id"].to_pylist() == [two]

    lacking = stacks.stable(tables, pa.array([9, 2, 3], pa.uint64())).to_pylist()  # 9: not in the tables
    assert lacking[0] is None and lacking[1] == two and lacking[2] not in (None, one, two)
    assert stacks.stable(tables, pa.array([], pa.uint64())).to_pylist() == []
