"""`PprofTraceHandler` against a client that keeps asking while the trace's
consumer slots are full (docs/protocol.md, "Security model"): the handler
applies no access control of its own, so each refusal tells the requester
nothing about the consumers attached, and the refusals reach the service's
log as a summary, not a line each."""

from __future__ import annotations

import os
import re
import socket
import tempfile

import httpx
import pytest
import trio

import livetrace

from .conftest import demo, stop_and_read_log

ATTEMPTS = 2000


def _flood(sock: str) -> list[tuple[int, str]]:
    with httpx.Client(transport=httpx.HTTPTransport(uds=sock), base_url="http://demo", timeout=30) as client:
        return [
            (r.status_code, r.text)
            for r in (client.get("/debug/pprof/trace", params={"seconds": "1"}) for _ in range(ATTEMPTS))
        ]


@pytest.mark.slow
@pytest.mark.once
async def test_busy_refusals_name_no_consumer_and_are_summarised_in_the_log() -> None:
    # HTTP on a unix socket of the test's: the log counts every refusal, and a TCP port is probed for
    # /debug/pprof/trace by any `livetrace ps` on the host (a parallel test's, which sees no helper
    # announced in its own runtime directory): a probe during the flood was a refusal more.
    with tempfile.TemporaryDirectory(prefix="lt-busy-") as tmp:
        sock = f"{tmp}/http.sock"
        async with demo("1.26", args=["-max-consumers", "1", "-http", f"unix:{sock}"]) as d:
            # The default client name says whose it is: pid and host.
            async with livetrace.connect(d.trace_address) as first:
                before = d.log_path.stat().st_size
                answers = await trio.to_thread.run_sync(_flood, sock)
                grown = d.log_path.stat().st_size - before
                await first.stop()
                async for _ in first.chunks():
                    pass
            log = await stop_and_read_log(d)

    assert {code for code, _ in answers} == {503}
    bodies = {body for _, body in answers}
    for secret in (f"pid {os.getpid()}", socket.gethostname(), "livetrace-py", "session 1"):
        assert not any(secret in body for body in bodies), bodies
    assert bodies == {"could not trace: busy: 1 of 1 consumers attached to this service's trace; try again later\n"}
    # A line when the flood starts, a summary every 10 s and on Close: a
    # line per refusal was some 300 bytes each here (about 4 KB with the
    # default 8 consumers attached).
    assert grown < 8 * 1024, f"the log grew {grown} bytes during {ATTEMPTS} refusals:\n{log[-3000:]}"
    counts = [int(n) for n in re.findall(r"(\d+) refused sessions? since ", log)]
    assert sum(counts) == ATTEMPTS, log[-3000:]
    assert len(counts) <= 6, log[-3000:]
    # The details, for the service's operator, are in the log.
    assert f"pid {os.getpid()} on {socket.gethostname()}" in log
