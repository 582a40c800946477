"""Columns of one value (a unit's capture, its generation, unknown wall
times) are slices of kept arrays, not copies (livetrace/_tables/columns.py's
full): every unit's capture column shares one buffer, however many
generations' values came between."""

from __future__ import annotations

import pyarrow as pa

from livetrace._tables.columns import full


def test_a_capture_shared_by_every_unit_stays_kept_among_many_generations() -> None:
    capture = full(7, 1000, pa.int64())
    for generation in range(1, 100):  # each unit's generation: a value of its own
        full(generation, 1000, pa.int64())
        again = full(7, 900, pa.int64())
        assert again.buffers()[1].address == capture.buffers()[1].address
    assert again.to_pylist() == [7] * 900


def test_a_longer_column_grows_the_kept_array_and_keeps_its_values() -> None:
    short = full(None, 3, pa.int64())
    longer = full(None, 10, pa.int64())
    assert short.null_count == 3 and longer.null_count == 10 and len(longer) == 10
    assert full(3, 5, pa.uint64()).to_pylist() == [3] * 5
