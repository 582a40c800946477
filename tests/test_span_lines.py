"""`tail --spans`'s lines written from a SpanBatch's columns: the compiled
writer (span_lines.c) and its twin (SpanLines.twin_line) against each
other and against the lines of Span objects (span_dict, span_text: what
tail printed before), byte for byte, in both formats and in colour: on
Go's text-form tests, the corpus's traces, demo traces, hand-picked odd
values and hostile columns (where both must fail alike)."""

from __future__ import annotations

import contextlib
import json
import os
from array import array
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from livetrace import ModernDecoder, TraceFormatError
from livetrace._cli.render.color import paint_line
from livetrace._cli.render.jsonl import utf8
from livetrace._cli.render.spans import SPAN_KIND_WIDTH, SpanLines, first_spans, span_dict, span_text
from livetrace._files import decode_batches
from livetrace._protocol.text import json_safe
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.tables import Tables
from livetrace._trace.spans.batch import COLUMNS, SpanBatch
from livetrace._trace.spans.builder import SpanBuilder
from livetrace._trace.spans.model import Span

from . import textform
from .test_span_join import split
from .test_spans import batches_of

LEGACY = textform.CORPUS.parent / "legacy" / "go-testdata"
RUNTIME = textform.CORPUS.parent / "runtime"
TEXT_TESTS = [t for t in textform.all_tests() if t.data]
# The stress tests' many spans make the reference (a Span per row) take seconds: with the slow ones.
SMALL_TESTS = [t for t in TEXT_TESTS if "stress" not in t.name]
STRESS_TESTS = [t for t in TEXT_TESTS if "stress" in t.name]
pytestmark = [
    pytest.mark.skipif(
        os.environ.get("LIVETRACE_PURE_PYTHON") == "1",
        reason="compares both implementations; runs on the compiled pass",
    ),
    pytest.mark.compiled_core,
]
FORMATS = (("jsonl", False), ("text", False), ("text", True))


def reference(batches: list[list[Span]], fmt: str, color: bool, t0: int) -> bytes:
    """The lines tail wrote from Span objects (a batch's, made once for every format)."""
    out = []
    for b in batches:
        if fmt == "jsonl":
            out.append(utf8("".join(json_safe(json.dumps(span_dict(s), ensure_ascii=False)) + "\n" for s in b)))
            continue
        lines = []
        for s in b:
            line = span_text(s, t0)
            if color:
                line = paint_line(line, str(s.kind), line.index(" ") + 1, SPAN_KIND_WIDTH)
            lines.append(line + "\n")
        out.append(utf8("".join(lines)))
    return b"".join(out)


def outcome(batches: list[SpanBatch], fmt: str, color: bool, t0: int, compiled: bool) -> object:
    """The lines of the batches, or the error that stopped them."""
    w = SpanLines(fmt, color, compiled=compiled)
    try:
        return b"".join(w.encode(b, t0) for b in batches)
    except Exception as e:  # the twin's error, whatever it is, must be the core's
        return (type(e).__name__, str(e))


def first_difference(a: object, b: object) -> tuple[object, object]:
    if isinstance(a, bytes) and isinstance(b, bytes):
        pairs = zip(a.split(b"\n"), b.split(b"\n"), strict=False)
        return next(((x, y) for x, y in pairs if x != y), (len(a), len(b)))
    return a, b


def assert_lines_agree(batches: list[SpanBatch], t0: int | None = None, with_reference: bool = True) -> None:
    if t0 is None:
        t0 = next((b.starts[0] for b in batches if len(b)), 0)
    spans = [list(b) for b in batches] if with_reference else []
    for fmt, color in FORMATS:
        fast = outcome(batches, fmt, color, t0, True)
        twin = outcome(batches, fmt, color, t0, False)
        assert fast == twin, (fmt, color, *first_difference(fast, twin))
        if with_reference:
            ref = reference(spans, fmt, color, t0)
            assert fast == ref, (fmt, color, *first_difference(fast, ref))


