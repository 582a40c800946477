"""The unit tables summed from goroutine_states (sums.py): the compiled pass
(_ccore/tables/units.c) gives the twin's batches row for row, on the
corpus' units and on columns whole traces seldom hold: null stacks with
different values under them, equal keys, goroutine 0 and negative ids,
sums that wrap, intervals before a goroutine's first run or of a goroutine
with no goroutine_units row, no rows at all, rows from an offset."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._tables.read import iter_tables
from livetrace._tables.sums import unit_sums
from livetrace._trace.spans.model import SPAN_KIND_NAMES, SpanKind

from . import textform
from .conftest import ROOT

pytestmark = pytest.mark.compiled_core  # it names both cores, so the compiled pass alone runs it

_TABLES = ("sched_units", "blocked_units", "pprof_units", "pprof_interval_units")
_LEGACY = ROOT / "tests" / "corpus" / "legacy" / "go-testdata"
_TEXT = {t.name: t for t in textform.all_tests() if t.data and t.expect_success}
_TRACES = {
    "http_1_19_good": (_LEGACY / "http_1_19_good").read_bytes(),
    "fmt_1_21_pprof_good": (_LEGACY / "fmt_1_21_pprof_good").read_bytes(),
    "stress_1_21_good": (_LEGACY / "stress_1_21_good").read_bytes(),
    "go122-gc-stress": _TEXT["go122-gc-stress"].data,
    "go122-annotations-stress": _TEXT["go122-annotations-stress"].data,
    "go126-generations": (ROOT / "tests" / "corpus" / "runtime" / "go126-generations.trace").read_bytes(),
}

_KINDS = pa.array(SPAN_KIND_NAMES, pa.string())
# Reasons of two profiles and of none, "network" twice (a dictionary need not be unique): few, so rows share keys.
_REASONS = pa.array(["chan receive", "", "network", "network"], pa.string())
# goroutine_states' kinds.
_STATES = [int(k) for k in (SpanKind.RUNNING, SpanKind.RUNNABLE, SpanKind.BLOCKED, SpanKind.SYSCALL)]
_HUGE = 2**62
_TIME = st.sampled_from([0, 1, 5, -7, _HUGE, -_HUGE, 2**63 - 1])
_ROW = st.fixed_dictionaries(
    {
        "goroutine": st.sampled_from([0, 1, 2, -5, 2**63 - 1]),
        "start": _TIME,
        "end": _TIME,
        "duration": st.sampled_from([0, 1, 3, -2, _HUGE, 2**63 - 1]),
        "state": st.sampled_from(_STATES),
        "reason": st.integers(0, len(_REASONS) - 1),
        "start_stack_id": st.none() | st.sampled_from([0, 4, -4, 2**63 - 1]),
        "under": st.sampled_from([0, 7, -(2**63)]),  # what a null stack holds
        "clipped_end": st.booleans(),
    }
)
_UNIT = st.tuples(st.sampled_from([0, 1, -5, 9]), st.none() | _TIME)  # goroutine, first_run


def _stacks(rows: list[dict[str, int | None]]) -> pa.Array:
    """start_stack_id, null where a row's is, over the row's "under"."""
    ids = [r["under"] if r["start_stack_id"] is None else r["start_stack_id"] for r in rows]
    valid = pa.array([r["start_stack_id"] is not None for r in rows], pa.bool_())
    data = pa.array(ids, pa.int64())
    return pa.Array.from_buffers(pa.int64(), len(rows), [valid.buffers()[1], data.buffers()[1]])


def _states(rows: list[dict[str, int | None]], offset: int) -> pa.RecordBatch:
    rows = [rows[0]] * offset + rows if rows else []
    batch = pa.record_batch(
        {
            **{c: pa.array([r[c] for r in rows], pa.int64()) for c in ("goroutine", "start", "end", "duration")},
            "state": pa.DictionaryArray.from_arrays(pa.array([r["state"] for r in rows], pa.int32()), _KINDS),
            "reason": pa.DictionaryArray.from_arrays(pa.array([r["reason"] for r in rows], pa.int32()), _REASONS),
            "start_stack_id": _stacks(rows) if rows else pa.array([], pa.int64()),
            "clipped_end": pa.array([r["clipped_end"] for r in rows], pa.bool_()),
        }
    )
    return batch.slice(offset)


def _units(units: dict[int, int | None]) -> pa.RecordBatch:
    return pa.record_batch(
        {"goroutine": pa.array(list(units), pa.int64()), "first_run": pa.array(list(units.values()), pa.int64())}
    )


def _both(states: pa.RecordBatch, units: pa.RecordBatch) -> dict[str, pa.RecordBatch]:
    """unit_sums' batches, asserted the same on both cores."""
    compiled = unit_sums(1, 2, states, units, compiled=True)
    twin = unit_sums(1, 2, states, units, compiled=False)
    for table in _TABLES:
        assert compiled[table].schema == twin[table].schema, table
        assert compiled[table].to_pylist() == twin[table].to_pylist(), table
    return compiled


