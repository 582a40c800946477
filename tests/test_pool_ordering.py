"""A live session with a pool orders its generations in the pool (issue 27:
1), each as soon as it is complete, and its events come out as soon as it
is ordered, though no more frames come; the generations in flight, ordered
or held by the line, stay within jobs + 1.

A real Session is fed a recorded trace of five generations by a frame source
here, as a helper sends it (test_pool_bound.py's Replay)."""

from __future__ import annotations

import pytest
import trio

from livetrace._items import SpanMark
from livetrace._protocol.address import parse_address
from livetrace._protocol.frames import Chunk, End, Frame
from livetrace._session.session import Session
from livetrace._trace.model.batch import EventBatch

from .test_pool_bound import Replay, info


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
