"""A task's or region's span with logs (a busy service's request spans,
thousands a second) has its JSON line written by the compiled writer
(span_lines.c), which takes only the logs' JSON from Python: the twin wrote
each such line whole, several times the cost. The bytes stay the twin's."""

from __future__ import annotations

import os

import pytest

from livetrace._cli.render.spans import SpanLines
from livetrace._trace.spans.batch import SpanBatch

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
