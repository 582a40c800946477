"""A live session with a pool orders its generations in the pool (issue 27:
1), each as soon as it is complete, and its events come out as soon as it
is ordered, though no more frames come; the generations in flight, ordered
or held by the line, stay within jobs + 1.

A real Session is fed a recorded trace of five generations by a frame source
here, as a helper sends it (test_pool_bound.py's Replay)."""

from __future__ import annotations

import io

import pytest
import trio

import livetrace
from livetrace._items import SpanMark
from livetrace._protocol.address import parse_address
from livetrace._protocol.frames import Chunk, End, Frame
from livetrace._session.pipeline import SPAN_BYTES
from livetrace._session.session import Session
from livetrace._trace.model.batch import EVENT_BYTES, EventBatch
from livetrace._trace.modern.parallel import COLUMN_BYTES_PER_WIRE_BYTE

from .test_pool_bound import Replay, info
from .test_pool_identity import MODERN
from .wirechunks import generations


class Gated(Replay):
    """The trace's first generation, then nothing until ``go`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.go = trio.Event()

    async def next_frame(self) -> Frame | End | None:
        f = self._frames[self._next] if self._next < len(self._frames) else None
        if isinstance(f, Chunk) and f.generation > 1:
            await self.go.wait()
        return await super().next_frame()


@pytest.mark.parametrize("what", ["batches", "spans"])
@pytest.mark.parametrize("jobs", [2, 4])
async def test_a_generation_comes_out_when_it_is_ordered_not_when_the_next_comes(what: str, jobs: int) -> None:
    source = Gated()
    got: list[object] = []
    async with trio.open_nursery() as n:
        session = Session(source, parse_address("unix:/nowhere"), info(), n, jobs=jobs)
        sub = session.subscribe(what="batches" if what == "batches" else "spans", lossless=True)
        with trio.fail_after(30):  # without the pool's wake-up, the first generation never comes
            async for item in sub:
                got.append(item)
                if not source.go.is_set():
                    first = [x for x in got if isinstance(x, EventBatch)]
                    assert what == "spans" or all(b.gen is not None and b.gen.gen == 1 for b in first)
                    source.go.set()
    assert len(got) > 5
    pump = session._pump
    assert pump is not None and pump.peak_in_flight >= 1  # ordered in the pool


@pytest.mark.parametrize("jobs", [2, 3])
async def test_generations_in_flight_stay_within_jobs_plus_one_with_a_slow_span_subscriber(jobs: int) -> None:
    async with trio.open_nursery() as n:
        session = Session(Replay(), parse_address("unix:/nowhere"), info(), n, jobs=jobs)
        slow = session.subscribe(what="spans", buffer=1, lossless=True, marks=True)
        marks = 0
        async for item in slow:
            marks += isinstance(item, SpanMark)
            await trio.sleep(0.02)  # the line fills; the pool must not order further ahead
    pump = session._pump
    assert pump is not None
    assert marks >= 5  # every generation's spans came
    # In flight: ordered in the pool or held by the line (a generation each, spans being built).
    assert 2 <= pump.peak_in_flight <= jobs + 1


@pytest.mark.parametrize("what", ["batches", "spans"])
async def test_the_cap_on_bytes_holds_what_the_pool_orders_too(what: str) -> None:
    # Three of the trace's generations: ordered columns as the pool counts them (by their size on the
    # wire), or a unit on the line (its events, and its spans).
    gens = generations(MODERN)
    wire = max(sum(len(b.payload) for bs in g.batches.values() for b in bs) for g in gens)
    per_gen: dict[int, int] = {}
    for b in livetrace.decode_batches(io.BytesIO(MODERN)):
        if isinstance(b, EventBatch) and b.gen is not None:
            per_gen[b.gen.gen] = per_gen.get(b.gen.gen, 0) + len(b)
    events = max(per_gen.values())
    unit = events * (EVENT_BYTES + (SPAN_BYTES if what == "spans" else 0))
    cap = 3 * max(wire * COLUMN_BYTES_PER_WIRE_BYTE, unit)
    async with trio.open_nursery() as n:
        session = Session(Replay(), parse_address("unix:/nowhere"), info(), n, jobs=4, max_pipeline_bytes=cap)
        slow = session.subscribe(what="batches" if what == "batches" else "spans", buffer=1, lossless=True)
        async for _ in slow:
            await trio.sleep(0.02)
    pump = session._pump
    assert pump is not None
    # More than one generation at once, but never more than the cap (five would fit the count alone).
    assert pump.peak_in_flight >= 2
    assert cap // 3 < pump.peak_bytes_in_flight <= cap
