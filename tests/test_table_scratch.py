"""The compiled kernels' kept memory (kernels.Scratch): the columns a unit's
build reads and drops (ids to look up, a span's stacks and flags) are
written over by the next unit's, so no table may hold them: a unit's
tables stay what they were when it came, after every later unit is built."""

from __future__ import annotations

from pathlib import Path

import pytest

import livetrace

pytestmark = pytest.mark.compiled_core  # the kept memory is the compiled kernels'

TRACE = Path(__file__).resolve().parent / "corpus" / "runtime" / "go126-generations.trace"


def test_a_units_tables_outlive_the_next_units_build() -> None:
    units, seen = [], []
    for unit in livetrace.iter_tables(TRACE, compiled=True):
        units.append(unit)
        seen.append({name: batch.to_pylist() for name, batch in unit.items()})  # as it came
    assert len(units) > 2  # generations of different sizes: the kept buffers grow and are reused
    for unit, then in zip(units, seen, strict=True):
        assert {name: batch.to_pylist() for name, batch in unit.items()} == then
    twin = list(livetrace.iter_tables(TRACE, compiled=False))
    assert [{name: b.num_rows for name, b in u.items()} for u in twin] == [
        {name: b.num_rows for name, b in u.items()} for u in units
    ]
