"""Which of a process's listening TCP ports serve net/http/pprof: one short
GET of /debug/pprof/ each, all at once on trio (httpx through anyio)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

import httpx
import psutil
import trio

from livetrace._session.nursery import open_nursery

__all__ = ["PROBE_TIMEOUT", "listening_ports", "pprof_url", "probe_pprof"]

# Long enough for a loaded service to answer an index page; short enough
# that a port that accepts and says nothing does not hold `ps` up.
PROBE_TIMEOUT = 1.0
MAX_PARALLEL = 16
INDEX_PATH = "/debug/pprof/"
# The index page is a few KiB; a server sending more is not it.
MAX_INDEX_BYTES = 256 * 1024
# Words net/http/pprof's index page has carried in every Go release.
INDEX_MARKERS = (b"/debug/pprof/", b"goroutine")


def listening_ports(pid: int) -> list[tuple[str, int]]:
    """The (host, port) pairs process pid listens on over TCP, as they can
    be reached from here: a wildcard address becomes loopback. Empty when
    its sockets cannot be read (another user's process, or gone)."""
    try:
        conns = psutil.Process(pid).net_connections(kind="inet")
    except (psutil.Error, OSError):
        return []
    found: list[tuple[str, int]] = []
    for c in conns:
        if c.status != psutil.CONN_LISTEN or not c.laddr:
            continue
        host, port = c.laddr.ip, c.laddr.port
        if host == "0.0.0.0":
            host = "127.0.0.1"
        elif host == "::":
            host = "::1"
        if (host, port) not in found:
            found.append((host, port))
    return found


def pprof_url(host: str, port: int) -> str:
    """http://HOST:PORT, bracketing an IPv6 host."""
    try:
        v6 = ipaddress.ip_address(host).version == 6
    except ValueError:
        v6 = False
    return f"http://[{host}]:{port}" if v6 else f"http://{host}:{port}"


async def probe_pprof(candidates: Iterable[tuple[str, int]]) -> dict[tuple[str, int], bool]:
    """For each (host, port), whether GET /debug/pprof/ there gives
    net/http/pprof's index page."""
    targets = list(dict.fromkeys(candidates))
    results = dict.fromkeys(targets, False)
    if not targets:
        return results
    limiter = trio.CapacityLimiter(MAX_PARALLEL)
    # trust_env=False: the ports are local; a proxy from the environment
    # must not see (or answer for) them.
    async with httpx.AsyncClient(timeout=PROBE_TIMEOUT, trust_env=False, follow_redirects=False) as client:

        async def one(target: tuple[str, int]) -> None:
            async with limiter:
                results[target] = await _is_pprof(client, pprof_url(*target) + INDEX_PATH)

        async with open_nursery() as nursery:
            for target in targets:
                nursery.start_soon(one, target)
    return results


async def _is_pprof(client: httpx.AsyncClient, url: str) -> bool:
    try:
        with trio.move_on_after(PROBE_TIMEOUT * 2):
            async with client.stream("GET", url) as response:
                if response.status_code != httpx.codes.OK:
                    return False
                body = b""
                async for data in response.aiter_bytes():
                    body += data
                    if len(body) > MAX_INDEX_BYTES:
                        return False
                return all(marker in body for marker in INDEX_MARKERS)
    except (httpx.HTTPError, OSError):
        return False
    return False
