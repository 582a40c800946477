"""`livetrace tail` with filters: what it prints is what the filter keeps
from the full stream, and a summary line counts it."""

from __future__ import annotations

import json
import re

import pytest
import trio

from livetrace._cli.filters import duration_ns, kind_names
from livetrace._cli.render.spans import span_dict
from livetrace._trace.model.events import KIND_NAMES, Resource, StackFrame
from livetrace._trace.spans.model import Span, SpanKind

from .conftest import ROOT, cli, demo


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


def documented_span_fields() -> set[str]:
    """The fields docs/events-jsonl.md's span table names."""
    text = (ROOT / "docs" / "events-jsonl.md").read_text()
    section = text.split("## Spans", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([a-z_]+)`", row.split("|")[1])}


def test_every_span_field_is_documented() -> None:
    frames = [StackFrame("main.main", "/x/main.go", 3, 0x10)]
    full = Span(
        SpanKind.TASK, Resource("Goroutine", 7), 100, 350, "why", "name", 9, frames, frames,
        (("cat", "msg"),), "task type", True, True, 2,
    )  # fmt: skip
    d = span_dict(full)
    assert set(d) == documented_span_fields()
    assert d["duration_ns"] == 250 and d["resource"] == "goroutine" and d["span"] == "task"
    assert set(span_dict(Span(SpanKind.GC, Resource("None", 0), 1, 2))) == {
        "kind", "span", "resource", "id", "start_ns", "end_ns", "duration_ns"
    }  # fmt: skip


@pytest.mark.slow
async def test_tail_spans_show_what_their_filters_keep() -> None:
    """Two tails of one service at once: spans at least 200µs long as JSON
    lines (--min-duration implies --spans), and GC and STW spans as text."""
    async with demo("1.26", args=["-workers", "1"]) as d:
        args = ("--duration", "2.5")
        long = cli("tail", d.trace_address, *args, "--format", "jsonl", "--min-duration", "200us", "-k", "blocked")
        gc = cli("tail", d.trace_address, *args, "--spans", "-k", "gc", "-k", "stw")
        (out, err), (gc_out, gc_err) = await trio.to_thread.run_sync(
            lambda: (long.communicate(timeout=120), gc.communicate(timeout=120))
        )
    assert long.returncode == 0 and gc.returncode == 0, err + gc_err
    objs = [json.loads(line) for line in out.splitlines()]
    assert objs and all(o["kind"] == "Span" and o["span"] == "blocked" for o in objs)
    assert all(o["duration_ns"] == o["end_ns"] - o["start_ns"] >= 200_000 for o in objs)
    summary = next((line for line in err.splitlines() if line.startswith("summary:")), err)
    built = int(re.search(r"([\d,]+) spans built", summary)[1].replace(",", ""))  # type: ignore[index]  # it is there
    assert f" {len(objs):,} spans shown, {built - len(objs):,} spans dropped" in summary and built > len(objs)
    lines = gc_out.splitlines()
    assert lines and all(line.split()[1] in ("gc", "stw") for line in lines)
    assert f" {len(lines):,} spans shown" in gc_err and f"{len(lines):,} spans; session ended" in gc_err
