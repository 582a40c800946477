"""What a table builder keeps between units: a capture's open tasks go with
it (a live legacy session makes a capture every segment), and a span
builder's names table, which only grows, is converted a tail at a time to
the same strings."""

from __future__ import annotations

from pathlib import Path

import pytest

import livetrace
from livetrace._tables.build import UnitBuilder
from livetrace._tables.captures import Capture
from livetrace._tables.spans import Names
from livetrace._tables.units import CaptureUnits

pytestmark = pytest.mark.once  # the builder's bookkeeping, whichever core made the columns

TASKS = Path(__file__).parent / "corpus" / "legacy" / "go-testdata" / "user_task_region_1_21_good"


def test_a_captures_open_tasks_go_when_it_ends() -> None:
    builder = UnitBuilder()
    for capture in (1, 2, 3):  # three segments of one session, as a live legacy export makes them
        units = CaptureUnits(builder, Capture(capture, "helper", "seg", "go1.21"))
        for batch in livetrace.decode_batches(TASKS):
            if isinstance(batch, livetrace.EventBatch):
                units.feed(batch)
        units.close()
    assert builder._parents == {}  # (three captures' before, one each)


def test_a_grown_names_table_is_its_strings() -> None:
    names = Names()
    table = [b"", b"alpha", b"\xffbad"]
    assert names.array(table).to_pylist() == ["", "alpha", "\ufffdbad"]
    table += [b"beta", b"gamma"]  # the same list, appended to
    assert names.array(table).to_pylist() == ["", "alpha", "\ufffdbad", "beta", "gamma"]
    assert names.array([b"", b"other"]).to_pylist() == ["", "other"]  # another builder's table
