"""One feeder (_views/top.TopFeeder) feeds `top` and the agent's summaries
from a span subscription with marks and one of summarized batches. Where
they differ is said in one argument: a live modern trace ends with a batch
of one Sync and no generation's tables, which top shows as a snapshot of
its own (as a TopStats fed the batches does: tests/test_top_marks.py) and
the agent keeps in the last generation's row (a row of no generation is no
summary of one). A fake helper on a real unix socket (test_pool_views's
source, a generation shed on the way), through a real Session, with one
job and with four. No Go runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from livetrace._agent.policies import Summaries, summaries
from livetrace._session.session import Session

from .test_pool_views import both

pytestmark = pytest.mark.slow_twin


async def agent_rows(session: Session) -> bytes:
    """The agent's summary rows of the session (their numbers), and the events the session decoded."""
    feed = summaries(session)
    got = Summaries(feed.events.take_buffered)
    rows = []
    async with feed.events, feed.spans:
        async for item in feed.spans:
            rows += got.feed(item)
    rows += got.end()
    keep = ("first_generation", "last_generation", "events", "shed_generations")
    out = {"rows": [{k: r[k] for k in keep} for r in rows], "decoded": session.counters.events}
    return json.dumps(out).encode()


async def test_the_agent_keeps_a_live_traces_closing_sync_in_its_last_generations_row(tmp_path: Path) -> None:
    one, four = await both(tmp_path, "modern", agent_rows)
    assert four == one
    got = json.loads(one)
    rows = got["rows"]
    assert [(r["first_generation"], r["last_generation"]) for r in rows] == [(1, 1), (2, 2), (4, 4), (5, 5)]
    assert [r["shed_generations"] for r in rows] == [0, 1, 0, 0]  # generation 3: the row before it counts it
    assert sum(r["events"] for r in rows) == got["decoded"]  # the closing Sync's one event too
