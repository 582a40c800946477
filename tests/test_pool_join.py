"""The pool hands a subscriber's batches over a few at a time where its map
joins results (``map.join``: tail's Render): one task of the pool and one
hand-over each way for several batches, each of which holds the GIL.

A generation of the recorded trace (tests/corpus) is one batch as the
decoder cuts it (4,096 events a batch); here batches of 64 events make each
generation many, so that the pool joins them: tail still writes the same
bytes with --jobs 4 as with 1, a subscriber of joined results gets what
one job gives, a piece at a time, and a lossy one is still told exactly
what it lost.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from livetrace._items import Notice, SubscriberGap
from livetrace._protocol.address import parse_address
from livetrace._session.pipeline import MAP_GROUP_EVENTS
from livetrace._session.session import Session
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.modern import decoder

from .test_pool_bound import Replay, info
from .test_pool_identity import IDS, VIEWS, serve_modern, tail_socket

pytestmark = pytest.mark.slow_twin  # the twin decodes the trace in Python: seconds, not the inner loop


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decoder, "BATCH_EVENTS", 64)


class Sizes:
    """A map whose results join: each batch's size, in a list."""

    def __call__(self, batch: EventBatch) -> Callable[[], list[int]]:
        return lambda: [len(batch)]

    @staticmethod
    def join(done: list[list[int]]) -> list[int]:
        return [n for sizes in done for n in sizes]


async def sizes(jobs: int, lossy: bool = False) -> tuple[list[object], int, int, int]:
    """What a Sizes subscriber gets (with a lossless one beside it that reads
    everything first, when lossy), what it lost, and the events decoded."""
    async with trio.open_nursery() as n:
        session = Session(Replay(), parse_address("unix:/nowhere"), info(), n, jobs=jobs)
        everything = session.subscribe(what="batches", lossless=True, buffer=1) if lossy else None
        sub = session.subscribe(what="batches", buffer=1, lossless=not lossy, map=Sizes())
        if everything is not None:
            async for _ in everything:  # reads the lossy one only at the end
                await trio.sleep(0)
            got = [x async for x in sub]
        else:
            got = []
            async for x in sub:
                got.append(x)
                await trio.sleep(0.001)  # slower than the pool: its pieces are done before they are taken
    return got, sub.lost_batches, sub.lost_events, session.counters.events


@pytest.mark.parametrize("view", VIEWS, ids=IDS)
async def test_tail_writes_the_same_bytes_with_one_job_and_four_from_many_batches(
    tmp_path: Path, view: tuple[str, str, bool, object]
) -> None:
    one, four = await tail_socket(tmp_path, serve_modern, view, [(1, None), (4, None)])  # type: ignore[arg-type]  # a view
    assert one.count("\n") > 20 or view[3] is not None
    assert four == one


async def test_a_joining_map_gets_several_batches_an_item_and_what_one_job_gives() -> None:
    one, _, _, events = await sizes(1)
    four, _, _, events4 = await sizes(4)
    assert events == events4 > 1000
    batches = [s for x in one if isinstance(x, list) for s in x]
    assert len(batches) > 12 and all(len(x) == 1 for x in one if isinstance(x, list))
    assert [s for x in four if isinstance(x, list) for s in x] == batches
    assert max(len(x) for x in four if isinstance(x, list)) >= 4  # joined
    assert all(sum(x) <= MAP_GROUP_EVENTS for x in four if isinstance(x, list) and len(x) > 1)
    assert sum(batches) == events


async def test_a_lossy_joining_subscriber_is_told_exactly_what_it_lost() -> None:
    got, lost_batches, lost_events, total = await sizes(4, lossy=True)
    gaps = [x for x in got if isinstance(x, SubscriberGap)]
    kept = [n for x in got if not isinstance(x, Notice) for n in x]  # type: ignore[attr-defined]  # lists
    assert gaps and lost_batches > 0
    assert sum(g.batches for g in gaps) == lost_batches
    assert sum(g.events for g in gaps) == lost_events
    assert sum(kept) + lost_events == total
