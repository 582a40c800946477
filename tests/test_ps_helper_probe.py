"""`livetrace ps` (and the agent's scan, which is the same survey) leaves a
process's livetrace helper alone: it asks the process's HTTP ports for
/debug/pprof/ but not for /debug/pprof/trace, whose handler there may be the
helper's PprofTraceHandler. Asking it would join the helper's shared trace
(a forced generation boundary for every consumer) or, with its consumer
slots full, be refused and counted in the service's log: every `ps` on the
host, and every scan of an agent, did one or the other."""

from __future__ import annotations

import re

import pytest

import livetrace
from livetrace._attach.processes import survey

from .conftest import demo, stop_and_read_log


@pytest.mark.slow
@pytest.mark.once
async def test_a_survey_asks_no_trace_of_a_process_with_a_helper() -> None:
    async with demo("1.26", args=["-max-consumers", "1"]) as d:
        async with livetrace.connect(d.trace_address) as first:  # the one slot taken: a trace asked is refused
            found = await survey([d.pid])
            await first.stop()
            async for _ in first.chunks():
                pass
        log = await stop_and_read_log(d)
    (row,) = found.processes
    # Both ways in are still listed: the helper, and the port that serves pprof.
    assert row.helper is not None and row.helper.address == d.trace_address
    assert (row.pprof, row.attach, row.pprof_without_trace) == (d.http, d.trace_address, ""), row
    assert not re.search(r"refused sessions? since", log), log[-3000:]
