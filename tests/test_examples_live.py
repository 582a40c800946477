"""The examples under examples/ run against a live demo service and do what
they say: each is run as a user would (its own process, its own session)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import trio

from .conftest import ROOT, demo, go_tool_trace

EXAMPLES = ROOT / "examples"


async def run_example(name: str, *args: str) -> list[str]:
    """Run examples/<name> against a Go 1.26 demo; its stdout lines."""
    async with demo("1.26", args=["-workers", "1"]) as d:
        with trio.fail_after(120):
            proc = await trio.run_process(
                [sys.executable, str(EXAMPLES / name), d.trace_address, *args],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode().splitlines()


PAUSE = re.compile(r"(gc|stw)( \(.+\))?: (\d+\.\d+) ms at \d+\.\d+ s")


@pytest.mark.slow
async def test_gc_pauses_shows_only_gc_and_stw_spans_past_the_threshold() -> None:
    # The demo's pauses are mostly well under the example's 1 ms: a lower
    # threshold, which still leaves out the shortest stops (such as the
    # one that starts the trace), and keeps the GC cycles.
    lines = await run_example("gc_pauses.py", "3", "0.05")
    *pauses, last = [line for line in lines if not line.startswith("---")]
    assert pauses, lines
    for line in pauses:
        m = PAUSE.fullmatch(line)
        assert m, line
        assert float(m[3]) >= 0.05
    assert last == f"{len(pauses)} GC cycles and stop-the-world pauses of 0.05 ms or more"


TABLE = re.compile(r"\s*(\d+) waits \| (.*)")
CELL = re.compile(r"(<1µs|<10µs|<100µs|<1ms|<10ms|<100ms|>=100ms) (\d+) \((\d+\.\d)%\)")


@pytest.mark.slow
async def test_sched_latency_histogram_counts_every_runnable_span() -> None:
    lines = await run_example("sched_latency.py", "2.5")
    tables = [m for line in lines if (m := TABLE.fullmatch(line))]
    assert tables, lines
    totals = []
    for t in tables:
        cells = [CELL.fullmatch(c) for c in t[2].split(" | ")]
        assert all(cells) and len(cells) == 7, t[0]
        counts = [int(c[2]) for c in cells if c]
        assert sum(counts) == int(t[1])
        totals.append(int(t[1]))
    assert totals == sorted(totals)  # the histogram only grows
    seen = re.fullmatch(r"(\d+) runnable spans", lines[-1])
    assert seen and totals[-1] == int(seen[1]) > 0


@pytest.mark.slow
@pytest.mark.once
async def test_record_and_tail_records_a_complete_trace_while_a_tail_runs(tmp_path: Path) -> None:
    out = tmp_path / "rt.trace"
    lines = await run_example("record_and_tail.py", str(out), "2")
    m = re.fullmatch(r"recorded (.+) complete=True; the tail printed (\d+) log lines", lines[-2])
    assert m and m[1] == str(out), lines
    assert int(m[2]) > 0 and lines[-1] == "tail exited with 0"
    go_tool_trace("1.26", out)
