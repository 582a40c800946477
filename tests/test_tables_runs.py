"""A unit's event batches become one run per tables (livetrace/_tables/build.py's
merged_events), so that its kernels run once and its columns need no
joining afterwards: a batch with no tables of its own (a trace's closing
Sync) joins the run it ends, and the columns read from tables (wall time,
stacks, strings) are null on its rows, as they were when it was a run of
its own."""

from __future__ import annotations

from pathlib import Path

import pytest

import livetrace
from livetrace._files import decode_batches
from livetrace._tables.build import merged_events
from livetrace._trace.model.batch import EventBatch

pytestmark = pytest.mark.compiled_core  # it names both cores, so the compiled pass alone runs it

TRACE = Path(__file__).resolve().parent / "corpus" / "runtime" / "go126-generations.trace"


def _last_generation() -> list[EventBatch]:
    batches = [b for b in decode_batches(TRACE) if isinstance(b, EventBatch)]
    gen = batches[-2].gen
    return [b for b in batches if b.gen is gen or b.gen is None]


def test_a_batch_without_tables_joins_the_run_it_ends() -> None:
    batches = _last_generation()
    assert batches[-1].gen is None and len(batches[-1]) == 1  # the trace's closing Sync
    runs = merged_events(batches)
    assert len(runs) == 1
    run = runs[0]
    assert run.gen is batches[0].gen and run.batches == batches
    n = sum(len(b) for b in batches)
    assert run.tabled is not None and run.tabled.to_pylist() == [True] * (n - 1) + [False]
    assert merged_events(batches[:-1])[0].tabled is None  # every row has the tables: no mask


def test_the_closing_sync_reads_no_tables_and_its_units_columns_are_whole() -> None:
    for compiled in (True, False):
        units = list(livetrace.iter_tables(TRACE, compiled=compiled))
        events = units[-1]["events"]
        last = events.slice(events.num_rows - 1).to_pylist()[0]
        assert last["event"] == "Sync" and last["kind"] == "Sync"
        assert last["wall_time"] is None and last["stack_id"] is None and last["new_stack_id"] is None
        assert last["string1"] is None and last["string2"] is None
        assert last["generation"] == units[-1]["events"]["generation"][0].as_py()
        before = events.slice(0, events.num_rows - 1)
        assert before["wall_time"].null_count == 0  # the generation's rows keep their wall times
