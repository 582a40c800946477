"""A task's end and a goroutine's label, which a busy service has by the
thousand a second, are written by the compiled JSON writer (jsonl.c), not
handed to the twin a line at a time: on any columns of those codes (any
task, parent, type index, label string; a type or string the tables lack)
its lines, exact and provisional, are the twin's bytes, or its error."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._cli.render import jsonl
from livetrace._cli.render.jsonl import JSON_PARTS, JsonlEncoder
from livetrace._cli.render.parts import GenerationParts
from livetrace._trace.accel import ccore
from livetrace._trace.model.batch import NARGS, NEXTRA, EventBatch
from livetrace._trace.model.tables import Tables
from livetrace._trace.spec.modern import EV_GO_LABEL, EV_GO_START, EV_STW_BEGIN, EV_USER_TASK_END

from .conftest import examples
from .twinenv import jsonl_of

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("LIVETRACE_PURE_PYTHON") == "1",
        reason="compares both implementations; runs on the compiled pass",
    ),
    pytest.mark.compiled_core,
]

CODES = st.sampled_from([EV_USER_TASK_END, EV_GO_LABEL, EV_GO_START])
# Task ids and parents (NO_TASK among them), string ids, extra-string indexes: in the tables or not.
ARG = st.one_of(st.integers(0, 4), st.just(2**64 - 1), st.integers(0, 2**64 - 1))


def _tables(wall: bool) -> Tables:
    g = Tables(gen=2)
    g.strings.update({1: b"label=x", 2: 'q"uo\\te\n\u200b'.encode() + b"\xff"})
    g.frames.update({0x401000: (1, 1, 17)})
    g.stacks.update({1: (0x401000,), 2: (0x401000, 0x401000)})
    g.extra_strings += [b"task type", "t\u00e9\x7f\u2028".encode() + b"\xfe"]
    if wall:
        g.wall_origin = 1_700_000_000_123_456_789
    return g


def _i64(v: int) -> bytes:
    return v.to_bytes(8, "little", signed=True)


def _batch(events: list[tuple[int, list[int]]], wall: bool) -> EventBatch:
    n = len(events)
    cols = (
        bytes(c for c, _ in events),
        b"".join(_i64(1000 + 7 * i) for i in range(n)),
        b"".join(_i64(5) for _ in range(n)),
        b"".join(_i64(3) for _ in range(n)),
        b"".join(_i64(9) for _ in range(n)),
        b"".join(v.to_bytes(8, "little") for _, vals in events for v in vals[:NARGS]),
        b"".join(v.to_bytes(8, "little") for _, vals in events for v in vals[NARGS:]),
    )
    return EventBatch(_tables(wall), n, cols)


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.tuples(CODES, st.lists(ARG, min_size=NARGS + NEXTRA, max_size=NARGS + NEXTRA)),
        min_size=1,
        max_size=12,
    ),
    st.booleans(),
)
def test_task_end_and_label_lines_are_the_twins(events: list[tuple[int, list[int]]], wall: bool) -> None:
    batch = _batch(events, wall)
    for provisional in (False, True):
        fast = jsonl_of(batch, True, provisional)
        assert fast == jsonl_of(batch, False, provisional)
        assert isinstance(fast, str) or fast.count(b"\n") == len(events)


def test_the_core_writes_them_itself() -> None:
    """No line of these kinds comes from Python (other): the writer was
    handing each task end to the twin, a few microseconds a line."""
    # (code, args: task or string id and stack; extra: a task end's parent and type)
    rows = [
        (EV_USER_TASK_END, [7, 1], [2**64 - 1, 1]),
        (EV_USER_TASK_END, [8, 0], [3, 2]),
        (EV_GO_LABEL, [1, 1], [0, 0]),
        (EV_GO_LABEL, [2, 0], [0, 0]),
    ]
    events = [(c, a + [0] * (NARGS - 2) + x + [0] * (NEXTRA - 2)) for c, a, x in rows]
    batch = _batch(events, wall=True)
    parts = GenerationParts(batch.gen, JSON_PARTS, str.encode)

    def other(i: int) -> NoReturn:
        raise AssertionError(f"line {i} handed to the twin")

    pieces = parts.pieces
    wall = batch.gen.wall_base if batch.gen else None
    code, time, m, p, g, args, extra = batch.columns()
    got = b"".join(
        ccore.jsonl(
            code,
            time,
            m,
            p,
            g,
            args,
            extra,
            wall,
            pieces["string"],
            pieces["stack"],
            parts.miss,
            other,
            pieces["extra"],
        )
    )
    assert got == jsonl_of(batch, False, False)
    assert b'"kind": "TaskEnd"' in got
    assert b'"kind": "Label"' in got


@pytest.mark.parametrize("per", [1, 3, 7, 11, 0])
def test_a_batch_in_one_call_comes_in_pieces_of_the_lines_asked(per: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """One call of the core writes the whole batch (a call per piece cost
    seven column slices and the caches each time), cut where asked, and a
    line it hands to Python past the first piece is that event's."""
    codes = [EV_GO_START, EV_STW_BEGIN, EV_USER_TASK_END, EV_GO_LABEL] * 2 + [EV_STW_BEGIN, EV_GO_START]
    batch = _batch([(c, [1, 1, 0, 0, 2**64 - 1, 1]) for c in codes], wall=True)
    monkeypatch.setattr(jsonl, "PIECE_LINES", per)
    monkeypatch.setenv("LIVETRACE_PURE_PYTHON", "0")
    got = JsonlEncoder().encode_batch(batch)
    assert [piece.count(b"\n") for piece in got] == ([per] * (10 // per) + [10 % per] * (10 % per > 0) if per else [10])
    assert b"".join(got) == jsonl_of(batch, False, False)
    assert b"".join(got).count(b"stop-the-world") == 3
