"""A span subscriber's builder is made where spans are built from it: the
one-job path (``Fanout.prepare``) makes it when it first prepares an item
for one; with more jobs the pipeline builds spans on its own and the
fan-out makes none. Sans-IO: fast."""

from __future__ import annotations

import gc
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from livetrace import EventBatch, SpanBatch, SpanBuilder
from livetrace._files import decode_batches
from livetrace._session.subscribers import Fanout

TRACE = Path(__file__).parent / "corpus" / "runtime" / "go126-generations.trace"


def builders() -> int:
    return sum(isinstance(o, SpanBuilder) for o in gc.get_objects())


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The builders alive are counted, not the collector's garbage, which it
    could free between two counts."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.usefixtures("no_collector")
def test_subscribing_to_spans_makes_no_builder_until_one_is_fed() -> None:
    batches = [b for b in decode_batches(io.BytesIO(TRACE.read_bytes())) if isinstance(b, EventBatch)][:2]
    before = builders()
    fan = Fanout()
    spans = fan.subscribe(what="spans")
    assert builders() == before  # what a pool's pipeline (jobs > 1) leaves it at
    got = [x for b in batches for sub, x, _ in fan.prepare(b) if sub is spans]
    got += [x for sub, x, _ in fan.prepare_end() if sub is spans]
    assert builders() == before + 1

    fan.remove(spans)
    fan.prepare(batches[0])
    assert builders() == before  # none wants spans: the builder is let go

    reference = SpanBuilder()
    want = [s for b in batches for s in reference.feed(b)] + list(reference.close())
    assert [s for x in got if isinstance(x, SpanBatch) for s in x] == want != []
    assert fan.spans_built == len(want)
