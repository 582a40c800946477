"""Each summary the agent stores is ``top --format json``'s snapshot of the
same generations: one live session feeds both top's own display (its JSON
lines, as ``top --format json`` prints them) and the agent's summarizer,
and every snapshot top showed of one generation is the agent's row for it."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from livetrace._agent.policies import Feed, Summaries, summaries
from livetrace._cli.top import _Display, _feed
from livetrace._nursery import open_nursery
from livetrace._session.connect import connect
from livetrace._views.top import TopStats
from livetrace._views.top_screen import View
from tests.conftest import demo

# once: the summarizer and top read the same decoded items, whichever core made them; on the
# slower twin top shows too few generations whole to compare.
pytestmark = [pytest.mark.slow, pytest.mark.once]


async def summarize(feed: Feed, rows: list[dict[str, Any]]) -> None:
    got = Summaries(feed.events.take_buffered)
    async with feed.events, feed.spans:
        async for item in feed.spans:
            rows += got.feed(item)
    rows += got.end()


@pytest.mark.parametrize("version", ["1.26", "1.21"])
async def test_each_summary_is_tops_snapshot_of_its_generation(version: str) -> None:
    out = io.StringIO()
    rows: list[dict[str, Any]] = []
    async with demo(version) as d, connect(d.trace_address, duration=8, advance=1.0, segment=1.0) as session:
        async with open_nursery() as nursery:
            # Both subscribe before the first frame is read: nothing checkpoints in between.
            nursery.start_soon(summarize, summaries(session), rows)
            # top --interval 0.1: a refresh is due at each generation (they come a second apart)
            await _feed(session, TopStats(), _Display(out, "json", View(), redraw=False), False, 0.1)
    shown = [json.loads(line) for line in out.getvalue().splitlines()]
    # The same generations: the same first and last, from the same first event to the same last (a
    # legacy trace's segments number theirs afresh; top may show two in one, or the session's closing
    # Sync apart, when its refresh was not due). Top's last snapshot is left out: it folds in what
    # came after the last generation (the closing Sync, a segment's gap notice).
    mine = {(r["first_generation"], r["last_generation"], r["start_ns"], r["end_ns"]): r for r in rows}
    compared = 0
    for snap in shown[:-1]:
        row = mine.get((snap["first"], snap["last"], snap["start"], snap["end"]))
        if row is not None:
            # index counts snapshots: top's may have covered two generations in one before this
            assert {**json.loads(row["top_json"]), "index": 0} == {**snap, "index": 0}
            compared += 1
    assert compared >= 3 and compared >= len(shown) // 2, ([(s["first"], s["last"]) for s in shown], sorted(mine))
