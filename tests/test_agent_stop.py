"""A stopping agent whose summaries are far behind its sessions loses
nothing unrecorded: what it had decoded when the stop's grace ran out is
summarized, and what it had received and not summarized, what the helper
shed, are each an ``agent_log`` row (``cut_off``, ``generations_shed``)."""

from __future__ import annotations

import io
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import trio

from livetrace._agent import agent as agent_module
from livetrace._agent.agent import Agent
from livetrace._agent.budget import Budget
from livetrace._agent.config import Budget as BudgetConfig
from livetrace._agent.config import Target, parse_config
from livetrace._agent.policies import Summaries, Traced, summaries, summarize
from livetrace._files import decode_batches
from livetrace._go.demo import run_demo
from livetrace._items import Gap, SpanMark
from livetrace._nursery import open_nursery
from livetrace._session.limits import Counters
from livetrace._session.subscribers import Fanout
from tests.agentrun import lake_rows, named_copy
from tests.conftest import demo_exe

CORPUS = Path(__file__).parent / "corpus" / "runtime"
GENERATIONS = CORPUS / "go126-generations.trace"  # five generations, a batch each, and the end marker


class Recorded:
    """A traced process's rows and records, as the agent would spool them."""

    def __init__(self, tmp_path: Path) -> None:
        self.rows: list[dict[str, Any]] = []
        self.notes: list[tuple[str, int, str]] = []
        self.traced = Traced(
            address="unix:/nowhere",
            pprof=False,
            target=Target(),
            provenance={"host": "h", "service": "s", "pid": 7, "go_version": "go1.26.6", "policy": "continuous"},
            captures=tmp_path,
            emit=lambda table, rows: self.rows.extend(rows) if table == "summaries" else None,
            budget=Budget(BudgetConfig(), lambda *_: None),
            note=lambda event, count, detail: self.notes.append((event, count, detail)),
            stop=trio.Event(),
        )

    def generations(self) -> list[tuple[int, int]]:
        return [(r["first_generation"], r["last_generation"]) for r in self.rows]


async def publish(fanout: Fanout, items: Iterable[object]) -> None:
    for item in items:
        await fanout.publish(item)


@pytest.mark.once
async def test_a_summarizer_cut_off_summarizes_what_it_was_handed_and_counts_the_rest(tmp_path: Path) -> None:
    fanout = Fanout()
    feed = summaries(fanout)
    await publish(fanout, list(decode_batches(GENERATIONS))[:3])  # handed over: generations 1 to 3
    counters = Counters(last_generation=5, events=5188 + 40)  # what it received; 40 events in flight
    got = Recorded(tmp_path)
    with trio.CancelScope() as scope:  # the agent's stop grace is over
        scope.cancel()
        await summarize(feed, got.traced, counters)
    assert got.generations() == [(1, 1), (2, 2), (3, 3)]  # decoded and handed over: summarized
    assert [(e, n) for e, n, _ in got.notes] == [("cut_off", 2)], got.notes
    assert got.notes[-1][2].endswith(
        "2 generations received and not summarized after generation 3, and 1,826 events decoded and not summarized"
    )


@pytest.mark.once
async def test_the_generations_a_helper_shed_are_the_agents_records(tmp_path: Path) -> None:
    fanout = Fanout()
    feed = summaries(fanout)
    items = list(decode_batches(GENERATIONS))
    shed = Gap(first_generation=6, last_generation=8, chunks=9, bytes=4096, discard_received=False)
    await publish(fanout, [*items[:2], shed, *items[2:]])
    await fanout.publish_end()
    fanout.finish()
    got = Recorded(tmp_path)
    await summarize(feed, got.traced, Counters(last_generation=5))
    assert got.generations() == [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]
    assert got.rows[1]["shed_generations"] == 3  # the summary before them counts them
    assert [(e, n) for e, n, _ in got.notes] == [("generations_shed", 3)], got.notes
    assert "generations 6 to 8 shed by the helper" in got.notes[0][2]


def shed_ranges(notes: list[tuple[Any, ...]]) -> set[int]:
    out: set[int] = set()
    for (detail,) in notes:
        m = re.match(r"generations (\d+) to (\d+) shed", detail)
        assert m is not None, detail
        out |= set(range(int(m[1]), int(m[2]) + 1))
    return out


@pytest.mark.slow
@pytest.mark.once
async def test_an_agent_stopped_far_behind_records_every_generation_it_did_not_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo's helper with its smallest queue (1 MiB), and the agent's
    summarizer slowed as a loaded machine slows it (a sleep in its event
    loop): it stalls for 4 s at its first batch, and the helper sheds; then
    it goes at full speed until the stop, and at 5 batches a second after it
    (the demo makes some 100), so that the stop's grace, made short, cuts it
    off far behind."""
    feed = Summaries.feed
    stop = trio.Event()
    stalled = [False]

    def slow(self: Summaries, item: object) -> list[dict[str, Any]]:
        if isinstance(item, SpanMark) and not stalled[0]:
            stalled[0] = True
            time.sleep(4.0)
        elif isinstance(item, SpanMark) and stop.is_set():
            time.sleep(0.2)
        return feed(self, item)

    monkeypatch.setattr(Summaries, "feed", slow)
    monkeypatch.setattr(agent_module, "STOP_GRACE", 2.0)
    state = tmp_path / "state"
    config = parse_config(
        f'[agent]\nstate_dir = "{state}"\nscan_interval = "0.5s"\nflush_interval = "0.5s"\n'
        '[agent.budget]\ncpu_per_process = 1.0\nmemory = "8GiB"\n'
        '[[target]]\nservice = "far"\nexecutable = "stop-far*"\npolicy = "continuous"\n'
    )
    old = os.umask(0o077)
    try:
        async with run_demo(named_copy(demo_exe("1.26"), tmp_path, "stop-far"), args=["-queue-mb", "1"]):
            agent = Agent(config, io.StringIO())
            async with open_nursery() as nursery:
                nursery.start_soon(agent.run, None, False, stop)
                with trio.fail_after(30):
                    while not stalled[0]:  # set by the summarizer
                        await trio.sleep(0.1)
                await trio.sleep(6)
                stop.set()
    finally:
        os.umask(old)
    lake = state / "lake"
    rows = lake_rows(lake, "summaries", "first_generation, last_generation")
    log = {e: lake_rows(lake, "agent_log", "count, detail", f"event = '{e}'") for e in ("cut_off", "detached")}
    assert len(log["detached"]) == 1 and log["detached"][0][1].endswith("cut off: the agent stopped"), log
    # What it had decoded is summarized, and the rest is counted from there on.
    ((behind, detail),) = log["cut_off"]
    assert rows and f"after generation {rows[-1][1]}, and " in detail, (behind, detail, rows)
    # Each generation before it is in a summary, or in a record of what the helper shed.
    shed = shed_ranges(lake_rows(lake, "agent_log", "detail", "event = 'generations_shed'"))
    assert shed, rows  # the stall made the helper shed
    stored = {g for first, last in rows for g in range(first, last + 1)}
    missing = set(range(rows[0][0], rows[-1][1] + 1)) - stored - shed
    assert not missing, (sorted(missing), rows, sorted(shed))
