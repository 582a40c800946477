"""`tail` says how far behind the service its lines were written: each
batch's newest event (or span end), by the trace's own clock, against the
moment its lines were out. A user learns from it whether the tail kept up;
bench/many_cores.py reads it for a tail into /dev/null, where no reader can
time the lines."""

from __future__ import annotations

import calendar
import json
import re
import time

import pytest
import trio

from .conftest import cli, demo

pytestmark = [pytest.mark.slow, pytest.mark.once]  # the clock's arithmetic is Python's, whichever core decodes

BEHIND = re.compile(r"lines written behind the service by p50 ([\d.]+) s, p99 ([\d.]+) s, max ([\d.]+) s \((\d+) batch")


def _behind(err: str) -> tuple[float, float, float, int]:
    m = BEHIND.search(err)
    assert m, err
    return float(m[1]), float(m[2]), float(m[3]), int(m[4])


async def test_tail_says_how_far_behind_the_service_its_lines_were() -> None:
    async with demo("1.26", args=["-workers", "1"]) as d:
        started = time.time()
        events = cli("tail", d.trace_address, "--format", "jsonl", "-k", "Log", "--duration", "2.5")
        spans = cli("tail", d.trace_address, "--min-duration", "1ms", "--format", "jsonl", "--duration", "2.5")
        out, err = await trio.to_thread.run_sync(lambda: events.communicate(timeout=120))
        span_out, span_err = await trio.to_thread.run_sync(lambda: spans.communicate(timeout=120))
        ended = time.time()
    assert events.returncode == 0 and spans.returncode == 0, err + span_err
    walls = [json.loads(line).get("wall") for line in out.splitlines()]
    first = min(calendar.timegm(time.strptime(w[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + w[19:-1]) for w in walls if w)
    for text, lines in ((err, out), (span_err, span_out)):
        p50, p99, most, batches = _behind(text)
        assert lines and batches >= 2
        # A line is written after its event happened, and before this test saw the tail end.
        assert 0 < p50 <= p99 <= most, text
        assert most <= ended - min(first, started) + 0.5, (text, first, started, ended)
