"""Running a piece of the tests on one core or the other, whichever the pass is on."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from livetrace._cli.render.jsonl import JsonlEncoder
from livetrace._cli.render.provisional import ProvisionalJsonl
from livetrace._trace.model.batch import EventBatch


@contextmanager
def twin(on: bool) -> Iterator[None]:
    """Everything (decoder and formatter) on the pure-Python twin, or on the compiled core."""
    before = os.environ.get("LIVETRACE_PURE_PYTHON")
    os.environ["LIVETRACE_PURE_PYTHON"] = "1" if on else "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ["LIVETRACE_PURE_PYTHON"]
        else:
            os.environ["LIVETRACE_PURE_PYTHON"] = before


def jsonl_of(batch: EventBatch, compiled: bool, provisional: bool) -> bytes | str:
    """A batch's JSON lines (provisional: as a legacy trace's before its footer) by one core, or
    its error as a string (what the tables lack: the twin's, which the core's must be)."""
    with twin(not compiled):
        try:
            if provisional:
                return b"".join(ProvisionalJsonl().encode(batch))
            return b"".join(JsonlEncoder().encode_batch(batch))
        except Exception as e:
            return f"{type(e).__name__}: {e}"
