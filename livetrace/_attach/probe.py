"""Which of a process's listening TCP ports serve net/http/pprof: one short
GET of /debug/pprof/ each, all at once on trio (httpx through anyio)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

import httpx
import psutil
import trio

from livetrace._nursery import open_nursery

__all__ = ["PROBE_TIMEOUT", "listening_ports", "pprof_url", "probe_pprof"]

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


async def probe_pprof(candidates: Iterable[tuple[str, int]]) -> dict[tuple[str, int], bool | None]:
    """For each (host, port), whether GET /debug/pprof/ there gives
    net/http/pprof's index page; None for a port not asked before the
    probe's deadline (so list the ports that matter most first)."""
    targets = list(dict.fromkeys(candidates))
    results: dict[tuple[str, int], bool | None] = dict.fromkeys(targets)
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
                results[target] = await _is_pprof(client, pprof_url(*target) + INDEX_PATH)

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
