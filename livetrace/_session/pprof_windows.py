"""A session with a service through net/http/pprof: ``/debug/pprof/trace``
windows back to back.

net/http/pprof traces for the W seconds a request asks for, then stops the
tracer, so each window is a complete trace with a header of its own, and
nothing is traced between the last byte of one window and the first of the
next. :class:`PprofWindows` is a session's frame source (see
``session.FrameSource``): each window's bytes as :class:`Chunk` frames as
they arrive (streamed, not read whole), a :class:`WindowEnd` after each
window but the last, a :class:`WindowGap` before each window but the
first (its length from the arrival of the bytes on either side: a session
that decodes measures it again from the events, see ``window_gaps``), and
the :class:`End`. So tail, the
recorder (one file per window) and the subscribers work on it unchanged.

A stop (Ctrl-C, ``tail -n``, :meth:`Session.stop`, or the ``stop`` event
given to :func:`open_pprof_session`, which works before the session exists,
while the first window is still coming) ends the session at the end of the
window in progress, the first one included, so that every file is a
complete trace:
net/http/pprof cannot end a window early and still write its end. Leaving
the session early drops the connection, which ends the window unfinished
(the server stops its tracer as the request goes away).
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import trio

from livetrace._errors import (
    ConnectError,
    ConnectionLostError,
    LivetraceError,
    NotPprofEndpointError,
    PeerTimeoutError,
    TraceFormatError,
)
from livetrace._items import WindowEnd, WindowGap
from livetrace._nursery import open_nursery
from livetrace._protocol import frames as proto
from livetrace._protocol.frames import Frame
from livetrace._session.defaults import MIN_WINDOW
from livetrace._session.limits import HANDSHAKE_TIMEOUT, STOP_DRAIN_MARGIN, Counters, Limits
from livetrace._session.pprof_http import (
    DEFAULT_WINDOW,
    ERROR_BODY_BYTES,
    HELPER,
    HTTP_OK,
    PprofAddress,
    not_a_trace,
    parse_pprof_address,
    refused,
)
from livetrace._session.session import Session
from livetrace._trace.framing import Framing
from livetrace._trace.version import TraceVersion, header_size, sniff
from livetrace._version import __version__

# A duration's last window, when shorter than this, is left out.
LEAST_REMAINDER = 0.01
FRAME_BUFFER = 16  # frames read ahead of the session's reader
CMDLINE_TIMEOUT = 2.0
# argv[0] is a path: a few hundred bytes at most.
CMDLINE_BYTES = 4096

Item = Frame | proto.End | LivetraceError


class PprofWindows:
    """The frames of a net/http/pprof session (see the module's docstring).
    ``run`` reads the windows in a task of the session's nursery and hands
    the frames over through a small buffer; a slow reader holds it up
    between reads, which only lengthens the windows' gaps.

    Limits: a server may be silent during a window (a legacy runtime hands
    its buffers over only when they fill), but not for longer than the
    idle timeout past the window's end, and it must end the window within
    the stop timeout of its end: else :class:`PeerTimeoutError`."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        addr: PprofAddress,
        window: float,
        duration: float | None,
        limits: Limits,
        stop: trio.Event | None = None,
    ) -> None:
        self.addr = addr
        self.window = window
        self.limits = limits
        self.windows = 0  # windows begun
        self.version: TraceVersion | None = None  # the format the first window's header names
        self._client = client
        self._duration = duration
        self._requested = 0.0  # seconds of windows asked for so far
        self._stop = trio.Event() if stop is None else stop  # set: stop at the end of the window in progress
        self._send, self._recv = trio.open_memory_channel[Item](FRAME_BUFFER)
        self._first: proto.Chunk | None = None
        self._seq = 0
        self._bytes = 0
        self._blocked = 0.0  # seconds the current window waited on the reader
        self._started = False  # the current window's header was handed over

    # -- the session's side --

    async def first_chunk(self) -> proto.Chunk:
        """The first window's first chunk (its header, at least): how the
        session learns the trace's format. Raises what stopped the first
        window from starting."""
        item = await self._recv.receive()
        if isinstance(item, LivetraceError):
            raise item
        assert isinstance(item, proto.Chunk)
        self._first = item
        return item

    async def next_frame(self) -> Frame | proto.End | None:
        if self._first is not None:
            first, self._first = self._first, None
            return first
        try:
            item = await self._recv.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return None
        if isinstance(item, LivetraceError):
            raise item
        return item

    async def stop(self) -> None:
        """End the session when the window in progress ends."""
        self._stop.set()

    # -- the reading task --

    async def run(self) -> None:
        async with self._send:
            try:
                previous_end: float | None = None  # when the last byte of the previous window came
                while (seconds := self._next_window()) is not None:
                    if previous_end is not None:
                        await self._emit(WindowEnd(self.windows, time.time_ns()))
                    previous_end = await self._read_window(seconds, previous_end)
                reason = "client-stop" if self._stop.is_set() else "duration"
                await self._emit(proto.End(reason, True, self._seq, self._bytes))
            except LivetraceError as e:
                await self._send.send(e)

    def _next_window(self) -> float | None:
        """How long the next window is; None when the session is over."""
        if self._stop.is_set() and self.windows:
            return None
        if self._duration is None:
            return self.window
        left = self._duration - self._requested
        if self.windows and left < LEAST_REMAINDER:
            return None
        return max(min(self.window, left), LEAST_REMAINDER)

    async def _emit(self, item: Item) -> None:
        start = trio.current_time()
        await self._send.send(item)
        self._blocked += trio.current_time() - start

    async def _emit_reading(self, scope: trio.CancelScope, item: Item) -> None:
        """Hand an item over in the middle of a window: the time the reader
        holds us up is not the server's, so no deadline runs meanwhile."""
        deadline, scope.deadline = scope.deadline, math.inf
        await self._emit(item)
        scope.deadline = deadline

    def _deadline(self, window_end: float, last: float) -> float:
        lim = self.limits
        end = window_end + self._blocked
        deadline = end + lim.stop_timeout
        if lim.idle_timeout:
            deadline = min(deadline, max(last, end) + lim.idle_timeout)
        return deadline

    async def _read_window(self, seconds: float, previous_end: float | None) -> float:
        """Ask for one window and hand its bytes over as they come; returns
        when its last byte came (trio's clock)."""
        self.windows += 1
        self._requested += seconds
        self._blocked = 0.0
        self._started = False
        k, url = self.windows, self.addr.trace_url
        sent = last = last_byte = trio.current_time()
        window_end = sent + seconds
        head = b""  # the window's first bytes, held until they make a header
        first_at = sent
        framing: Framing | None = None  # the window's shape, from its header on
        version: TraceVersion | None = None  # the format its header names
        after_end = 0  # bytes that came past the window's end
        with trio.CancelScope(deadline=self._deadline(window_end, sent)) as scope:
            try:
                async with self._client.stream("GET", url, params={"seconds": f"{seconds:g}"}) as response:
                    if response.status_code != HTTP_OK:
                        body = await _first_bytes(response)
                        raise refused(self.addr, response.status_code, response.reason_phrase, response.headers, body)
                    async for data in response.aiter_raw():
                        now, read_ns = trio.current_time(), time.time_ns()
                        if now > window_end:
                            after_end += len(data)
                            self._check_drain(k, after_end)
                        if not self._started:
                            first_at = now if not head else first_at
                            head += data
                            if len(head) < header_size(head):
                                continue
                            version = _read_header(self.addr, response.headers.get("content-type", ""), head)
                            self.version = self.version or version
                            if previous_end is not None:
                                await self._emit_reading(scope, _gap(k - 1, first_at - previous_end))
                            data, self._started = head, True
                        self._seq += 1
                        self._bytes += len(data)
                        last_byte = now
                        await self._emit_reading(scope, proto.Chunk(self._seq, read_ns, 0, bytes(data)))
                        framing = self._check_shape(k, framing, data, version)
                        # Silence is counted from here: while the reader held
                        # us up, the server could not send.
                        last = trio.current_time()
                        scope.deadline = self._deadline(window_end, last)
            except httpx.HTTPError as e:
                raise self._broken(e) from None
        if scope.cancelled_caught:
            raise self._timed_out(k, seconds, window_end, last)
        if not self._started:
            raise not_a_trace(self.addr, "", head)
        self._check_shape(k, framing, None)
        return last_byte

    def _check_shape(
        self, k: int, framing: Framing | None, data: bytes | None, version: TraceVersion | None = None
    ) -> Framing:
        """The window's bytes so far (``data`` the newest; None: the window
        is over) still make a trace, else :class:`TraceFormatError`: a file
        is complete only if its bytes are whole batches or events."""
        try:
            if framing is None:
                assert data is not None  # the header is in the first data handed over
                assert version is not None  # read with the header
                return Framing(data, version)
            if data is None:
                framing.close()
            else:
                framing.feed(data)
        except TraceFormatError as e:
            raise TraceFormatError(
                f"{self.addr.trace_url} sent bytes that are not a Go execution trace in pprof window {k} "
                f"({e}): that window is incomplete"
            ) from None
        return framing

    def _check_drain(self, k: int, after_end: int) -> None:
        """The helper path's cap on what may come after the stop, for a
        window's end: a server streaming on without ending it (valid trace
        or not, in one endless HTTP chunk or many) is given up on."""
        if after_end > STOP_DRAIN_MARGIN:
            raise PeerTimeoutError(
                f"{self.addr.trace_url} sent {after_end:,} bytes past the end of pprof window {k} without ending "
                f"it (more than the {STOP_DRAIN_MARGIN >> 20} MiB a runtime's last buffers take): that window is "
                "incomplete",
                bytes_received=self._bytes,
                chunks_received=self._seq,
            )

    def _broken(self, e: httpx.HTTPError) -> LivetraceError:
        url, k = self.addr.shown_trace_url, self.windows
        if self._started:
            return ConnectionLostError(
                f"the connection to {url} broke in pprof window {k} ({_reason(e)}): that window is incomplete",
                bytes_received=self._bytes,
                chunks_received=self._seq,
            )
        if isinstance(e, httpx.ConnectTimeout):
            why = f"could not connect to {self.addr} within {HANDSHAKE_TIMEOUT:.0f} s"
        elif isinstance(e, httpx.ConnectError):
            why = f"could not connect to {self.addr}: {_reason(e)}"
        elif isinstance(e, httpx.RemoteProtocolError):
            return NotPprofEndpointError(
                f"not a net/http/pprof endpoint: {self.addr} does not answer HTTP ({_reason(e)}); a livetrace "
                "helper's address is given as tcp:HOST:PORT",
                url=url,
            )
        else:
            why = f"asking {url} for a trace failed: {_reason(e)}"
        if k == 1:
            return ConnectError(why)
        return ConnectionLostError(
            f"{why}, starting pprof window {k}", bytes_received=self._bytes, chunks_received=self._seq
        )

    def _timed_out(self, k: int, seconds: float, window_end: float, last: float) -> PeerTimeoutError:
        now = trio.current_time()
        late = now - (window_end + self._blocked)
        what = "that window is incomplete" if self._started else "no trace came"
        if late >= self.limits.stop_timeout:
            why = f"did not end pprof window {k} ({seconds:g} s) within {self.limits.stop_timeout:g} s of its end"
        else:
            silent = now - max(last, window_end)
            why = f"sent nothing for {silent:.0f} s past the end of pprof window {k} ({seconds:g} s)"
        return PeerTimeoutError(
            f"{self.addr.shown_trace_url} {why}: {what} "
            "(raise --idle-timeout / --stop-timeout if the service is just slow)",
            bytes_received=self._bytes,
            chunks_received=self._seq,
        )


