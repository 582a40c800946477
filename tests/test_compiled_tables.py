"""A generation's string and stack tables read by the compiled core are the
twin's, entry for entry and in the same order; on a batch the twin rejects,
the same error with the same context, and the same entries added before it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace import TraceFormatError
from livetrace._trace.accel import use_compiled
from livetrace._trace.modern.generation import Generation, GenerationAssembler
from livetrace._trace.modern.wire import Batch, FrameReader
from livetrace._trace.spec.modern import EV_STACKS, EV_STRINGS

from . import textform
from .conftest import examples
from .mutate import mutate

TEXT_TESTS = [t for t in textform.all_tests() if t.data]
Table = tuple[list[tuple[int, bytes]], list[tuple[int, tuple[int, ...]]], list[tuple[int, tuple[int, int, int]]]]
pytestmark = pytest.mark.compiled_core  # compares both implementations: once


def tables(data: bytes, compiled: bool) -> tuple[list[Table], object]:
    """Every generation's strings, stacks and frames (as ordered lists), and the error that stopped them."""
    assert use_compiled(True)
    frames = FrameReader()
    asm: GenerationAssembler | None = None
    gens: list[Generation] = []
    error = None
    try:
        fs = frames.feed(data)
        if fs:
            assert frames.minor is not None
            asm = GenerationAssembler(frames.minor, compiled)
            for f in fs:  # one at a time: the generations done before an error count
                gens += asm.push([f])
        frames.close()
        if asm is not None:
            gens += asm.close(frames.offset)
    except TraceFormatError as e:
        error = (type(e).__name__, e.reason, e.offset, e.generation)
    if asm is not None and asm.current is not None:
        gens.append(asm.current)  # the one an error stopped: what it added before the error counts too
    out = [(list(g.strings.items()), list(g.stacks.items()), list(g.frames.items())) for g in gens]
    return out, error


@pytest.mark.parametrize("t", TEXT_TESTS, ids=lambda t: t.name)
def test_compiled_tables_are_the_twins(t: textform.TextTrace) -> None:
    assert tables(t.data, True) == tables(t.data, False)


@settings(max_examples=examples(400))
@given(st.data())
def test_compiled_tables_agree_on_mutated_traces(data: st.DataObject) -> None:
    t = data.draw(st.sampled_from(TEXT_TESTS))
    buf = mutate(data, t.data, keep=16)
    assert tables(buf, True) == tables(buf, False)


def table_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) in the stream of every string and stack batch's records."""
    return [
        (f.payload_offset + 1, f.payload_offset + len(f.payload))
        for f in FrameReader().feed(data)
        if isinstance(f, Batch) and f.exp < 0 and f.payload[:1] in (bytes([EV_STRINGS]), bytes([EV_STACKS]))
    ]


TABLE_TESTS = [t for t in TEXT_TESTS if any(end > start for start, end in table_spans(t.data))]


@settings(max_examples=examples(400))
@given(st.data())
def test_compiled_tables_agree_on_damaged_table_batches(data: st.DataObject) -> None:
    """Bytes changed inside the table batches only (their frames stay whole)."""
    t = data.draw(st.sampled_from(TABLE_TESTS))
    spans = [s for s in table_spans(t.data) if s[1] > s[0]]
    buf = bytearray(t.data)
    for _ in range(data.draw(st.integers(1, 4))):
        start, end = data.draw(st.sampled_from(spans))
        buf[data.draw(st.integers(start, end - 1))] = data.draw(st.sampled_from([0, 1, 2, 3, 5, 0x7F, 0x80, 0xFF]))
    assert tables(bytes(buf), True) == tables(bytes(buf), False)
