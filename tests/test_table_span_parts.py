"""A unit's spans are joined partitioned (kernels.span_partition): its
goroutine states first, then its P spans, then the rest, each part in the
order the spans ended; ``goroutine_states`` is then the spans' first rows,
their buffers shared rather than copied, and ``proc_states`` reads only the
first two parts. The compiled pass (_ccore/tables/columns.c) gives the
twin's columns."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import livetrace
from livetrace._tables.kernels import span_partition
from livetrace._trace.spans.batch import COLUMNS, SpanBatch
from livetrace._trace.spans.model import SpanKind

from .conftest import ROOT

TRACES = [
    ROOT / "tests" / "corpus" / "legacy" / "go-testdata" / "http_1_19_good",
    ROOT / "tests" / "corpus" / "runtime" / "go126-empty-stack-last.trace",
]
_STATES = {str(k) for k in (SpanKind.RUNNING, SpanKind.RUNNABLE, SpanKind.BLOCKED, SpanKind.SYSCALL)}


def _part(kind: str, resource: str) -> int:
    if resource == "Goroutine" and kind in _STATES:
        return 0
    return 1 if resource == "Proc" else 2


pytestmark = pytest.mark.compiled_core  # it names both cores, so the compiled pass alone runs it


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_goroutine_states_are_the_spans_first_rows(trace: object, compiled: bool) -> None:
    units = list(livetrace.iter_tables(trace, compiled=compiled))  # type: ignore[arg-type]  # a Path
    assert sum(u["goroutine_states"].num_rows for u in units) > 0
    for u in units:
        spans, states = u["spans"], u["goroutine_states"]
        parts = [_part(k, r) for k, r in zip(spans["kind"].to_pylist(), spans["resource"].to_pylist(), strict=True)]
        assert parts == sorted(parts)
        n = parts.count(0)
        assert states.num_rows == n
        assert states["start"].to_pylist() == spans["start"].slice(0, n).to_pylist()
        for column in ("start", "end", "duration", "start_stack_id"):
            assert states[column].buffers()[1].address == spans[column].buffers()[1].address, column
        assert u["proc_states"].num_rows == parts.count(1) + sum(
            1
            for p, k, proc in zip(parts, spans["kind"].to_pylist(), spans["proc"].to_pylist(), strict=True)
            if p == 0 and k == "running" and proc >= 0
        )


_ROW = st.tuples(st.integers(0, 8), st.integers(0, 2), st.integers(0, 2**64 - 1))
Row = tuple[int, int, int]


def _value(column: int, row: Row) -> int:
    """A row's value in a column: its kind, its resource kind, else made of its number."""
    kind, resource, v = row
    if column < 2:
        return (kind, resource)[column]
    bits = {"B": 8, "I": 32, "q": 64, "Q": 64}[COLUMNS[column][1]]
    u = (v + column) % (1 << bits)
    return u - 2**64 if COLUMNS[column][1] == "q" and u >= 2**63 else u


@settings(max_examples=60)
@given(st.lists(st.lists(_ROW, max_size=12), min_size=1, max_size=4))
def test_span_partition_on_both_cores_alike(batches: list[list[Row]]) -> None:
    """Every column of every width, from several batches: each row's own
    values in every column, so that a misplaced row shows."""
    bs = [
        SpanBatch([array(t, [_value(i, r) for r in rows]).tobytes() for i, (_, t) in enumerate(COLUMNS)], {}, [b""])
        for rows in batches
    ]
    compiled, twin = (span_partition(bs, compiled=c) for c in (True, False))
    assert (compiled.states, compiled.procs) == (twin.states, twin.procs)
    assert [bytes(c) for c in compiled.columns] == [bytes(c) for c in twin.columns]
    rows = [r for b in batches for r in b]
    parts = [0 if r == 1 and k <= 3 else 1 if r == 2 else 2 for k, r, _ in rows]
    order = sorted(range(len(rows)), key=lambda i: (parts[i], i))
    joined = SpanBatch(compiled.columns, {}, [b""])
    for i, col in enumerate(joined.columns()):
        assert list(col) == [_value(i, rows[j]) for j in order], COLUMNS[i][0]
    assert (compiled.states, compiled.procs) == (parts.count(0), parts.count(1))
