"""`livetrace tail` with filters: what it prints is what the filter keeps
from the full stream, and a summary line counts it."""

from __future__ import annotations

import json

import pytest
import trio

from livetrace._cli.filters import duration_ns, kind_names
from livetrace._trace.model.events import KIND_NAMES

from .conftest import cli, demo


def test_kind_globs_and_negation() -> None:
    names = KIND_NAMES[1:]
    assert kind_names(["Task*"], names) == {"TaskBegin", "TaskEnd"}
    assert kind_names(["!StateTransition", "!Sync"], names) == set(names) - {"StateTransition", "Sync"}
    assert kind_names(["Range*", "!RangeActive"], names) == {"RangeBegin", "RangeEnd"}
    with pytest.raises(ValueError, match="no kind matches"):
        kind_names(["Nope"], names)
    assert (duration_ns("1ms"), duration_ns("500us"), duration_ns("2.5s")) == (1_000_000, 500_000, 2_500_000_000)


@pytest.mark.slow
async def test_tail_shows_what_its_filters_keep() -> None:
    async with demo("1.26", args=["-workers", "1"]) as d:
        args = ("--format", "jsonl", "--duration", "2.5", "--color", "always")
        proc = cli("tail", d.trace_address, *args, "-k", "Task*", "-k", "Log", "--log", "stat*", "--proc", "0,1,2,3")
        out, err = await trio.to_thread.run_sync(lambda: proc.communicate(timeout=120))
    assert proc.returncode == 0, err
    objs = [json.loads(line) for line in out.splitlines()]  # jsonl is never coloured
    assert objs and all(o["kind"] == "Log" and o["category"].startswith("stat") and o["p"] in range(4) for o in objs)
    summary = next((line for line in err.splitlines() if line.startswith("summary:")), err)
    assert f"{len(objs):,} events shown" in summary
