"""A flight target with ``summaries = false``: the flight recorder's
captures without a summary per generation, so that its session decodes only
what its triggers need (a trigger on the process's RSS alone, nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from livetrace._agent.config import parse_config
from livetrace._errors import AgentConfigError
from tests.agentrun import agent, demo_named, lake_rows
from tests.test_agent_fleet import write_config

pytestmark = pytest.mark.once

FLIGHT = '[[target]]\nservice = "bare"\nexecutable = "bare*"\npolicy = "flight"\ntriggers = ["{trigger}"]\n'


def problems(text: str) -> list[str]:
    with pytest.raises(AgentConfigError) as e:
        parse_config(text, "agent.toml")
    return e.value.problems


def test_summaries_is_a_flight_targets_flag_on_by_default() -> None:
    on = parse_config(FLIGHT.format(trigger="gc>50ms"))
    off = parse_config(FLIGHT.format(trigger="gc>50ms") + "summaries = false\n")
    assert on.targets[0].summaries and not off.targets[0].summaries
    assert problems(FLIGHT.format(trigger="gc>50ms") + 'summaries = "no"\n') == [
        "[[target]] 1.summaries (line 6): must be true or false, not 'no'"
    ]
    assert problems('[[target]]\npolicy = "continuous"\nsummaries = false\n') == [
        "[[target]] 1.summaries (line 3): does not apply to policy 'continuous'"
    ]


@pytest.mark.slow
async def test_a_flight_target_without_summaries_keeps_its_captures_and_makes_no_summary(tmp_path: Path) -> None:
    state = tmp_path / "state"
    target = FLIGHT.format(trigger="rss>1MiB") + 'keep = "2s"\nafter = "0.5s"\ncooldown = "600s"\nsummaries = false\n'
    conf = write_config(tmp_path / "agent.toml", state, target)
    async with demo_named("1.26", tmp_path, "bare") as demo, agent(conf, tmp_path / "agent.log") as a:
        await a.until(lambda _: bool(lake_rows(state / "lake", "captures", "source")), 60, "a capture recorded")
        await trio.sleep(2)  # generations past the capture: a summary of each would be in by now
        assert await a.stop() == 0
    captures = lake_rows(state / "lake", "captures", "source, trigger, pid")
    assert captures[0] == ("flight dump", "rss>1MiB", demo.pid)
    assert lake_rows(state / "lake", "summaries", "pid") == []