def _sums(batch: pa.RecordBatch) -> list[dict[str, object]]:
    """The rows but their capture and generation (the unit's, numbered by its trace)."""
    rows: list[dict[str, object]] = batch.select(
        [c for c in batch.schema.names if c not in ("capture", "generation")]
    ).to_pylist()
    return rows


@pytest.mark.parametrize("name", list(_TRACES))
def test_both_cores_sum_the_corpus_units_alike(name: str) -> None:
    counted = dict.fromkeys(_TABLES, 0)
    for unit in iter_tables(_TRACES[name], compiled=True):
        got = _both(unit["goroutine_states"], unit["goroutine_units"])
        for table in _TABLES:
            assert _sums(got[table]) == _sums(unit[table]), table
            counted[table] += got[table].num_rows
    assert counted["sched_units"] and counted["pprof_units"], counted


@settings(max_examples=300)
@given(
    rows=st.lists(_ROW, max_size=40),
    offset=st.integers(0, 9),
    units=st.dictionaries(st.sampled_from([0, 1, -5, 9]), st.none() | _TIME),
)
def test_both_cores_sum_any_columns_alike(
    rows: list[dict[str, int | None]], offset: int, units: dict[int, int | None]
) -> None:
    _both(_states(rows, offset), _units(units))


def _row(**kw: int | None) -> dict[str, int | None]:
    row: dict[str, int | None] = {
        "goroutine": 1,
        "start": 10,
        "end": 20,
        "duration": 10,
        "state": int(SpanKind.BLOCKED),
        "reason": 0,  # chan receive: the sync profile's
        "start_stack_id": None,
        "under": 0,
        "clipped_end": False,
    }
    return {**row, **kw}


def test_null_stacks_are_one_group_whatever_lies_under_them() -> None:
    rows = [_row(under=3), _row(under=-8, start=12), _row(start_stack_id=3)]
    got = _both(_states(rows, 0), _units({1: 0}))
    assert [(r["stack_id"], r["intervals"]) for r in got["blocked_units"].to_pylist()] == [(None, 2), (3, 1)]
    assert [(r["stack_id"], r["intervals"], r["first_start"]) for r in got["pprof_units"].to_pylist()] == [
        (None, 2, 10),
        (3, 1, 10),
    ]


def test_groups_sort_by_key_and_alone_intervals_follow_in_order() -> None:
    """Goroutine 2's intervals before its first run, and goroutine 3's (no
    goroutine_units row), are rows of their own after the groups."""
    rows = [
        _row(goroutine=2, start=5, start_stack_id=9),  # before goroutine 2's first run
        _row(goroutine=2, start_stack_id=9),
        _row(goroutine=3, start_stack_id=1),
        _row(goroutine=1, start_stack_id=9),
        _row(goroutine=1, start_stack_id=-4),
        _row(goroutine=1),
    ]
    got = _both(_states(rows, 0), _units({1: 0, 2: 8}))
    pprof = [(r["goroutine"], r["stack_id"], r["intervals"]) for r in got["pprof_units"].to_pylist()]
    assert pprof == [(1, None, 1), (1, -4, 1), (1, 9, 1), (2, 9, 1), (2, 9, 1), (3, 1, 1)]
    assert [r["stack_id"] for r in got["blocked_units"].to_pylist()] == [None, -4, 1, 9]


def test_sums_wrap_as_pyarrow_sums_do() -> None:
    rows = [_row(duration=2**62, start_stack_id=1), _row(duration=2**62, start_stack_id=1)]
    got = _both(_states(rows, 0), _units({1: 0}))
    assert got["blocked_units"]["total_ns"].to_pylist() == [-(2**63)]
    assert got["pprof_units"]["total_ns"].to_pylist() == [-(2**63)]


def test_no_rows_give_empty_batches() -> None:
    got = _both(_states([], 0), _units({}))
    assert all(not got[t].num_rows for t in _TABLES)