def _gap(window: int, seconds: float) -> WindowGap:
    return WindowGap(0, 0, 0, 0, False, window=window, seconds=seconds)


def _read_header(addr: PprofAddress, content_type: str, head: bytes) -> TraceVersion:
    """The format a window's header names: each window is a trace of its
    own, and its header is read here only."""
    try:
        return sniff(head[: header_size(head)])
    except TraceFormatError:
        raise not_a_trace(addr, content_type, head) from None


def _reason(e: httpx.HTTPError) -> str:
    return str(e) or type(e).__name__


async def _first_bytes(response: httpx.Response) -> bytes:
    body = b""
    async for data in response.aiter_raw():
        body += data
        if len(body) >= ERROR_BODY_BYTES:
            break
    return body[:ERROR_BODY_BYTES]


@asynccontextmanager
async def open_pprof_session(
    address: str, *, window: float | None, duration: float | None, limits: Limits, stop: trio.Event | None = None
) -> AsyncIterator[Session]:
    """A session over the net/http/pprof endpoint at ``address``
    (``http://HOST:PORT[/PREFIX]``): windows of ``window`` seconds (default
    :data:`DEFAULT_WINDOW`) until ``duration`` is used up (the last window
    is shortened to fit) or, without one, until a stop. Setting ``stop``
    stops it as :meth:`Session.stop` does, and works already while this
    waits for the first window's header (a quiet service sends nothing
    until its first buffer fills, or the window ends): that window is then
    the session's one, and it still comes whole."""
    addr = parse_pprof_address(address)
    window = DEFAULT_WINDOW if window is None else window
    if not window >= MIN_WINDOW:
        raise ValueError(f"a pprof window is at least {MIN_WINDOW:g} s, not {window:g}")
    timeout = httpx.Timeout(HANDSHAKE_TIMEOUT, read=None)  # reads are timed per window, see PprofWindows
    headers = {"user-agent": f"livetrace/{__version__}", "accept-encoding": "identity"}
    # trust_env=False: no proxy from the environment between us and a pprof port, and no .netrc.
    # No keep-alive: windows are seconds apart, and a connection kept idle that long may be closed
    # by the server just as the next window's request goes out on it (a reset, seen in CI).
    fresh = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(
        timeout=timeout, headers=headers, follow_redirects=False, trust_env=False, limits=fresh
    ) as client:
        source = PprofWindows(client, addr, window, duration, limits, stop)
        async with open_nursery() as nursery:
            nursery.start_soon(source.run)
            first = await source.first_chunk()
            assert source.version is not None  # read with the first chunk
            info = _info(addr, first, source.version, window, await _executable(client, addr))
            yield Session(source, addr, info, nursery, limits=limits, counters=Counters())
            nursery.cancel_scope.cancel()


