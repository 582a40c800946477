"""A trace handler that is busy has a trace: a livetrace helper's
PprofTraceHandler with its consumer slots full answers 503 "could not
trace: busy: ...", and `ps` lists the port as one to attach to (the
session, when it asks, says busy), not as pprof without a trace."""

from __future__ import annotations

from pathlib import Path

import pytest

import livetrace
from livetrace._attach.processes import survey
from tests.conftest import demo

pytestmark = [pytest.mark.slow, pytest.mark.once]


async def test_a_busy_pprof_trace_handler_is_one_with_a_trace(tmp_path: Path) -> None:
    async with demo("1.26", args=["-max-consumers", "1"]) as d:
        async with livetrace.connect(d.trace_address) as first:  # the one consumer slot, taken
            # No announce record here: the port's trace handler is asked, as for a service without one.
            found = await survey([d.pid], announce_dir=tmp_path / "announce")
            await first.stop()
            async for _ in first.chunks():
                pass
    [row] = found.processes
    assert row.helper is None
    assert (row.pprof, row.pprof_without_trace) == (d.http, "")
