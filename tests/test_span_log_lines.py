"""A task's or region's span with logs (a busy service's request spans,
thousands a second) has its JSON line written by the compiled writer
(span_lines.c), which takes only the logs' JSON from Python: the twin wrote
each such line whole, several times the cost. The bytes stay the twin's."""

from __future__ import annotations

import json
import os
from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._cli.render.spans import SpanLines, logs_json
from livetrace._protocol.text import json_safe
from livetrace._trace.accel import ccore
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import SPAN_KIND_NAMES

from .conftest import examples
from .test_span_lines import batch

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("LIVETRACE_PURE_PYTHON") == "1",
        reason="compares both implementations; runs on the compiled pass",
    ),
    pytest.mark.compiled_core,
]


class CoreOnly(SpanLines):
    """SpanLines whose twin must not be asked for a line."""

    def twin_line(self, spans: SpanBatch, i: int, t0: int, p: object) -> bytes:
        raise AssertionError(f"span {i} handed to the twin")


def test_spans_with_logs_are_the_cores() -> None:
    rows = [{"kinds": 7, "starts": i, "ends": i + 5, "tasks": i, "names": 1, "start_stacks": 1} for i in range(6)]
    logs = {
        0: ((b"status", b"200 OK"),),
        3: ((b"", b""), (b"c\xff", "\u2028\x1b\u00e9".encode())),
        5: ((b"k", b'"quoted"\n'),),
    }
    spans = batch(rows, logs)
    got = b"".join(CoreOnly("jsonl").pieces(spans, 0))
    assert got == SpanLines("jsonl").encode_twin(spans, 0)
    assert got.count(b'"logs": ') == 3


@pytest.mark.parametrize("per", [1, 3, 10, 11, 0])
def test_a_batch_in_one_call_comes_in_pieces_of_the_lines_asked(per: int) -> None:
    """One call writes the whole batch (a call per piece cost its columns'
    buffers and caches each time), cut where asked: 0, one piece."""
    rows = [{"kinds": 7, "starts": i, "ends": i + 5, "tasks": i, "names": 1, "start_stacks": 1} for i in range(10)]
    spans = batch(rows, {4: ((b"status", b"200 OK"),)})
    lines = SpanLines("jsonl")
    p = lines._pieces_for(spans)  # the caches pieces() hands the core
    cols = [c.cast("B") for c in spans.columns()]
    kinds = tuple(n.encode() for n in SPAN_KIND_NAMES)
    got = ccore.span_lines(
        cols,
        0,
        10,
        True,
        0,
        kinds,
        p.pieces["name"],
        p.pieces["stack"],
        partial(p.miss, spans.tables),
        spans.logs,
        lambda i: lines.twin_line(spans, i, 0, p),
        lambda i: logs_json(spans.logs[i]),
        per,
    )
    assert [piece.count(b"\n") for piece in got] == ([per] * (10 // per) + [10 % per] * (10 % per > 0) if per else [10])
    assert b"".join(got) == lines.encode_twin(spans, 0)


_LOG_BYTES = st.lists(
    st.sampled_from([b"a", b"\x00", b"\x7f", b"\xc2\x85", b"\xe2\x80\xa8", b"\xff", b'"', b"\\", b"\xf0\x9f\x98\x80"]),
    max_size=4,
).map(b"".join)


@settings(max_examples=examples(300))
@given(st.lists(st.tuples(_LOG_BYTES, _LOG_BYTES), max_size=4))
def test_logs_json_is_the_json_of_their_list(logs: list[tuple[bytes, bytes]]) -> None:
    """Each log's JSON is kept and the list's joined from them: the bytes of
    the whole list's JSON, escapes and all."""
    entries = [{"category": c.decode("utf-8", "replace"), "message": m.decode("utf-8", "replace")} for c, m in logs]
    assert logs_json(logs) == json_safe(json.dumps(entries, ensure_ascii=False)).encode()
    assert logs_json(logs) == logs_json(list(logs))  # (again: from the kept pieces)