def spans_of(batches: list[EventBatch]) -> list[SpanBatch]:
    b = SpanBuilder(compiled=True)
    return [b.feed(x) for x in batches] + [b.close()]


def text_test_spans(data: bytes) -> list[SpanBatch]:
    d = ModernDecoder(compiled=True)
    out: list[EventBatch] = []
    with contextlib.suppress(TraceFormatError):
        out.extend(d.feed_batches(data))
        out.extend(d.close_batches())
    return spans_of(out)


def file_spans(path: Path) -> list[SpanBatch]:
    out: list[EventBatch] = []
    with contextlib.suppress(TraceFormatError):
        out.extend(b for b in decode_batches(path, compiled=True) if isinstance(b, EventBatch))
    return spans_of(out)


@pytest.mark.parametrize(
    "t", [*SMALL_TESTS, *(pytest.param(t, marks=pytest.mark.slow) for t in STRESS_TESTS)], ids=lambda t: t.name
)
def test_lines_agree_on_go_text_form_tests(t: textform.TextTrace) -> None:
    spans = text_test_spans(t.data)
    assert_lines_agree(spans)
    ends = [b.ends[-1] for b in spans if len(b)]
    if ends:  # starts before t0 too: negative offsets
        assert_lines_agree(spans, max(ends))


@pytest.mark.parametrize(
    "path", [LEGACY / "user_task_region_1_21_good", RUNTIME / "go126-empty-stack-last.trace"], ids=lambda p: p.name
)
def test_lines_agree_on_small_traces(path: Path) -> None:
    """Tasks and regions with logs (their lines are the twin's), empty stacks."""
    spans = file_spans(path)
    assert sum(map(len, spans)) > 20
    assert_lines_agree(spans)


@pytest.mark.slow
@pytest.mark.parametrize(
    "path",
    sorted([*LEGACY.glob("*_1_1[1-9]_good"), *LEGACY.glob("*_1_2?_good"), *RUNTIME.glob("*.trace")]),
    ids=lambda p: p.name,
)
def test_lines_agree_on_the_corpus(path: Path) -> None:
    assert_lines_agree(file_spans(path))


@pytest.mark.slow
def test_lines_agree_on_demo_traces(demo_traces: dict[str, Path]) -> None:
    for version, path in demo_traces.items():
        spans = file_spans(path)[:8]  # the reference makes a Span per row: a few batches are enough
        assert sum(map(len, spans)) > 10_000, version
        assert_lines_agree(spans)


# ---- hand-built batches: odd strings and numbers ----

NAMES = [
    b"",
    b"chan receive",
    b'a "quoted"\n\\ one\t\r',
    b"\xff\xfe bad utf-8 \xc3",
    "héllo ✓ 😀".encode(),
    b"\x1b[2J\x1b]52;c;cHduZWQ=\x07\x7f\xc2\x9b31m",
    "\u202e\u2028\u200f\U000e0001 format".encode(),
    b"x" * 600,
]
TABLES = {
    0: Tables(
        7,
        strings=dict(enumerate(NAMES)),
        stacks={0: (), 1: (0x100,), 2: (0x200, 0x100), 3: (0x999,), 4: ()},  # 0x999: no frame
        frames={0x100: (1, 4, 10), 0x200: (3, 6, 20)},
    ),
    1: Tables(
        8, strings={0: b"", 1: b"main.main", 2: b"/src/\xffmain.go"}, stacks={0: (), 1: (0x1,)}, frames={1: (1, 2, 3)}
    ),
}


def batch(rows: list[dict[str, int]], logs: Mapping[int, tuple[tuple[bytes, bytes], ...]] | None = None) -> SpanBatch:
    cols = []
    for name, typ in COLUMNS:
        default = -1 if name == "procs" else 1 if name == "resource_kinds" else 0
        cols.append(array(typ, [r.get(name, default) for r in rows]).tobytes())
    return SpanBatch(cols, TABLES, NAMES, logs)


