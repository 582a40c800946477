"""The agent's selectors and budget, as plain data: which process a target
picks, and how the budget stretches sampling and says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from livetrace._agent.agent import match
from livetrace._agent.budget import MAX_STRETCH, Budget
from livetrace._agent.config import Budget as BudgetConfig
from livetrace._agent.config import Target
from livetrace._agent.policies import Summaries, summaries
from livetrace._attach.buildinfo import BuildInfo, Module
from livetrace._attach.processes import Kind, ProcessInfo
from livetrace._files import decode_batches
from livetrace._items import Gap, SegmentGap
from livetrace._session.subscribers import Fanout

pytestmark = pytest.mark.once
CORPUS = Path(__file__).parent / "corpus" / "runtime"


def process(name: str = "api", user: str = "svc", module: str | None = "example.com/shop/api") -> ProcessInfo:
    build = BuildInfo("go1.26.6", "example.com/shop/api/cmd", Module(module, "v1.2.3", "") if module else None)
    return ProcessInfo(4242, user, [f"/srv/bin/{name}", "-flag"], name[:15], 0.0, Kind.GO, build=build)


@pytest.mark.parametrize(
    ("target", "picked"),
    [
        (Target(), True),
        (Target(module="example.com/shop/*"), True),
        (Target(module="example.com/bank/*"), False),
        (Target(executable="api"), True),
        (Target(executable="a?i"), True),
        (Target(executable="web*"), False),
        (Target(user="svc"), True),
        (Target(user="root"), False),
        (Target(module="example.com/shop/*", executable="api", user="root"), False),  # every selector must match
    ],
)
def test_every_selector_given_must_match(target: Target, picked: bool) -> None:
    assert match(target, process()) is picked


def test_the_executable_is_matched_by_its_whole_name_and_a_binary_without_module_by_its_package() -> None:
    long = process(name="checkout-service-v2")  # psutil's name is cut to 15 characters; argv[0]'s is whole
    assert match(Target(executable="checkout-service-v2"), long)
    bare = process(module=None)
    assert match(Target(module="example.com/shop/api/cmd"), bare)


def test_over_budget_it_samples_less_and_says_so_and_never_more_than_the_cap() -> None:
    notes: list[tuple[str, int, str]] = []
    budget = Budget(BudgetConfig(cpu_per_process=0.05, memory=100 << 20), lambda *n: notes.append(n))
    budget.add(1)
    budget.add(2)  # 10% of a core for two processes
    budget.check(0.08, 50 << 20)
    assert budget.stretch() == 1 and not notes
    budget.check(0.12, 50 << 20)
    assert budget.stretch() == 2 and notes[-1][0] == "budget_cut"
    assert "CPU 12.0% of a core (budget 10.0%)" in notes[-1][2]
    budget.check(0.01, 150 << 20)  # memory alone
    assert budget.stretch() == 4
    for _ in range(20):
        budget.check(1.0, 1 << 30)
    assert budget.stretch() == MAX_STRETCH
    budget.check(0.06, 10 << 20)  # under budget, not well under: no change
    assert budget.stretch() == MAX_STRETCH
    budget.check(0.04, 10 << 20)
    assert budget.stretch() == MAX_STRETCH / 2 and notes[-1][0] == "budget_restored"


async def test_a_loss_after_the_last_row_still_makes_a_row() -> None:
    """Generations the helper shed after a segment's end, with no batch after them (a session ending
    far behind), are a row of their own, not a count nobody reads."""
    fanout = Fanout()
    feed = summaries(fanout)
    got = Summaries(feed.events.take_buffered)
    rows: list[dict[str, Any]] = []
    for item in [*decode_batches(CORPUS / "go126-empty-stack-last.trace"), SegmentGap(0, 1_000_000, 1_281_512)]:
        await fanout.publish(item)
        rows += [r for x in feed.spans.take_buffered() for r in got.feed(x)]
    assert rows and all(r["shed_generations"] == 0 for r in rows)
    assert got.feed(Gap(first_generation=7, last_generation=9, chunks=3, bytes=12_000, discard_received=False)) == []
    (last,) = got.end()
    assert last["shed_generations"] == 3 and last["events"] == 0
    assert got.end() == []  # counted once