def _info(
    addr: PprofAddress, first: proto.Chunk, fmt: TraceVersion, window: float, executable: str
) -> proto.SessionInfo:
    """What is known of the process: the trace format's Go version (the
    runtime is that one or newer), and its command line if pprof gives it.
    Not its pid, OS or architecture (0 and "")."""
    return proto.SessionInfo(
        protocol=0,
        helper=HELPER,
        go_version=str(fmt),
        goos="",
        goarch="",
        pid=0,
        executable=executable,
        gomaxprocs=0,
        start_unix_ns=first.read_unix_ns,
        queue_bytes=0,
        session=0,
        window_ms=round(window * 1000),
        extra={"url": addr.shown_trace_url, "trace_format": str(fmt)},
    )


async def _executable(client: httpx.AsyncClient, addr: PprofAddress) -> str:
    """The service's argv[0], from /debug/pprof/cmdline; "" if it does not
    say. Read raw (a compressed answer is not one net/http/pprof gives, and
    a few bytes of gzip can inflate to gigabytes) and no further than
    CMDLINE_BYTES."""
    body = b""
    with trio.move_on_after(CMDLINE_TIMEOUT) as scope:
        try:
            async with client.stream("GET", addr.cmdline_url) as response:
                if (
                    response.status_code != HTTP_OK
                    or not response.headers.get("content-type", "").startswith("text/plain")
                    or response.headers.get("content-encoding", "identity").lower() != "identity"
                ):
                    return ""
                async for data in response.aiter_raw():
                    body += data
                    if b"\0" in body or len(body) >= CMDLINE_BYTES:
                        break
        except httpx.HTTPError:
            return ""
    if scope.cancelled_caught:
        return ""
    return body[:CMDLINE_BYTES].split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