DURATIONS = [
    -5,
    0,
    999,
    1000,
    1049,
    1050,
    1150,
    1250,
    99_950,
    999_949,
    999_950,
    999_999,
    1_000_000,
    1_005_000,
    1_015_000,
    1_025_000,
    999_995_000,
    999_994_999,
    1_000_000_000,
    1_005_000_000,
    1_015_000_000,
    10**15 - 5_000_000,
    10**15 + 5_000_000,
    10**18 + 15_000_000,
    (1 << 63) - 1,
]
OFFSETS = [0, 1, 499, 500, 501, 1500, 2500, -1, -500, -1500, 10**15 + 500, -(10**15) - 500, 123_456_789_500]


def test_lines_agree_on_odd_durations_and_offsets() -> None:
    """Rounding ties (where the float's error decides), unit boundaries,
    negative and huge values: the core's integer path or printf, the
    twin's format(), the same digits."""
    rows = [{"kinds": 0, "resource_ids": 3, "starts": 0, "ends": d, "procs": 1} for d in DURATIONS]
    rows += [{"kinds": 2, "resource_ids": 4, "starts": o, "ends": o + 1} for o in OFFSETS]
    assert_lines_agree([batch(rows)], 0)
    assert_lines_agree([batch(rows)], 10**12 + 500)


def test_lines_agree_on_odd_strings_stacks_and_fields() -> None:
    rows = [
        {
            "kinds": k,
            "resource_kinds": k % 3,
            "resource_ids": i - 1,
            "starts": 10 * i,
            "ends": 10 * i + 12_345,
            "start_stacks": (0, 1, 2, 4)[i % 4],
            "end_stacks": (0, 1, 2, 4)[(i + k) % 4],
            "start_tables": k % 3,  # 2: tables the batch does not have
            "end_tables": i % 2,
            "reasons": i,
            "names": (i + 1) % len(NAMES),
            "task_names": (i + k) % len(NAMES),
            "tasks": k * ((1 << 64) - 1) // 8,
            "flags": k % 4,
            "procs": i - 2,
        }
        for i in range(len(NAMES))
        for k in range(9)
    ]
    logs: dict[int, tuple[tuple[bytes, bytes], ...]] = {
        3: ((b"cat", b"msg \x1b \xff"),),
        10: ((b"", b""), (b"\xe2\x80\xae", b"x")),
    }
    assert_lines_agree([batch(rows, logs)])
    assert_lines_agree([batch(rows, logs)], 1 << 62)


def test_lines_agree_on_numbers_of_every_length() -> None:
    """Each number of 1 to 20 digits, at the edges where the core's digits
    change how they are cut (eight at a time, then two): ids, times,
    durations, Ps and tasks, both signs."""
    edges = sorted({v for k in range(20) for v in (10**k - 1, 10**k, 10**k + 1)} - {-1})
    rows = [
        {
            "kinds": i % 9,
            "resource_kinds": i % 3,
            "resource_ids": sign * min(v, (1 << 63) - 1),
            "starts": -min(v, (1 << 62)) // 2,
            "ends": min(v, (1 << 62)) // 2,
            "procs": min(v, (1 << 63) - 1),
            "tasks": v,
        }
        for i, v in enumerate([*edges, (1 << 63) - 1, (1 << 64) - 1])
        for sign in (1, -1)
    ]
    assert_lines_agree([batch(rows)])


def test_first_spans_keeps_the_first_rows_and_their_logs() -> None:
    logs: dict[int, tuple[tuple[bytes, bytes], ...]] = {1: ((b"a", b"b"),), 4: ((b"c", b"d"),)}
    b = batch([{"kinds": 7, "starts": i, "ends": i + 1} for i in range(5)], logs)
    head = first_spans(b, 2)
    assert [s.start for s in head] == [0, 1] and head.logs == {1: ((b"a", b"b"),)}
    assert first_spans(b, 9) is b


