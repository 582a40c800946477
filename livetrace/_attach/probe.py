"""Which of a process's listening TCP ports serve net/http/pprof, and its
execution trace: a short GET of /debug/pprof/ each, all at once on trio
(httpx through anyio), then, where the index answered, one of
/debug/pprof/trace for a 1 ms trace.

The index alone does not tell: net/http/pprof's index page lists ``trace``
whether or not the service mounts the trace handler, and a service that
mounts ``pprof.Index`` with only some of the others (etcd 3.4) answers
404 "Unknown profile" for /debug/pprof/trace. Neither a HEAD nor
``?seconds=0`` is cheaper than asking: both run the handler for its
default second. So the probe asks for the shortest trace there is; a
tracer held by someone else answers 500 at once (net/http/pprof), and a
livetrace helper's PprofTraceHandler with its consumer slots full 503
("could not trace: busy: ..."), which still show the handler is there."""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Iterable
from dataclasses import dataclass

import httpx
import trio

from livetrace._nursery import open_nursery
from livetrace._protocol.text import shown

__all__ = ["PROBE_TIMEOUT", "PortAnswer", "pprof_url", "probe_pprof"]

# Long enough for a loaded service to answer an index page; short enough
# that a port that accepts and says nothing does not hold `ps` up.
PROBE_TIMEOUT = 1.0
# However many ports there are (`ps` as root sees every user's), the whole
# probe ends within this; ports not asked by then are reported "not probed".
PROBE_DEADLINE = 3.0
MAX_PARALLEL = 32
# A process's ports asked at most; the rest are "not probed: too many ports".
MAX_PORTS_PER_PROCESS = 16
INDEX_PATH = "/debug/pprof/"
# The index page is a few KiB, and both markers are in its first lines; the
# answer is read raw (no content decoding: a few bytes of gzip can inflate
# to gigabytes) and never past this.
MAX_INDEX_BYTES = 16 * 1024
# Words net/http/pprof's index page has carried in every Go release.
INDEX_MARKERS = (b"/debug/pprof/", b"goroutine")
TRACE_PATH = "/debug/pprof/trace"
# The shortest trace the handler takes (0 or less means its default, 1 s).
TRACE_PROBE_SECONDS = "0.001"
# What a trace handler answers: a trace; "Could not enable tracing" (net/http/pprof, the tracer is
# someone else's); "could not trace: busy" (a helper's PprofTraceHandler, its consumer slots full).
TRACES = frozenset({httpx.codes.OK, httpx.codes.INTERNAL_SERVER_ERROR, httpx.codes.SERVICE_UNAVAILABLE})
# How much of an answer other than a trace is read for the reason it gives.
REASON_BYTES = 200


@dataclass(frozen=True)
class PortAnswer:
    """A port that answered net/http/pprof's index page. ``no_trace`` is
    empty where /debug/pprof/trace gives traces (or did not answer in
    time: the session will say), else what it answered instead."""

    no_trace: str = ""

    @property
    def traces(self) -> bool:
        return not self.no_trace


def pprof_url(host: str, port: int) -> str:
    """http://HOST:PORT, bracketing an IPv6 host."""
    try:
        v6 = ipaddress.ip_address(host).version == 6
    except ValueError:
        v6 = False
    return f"http://[{host}]:{port}" if v6 else f"http://{host}:{port}"


async def probe_pprof(
    candidates: Iterable[tuple[str, int]], *, index_only: Collection[tuple[str, int]] = ()
) -> dict[tuple[str, int], PortAnswer | bool | None]:
    """For each (host, port): a :class:`PortAnswer` where GET /debug/pprof/
    there gives net/http/pprof's index page (and what its trace handler
    said), False where it does not, None for a port not asked before the
    probe's deadline (so list the ports that matter most first).

    The trace handler of a port in ``index_only`` is not asked (its answer
    says it traces): a process with a livetrace helper, whose handler there
    may be the helper's own. A trace asked of it would join the helper's
    shared trace (forcing a generation boundary on every consumer), or,
    with its consumer slots full, be refused and counted in the service's
    log, at every ``ps`` and every scan of an agent."""
    targets = list(dict.fromkeys(candidates))
    results: dict[tuple[str, int], PortAnswer | bool | None] = dict.fromkeys(targets)
    if not targets:
        return results
    limiter = trio.CapacityLimiter(MAX_PARALLEL)
    # trust_env=False: the ports are local; a proxy from the environment
    # must not see (or answer for) them. identity: ask for no compression.
    async with httpx.AsyncClient(
        timeout=PROBE_TIMEOUT, trust_env=False, follow_redirects=False, headers={"accept-encoding": "identity"}
    ) as client:

        async def one(target: tuple[str, int]) -> None:
            async with limiter:
                base = pprof_url(*target)
                if not await _is_pprof(client, base + INDEX_PATH):
                    results[target] = False
                    return
                results[target] = PortAnswer("" if target in index_only else await _no_trace(client, base + TRACE_PATH))

        with trio.move_on_after(PROBE_DEADLINE):
            async with open_nursery() as nursery:
                for target in targets:
                    nursery.start_soon(one, target)
    return results


async def _is_pprof(client: httpx.AsyncClient, url: str) -> bool:
    body = b""
    try:
        with trio.move_on_after(PROBE_TIMEOUT):
            async with client.stream("GET", url) as response:
                if response.status_code != httpx.codes.OK:
                    return False
                if response.headers.get("content-encoding", "identity").lower() != "identity":
                    return False
                async for data in response.aiter_raw():
                    body += data
                    if all(marker in body for marker in INDEX_MARKERS):
                        return True
                    if len(body) > MAX_INDEX_BYTES:
                        return False
    except (httpx.HTTPError, OSError):
        return False
    return False


async def _no_trace(client: httpx.AsyncClient, url: str) -> str:
    """Why the trace handler at url gives no trace; "" if it gives one (its
    answer's status line and headers are enough: the body is not read), is
    busy tracing for someone else (TRACES), or says nothing in time."""
    try:
        with trio.move_on_after(PROBE_TIMEOUT):
            async with client.stream("GET", url, params={"seconds": TRACE_PROBE_SECONDS}) as response:
                status = response.status_code
                if status in TRACES:
                    return ""  # a trace, or a tracer that is someone else's for now
                body = b""
                async for data in response.aiter_raw():
                    body += data
                    if len(body) >= REASON_BYTES:
                        break
                text = body[:REASON_BYTES].decode("utf-8", "replace").strip()
                line = shown(text.splitlines()[0] if text else "", 80)
                said = f"{status} {shown(response.reason_phrase, 40)}".rstrip()
                return f"{TRACE_PATH} answered {said}" + (f" ({line})" if line else "")
    except (httpx.HTTPError, OSError):
        return ""
    return ""
