"""``connect``: a trace session with whatever an address names, a helper
(``helper.py``) or net/http/pprof windows (``pprof_windows.py``), once the
address is resolved (``target.py``)."""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from livetrace._nursery import open_nursery
from livetrace._protocol.address import Address, parse_address
from livetrace._session import transport
from livetrace._session.defaults import (
    GENERATION_BYTES,
    GENERATION_BYTES_RANGE,
    IDLE_TIMEOUT,
    MAX_GENERATION_BYTES,
    MIN_ADVANCE,
    STOP_TIMEOUT,
)
from livetrace._session.helper import Hello, open_helper_session
from livetrace._session.limits import Limits
from livetrace._session.session import Session
from livetrace._session.target import resolve
from livetrace._version import __version__

__all__ = ["connect"]


@asynccontextmanager
async def connect(
    address: str | Address,
    *,
    token: str | None = None,
    duration: float | None = None,
    advance: float | None = None,
    generation_bytes: int | None = GENERATION_BYTES,
    segment: float | None = None,
    client_name: str | None = None,
    idle_timeout: float | None = IDLE_TIMEOUT,
    stop_timeout: float = STOP_TIMEOUT,
    max_generation_bytes: int = MAX_GENERATION_BYTES,
    allow_uid: int | Iterable[int] | None = None,
    expected_pid: int | None = None,
    tls_ca: str | os.PathLike[str] | None = None,
    tls_pin: str | None = None,
    window: float | None = None,
    stop: trio.Event | None = None,
    jobs: int | None = None,
    max_pipeline_bytes: int | None = None,
) -> AsyncIterator[Session]:
    """Start a trace session with the helper at ``address``, or, given an
    ``http://HOST:PORT`` address, with the service's net/http/pprof.

    ``token`` defaults to ``$LIVETRACE_TOKEN``; ``duration`` (seconds) makes
    the helper stop by itself; ``advance`` (seconds, 0.1 to 1) asks it to
    close a generation that often instead of about once a second, so that
    live events arrive sooner (Go 1.22+; ``info.advance_ms`` says what it
    does). ``generation_bytes`` (1 MiB to 1 GiB; default 8 MiB, None for
    no limit) asks it to close a generation early once it holds that much
    trace, so that on a busy service each generation is decoded soon after
    its end, and several side by side (``info.advance_bytes``; 0 from a
    helper too old to know it). ``segment`` (seconds, at least 1) asks a
    legacy runtime (Go 1.21 and older) to stop and restart the trace that
    often, so that each segment is a complete trace soon after its events:
    :meth:`Session.chunks` then yields a :class:`SegmentEnd` after each but the last
    (``info.segment_ms`` says what the helper does; 0 on Go 1.22+, whose
    generations are complete already). Leaving the block before the end
    frame drops the connection, which makes the helper stop the tracer.

    The client holds the helper to limits (see :class:`Limits`): a helper
    silent for ``idle_timeout`` seconds (it is asked for heartbeats), or not
    done within ``stop_timeout`` of the stop, raises
    :class:`PeerTimeoutError`; a generation past ``max_generation_bytes``
    raises :class:`LimitExceededError`. A unix socket must be served by a
    process of this user or root (or of a uid in ``allow_uid``; of pid
    ``expected_pid`` if given), else :class:`PeerCredentialsError` before
    anything is sent. A ``tls:HOST:PORT`` address is checked against
    ``tls_ca`` (a CA or self-signed certificate file) and/or ``tls_pin``
    (``sha256:HEX`` of the certificate); neither means the system's CAs.
    ``pid:N`` or an executable's name attaches to that process's helper, or
    else its pprof endpoint (:class:`AttachError` says why neither).
    Setting ``stop`` stops the session as :meth:`Session.stop` does, even
    before this returns: a pprof session waits for its first window's
    header, which a quiet service sends only at the window's end.

    ``jobs`` is how many threads the session's pipeline decodes with
    besides the decoder's own: each selects, builds spans and runs maps for
    a generation at a time, several generations at once (default: the
    cores this process may use, less one; 1 does it all in the decoder's
    thread). What subscribers get is the same for any ``jobs``. The
    generations in the pool's hands hold at most ``max_pipeline_bytes`` of
    decoded events at once (default 512 MiB a job, at most 4 GiB and an
    eighth of the memory this process may use), unless one alone holds
    more: past it, fewer run side by side.
    """
    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    if max_pipeline_bytes is not None and max_pipeline_bytes < 1:
        raise ValueError(f"max_pipeline_bytes must be at least 1, not {max_pipeline_bytes}")
    lo, hi = GENERATION_BYTES_RANGE
    if generation_bytes is not None and not lo <= generation_bytes <= hi:
        raise ValueError(f"generation_bytes must be {lo} to {hi} (None for no limit), not {generation_bytes}")
    target = await resolve(address, expected_pid)
    if advance is not None and not MIN_ADVANCE <= advance <= 1:
        raise ValueError(f"advance must be {MIN_ADVANCE} to 1 seconds (None leaves it to the runtime), not {advance}")
    if token is None:
        token = os.environ.get("LIVETRACE_TOKEN") or None
    name = client_name or f"livetrace-py/{__version__} pid {os.getpid()} on {socket.gethostname()}"
    limits = Limits(idle_timeout or None, stop_timeout, max_generation_bytes)
    if target.pprof:
        from livetrace._session.pprof_windows import open_pprof_session  # imports httpx: only when needed

        assert isinstance(target.address, str)
        async with open_pprof_session(
            target.address, window=window, duration=duration, limits=limits, stop=stop
        ) as session:
            _pipeline(session, jobs, max_pipeline_bytes)
            yield session
        return
    if window is not None:
        raise ValueError("a window applies to http:// addresses (net/http/pprof) only")
    addr = target.address if isinstance(target.address, Address) else parse_address(target.address)
    peer = transport.PeerCheck(transport.uids(allow_uid), target.pid)
    tls = transport.TLSOptions(
        None if tls_ca is None else Path(tls_ca), None if tls_pin is None else transport.parse_pin(tls_pin)
    )
    hello = Hello(token, duration, name, advance, segment, generation_bytes)
    async with open_helper_session(addr, hello, limits, peer, tls) as session:
        _pipeline(session, jobs, max_pipeline_bytes)
        if stop is None:
            yield session
            return
        async with open_nursery() as nursery:
            nursery.start_soon(_stop_when_set, stop, session)
            yield session
            nursery.cancel_scope.cancel()


def _pipeline(session: Session, jobs: int | None, max_pipeline_bytes: int | None) -> None:
    """The session's pipeline as connect's caller asked (before anything subscribes)."""
    if jobs is not None:
        session.jobs = jobs
    if max_pipeline_bytes is not None:
        session.max_pipeline_bytes = max_pipeline_bytes


async def _stop_when_set(stop: trio.Event, session: Session) -> None:
    await stop.wait()
    await session.stop()