ANY_I64 = st.one_of(st.integers(-2, 2_000_000_000), st.integers(-(1 << 63), (1 << 63) - 1))
ANY_U64 = st.one_of(st.integers(0, 5), st.integers(0, (1 << 64) - 1))


@st.composite
def hostile_rows(draw: st.DrawFn) -> SpanBatch:
    n = draw(st.integers(1, 8))
    rows = [
        {
            "kinds": draw(st.one_of(st.integers(0, 8), st.integers(0, 255))),
            "resource_kinds": draw(st.one_of(st.integers(0, 2), st.integers(0, 255))),
            "resource_ids": draw(ANY_I64),
            "starts": draw(ANY_I64),
            "ends": draw(ANY_I64),
            "start_stacks": draw(ANY_U64),
            "end_stacks": draw(ANY_U64),
            "start_tables": draw(st.integers(0, 3)),
            "end_tables": draw(st.integers(0, 3)),
            "reasons": draw(st.integers(0, len(NAMES) + 1)),  # past the table: an IndexError
            "names": draw(st.integers(0, len(NAMES) - 1)),
            "task_names": draw(st.integers(0, len(NAMES) - 1)),
            "tasks": draw(ANY_U64),
            "flags": draw(st.integers(0, 255)),
            "procs": draw(ANY_I64),
        }
        for _ in range(n)
    ]
    logs: dict[int, tuple[tuple[bytes, bytes], ...]] = dict.fromkeys(
        draw(st.sets(st.integers(0, n - 1))), ((b"c", b"m"),)
    )
    return batch(rows, logs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_rows(), st.one_of(st.just(0), ANY_I64))
def test_twins_agree_on_hostile_columns(spans: SpanBatch, t0: int) -> None:
    assert_lines_agree([spans], t0, with_reference=False)


@pytest.mark.parametrize("fmt", ["jsonl", "text"])
def test_a_stack_or_name_is_made_once_whatever_generations_name_it(fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each generation names its stacks with ids of its own, and built in
    the pool, its names too (and a live tail writes each with a SpanLines
    of its own: Render): the pieces are kept by what they show, so a stack
    or a name that every generation has is made into JSON (or text) once,
    not once per generation; and the lines are those of pieces made afresh
    for each batch."""
    from livetrace._cli.render import spans as render
    from livetrace._cli.render.parts import stack_content
    from livetrace._cli.tail import Render, View

    made: list[object] = []
    stack_maker, name_maker = (
        (render._stack_json, render._name_json) if fmt == "jsonl" else (render._stack_text, render._name_text)
    )

    def stack(t: Tables, sid: int) -> bytes:
        made.append(stack_content(t, sid))
        return stack_maker(t, sid)

    def name(raw: bytes) -> bytes:
        made.append(raw)
        return name_maker(raw)

    batches, _ = split(batches_of((RUNTIME / "go126-generations.trace").read_bytes()), True, ())
    batches = [b for b in batches if len(b)]
    t0 = batches[0].starts[0]
    each = b"".join(SpanLines(fmt).encode(b, t0) for b in batches)  # pieces made afresh
    suffix = "json" if fmt == "jsonl" else "text"
    monkeypatch.setattr(render, f"_stack_{suffix}", stack)
    monkeypatch.setattr(render, f"_name_{suffix}", name)
    lines = Render(View(fmt, None, True, False))
    assert b"".join(p for b in batches for p in lines(b)().pieces) == each
    assert len({id(b.names_table) for b in batches}) > 1  # names of several builders
    assert len({id(t) for b in batches for t in b.tables.values()}) > 1  # stacks of several generations
    assert any(isinstance(k, tuple) for k in made) and any(isinstance(k, bytes) for k in made)
    assert len(made) == len(set(made))
