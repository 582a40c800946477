"""A session with a livetrace helper: its connection, the handshake, and
its frames read within the client's limits (docs/protocol.md)."""

from __future__ import annotations

import contextlib
import math
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import trio

from livetrace._errors import ConnectError, ConnectionLostError, PeerTimeoutError, ProtocolError, refusal
from livetrace._nursery import open_nursery
from livetrace._plural import plural
from livetrace._protocol import frames as proto
from livetrace._protocol.address import Address
from livetrace._protocol.frames import Frame
from livetrace._protocol.text import shown
from livetrace._session import transport
from livetrace._session.limits import HANDSHAKE_TIMEOUT, STOP_DRAIN_MARGIN, Counters, Limits
from livetrace._session.session import Session

RECEIVE_SIZE = 1 << 18
# A helper sends its preamble as it accepts a connection; a peer still silent
# after this long is asked, on a second connection, whether it speaks HTTP (an
# HTTP server waits for a request line, and our preamble never ends one).
HELPER_SPEAKS_WITHIN = 0.25
HTTP_PROBE = b"HEAD / HTTP/1.0\r\n\r\n"
HTTP_PROBE_TIMEOUT = 3.0
# The helper ends a duration by itself; the client sends its own STOP if it
# finds itself waiting this long past the duration.
STOP_SLACK = 2.0


@dataclass(frozen=True)
class Hello:
    """What the client asks of the helper in its hello."""

    token: str | None
    duration: float | None
    name: str
    advance: float | None
    segment: float | None
    generation_bytes: int | None = None

    @property
    def advance_ms(self) -> int:
        # The runtime closes a generation about once a second by itself, and the
        # helper takes 100-999 ms: a second or more is left to the runtime.
        return 0 if self.advance is None or self.advance >= 1 else round(self.advance * 1000)


@asynccontextmanager
async def open_helper_session(
    addr: Address, hello: Hello, limits: Limits, peer: transport.PeerCheck, tls: transport.TLSOptions
) -> AsyncIterator[Session]:
    """A session with the helper at ``addr``: connected (its peer checked)
    and the handshake done within HANDSHAKE_TIMEOUT, then its frames."""
    stream: trio.abc.Stream | None = None
    try:
        with trio.fail_after(HANDSHAKE_TIMEOUT):
            stream = await transport.open_stream(addr, peer, tls)
            reopen = (lambda: transport.open_stream(addr, peer, tls)) if addr.family == "tcp" else None
            info, conn, pending = await _handshake(stream, addr, hello, limits.heartbeat_ms, reopen)
    except trio.TooSlowError:
        if stream is None:
            raise ConnectError(f"could not connect to {addr} within {HANDSHAKE_TIMEOUT:.0f} s") from None
        await trio.aclose_forcefully(stream)
        raise ConnectError(
            f"{addr} accepted the connection but did not complete the handshake "
            f"in {HANDSHAKE_TIMEOUT:.0f} s; is it a livetrace helper?"
        ) from None
    except BaseException:
        if stream is not None:
            await trio.aclose_forcefully(stream)
        raise
    try:
        async with open_nursery() as nursery:
            counters = Counters()
            source = HelperFrames(stream, addr, info, conn, pending, counters, limits, hello.duration)
            session = Session(source, addr, info, nursery, limits=limits, counters=counters)
            yield session
            nursery.cancel_scope.cancel()
    finally:
        await transport.close(stream)


class HelperFrames:
    """A helper's frames, read off its connection within the limits."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        address: Address,
        info: proto.SessionInfo,
        conn: proto.ClientConnection,
        pending: deque[proto.Event | _Failure],
        counters: Counters,
        limits: Limits,
        duration: float | None,
    ) -> None:
        self._stream = stream
        self._conn = conn
        self._pending = pending
        self._stop_sent = False
        self._finished = False
        self.address = address
        self.info = info
        self.counters = counters
        self.limits = limits
        now = trio.current_time()
        # From the stop point on (a stop asked for, or the duration over),
        # the helper must end the session: the time the client waits on it
        # and the bytes it sends are then counted against the limits.
        self._stop_point = math.inf if not duration else now + duration
        self._waited_after_stop = 0.0
        self._bytes_after_stop = 0

    async def stop(self) -> None:
        if self._stop_sent or self._finished:
            return
        self._stop_sent = True
        self._stop_point = min(self._stop_point, trio.current_time())
        # A lost connection is reported by the read side.
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await self._stream.send_all(proto.encode_frame(proto.STOP))

    async def _receive(self) -> bytes:
        """The next bytes from the helper, within the limits: a helper that
        stays silent past the idle timeout, or does not end the session in
        time after the stop, raises :class:`PeerTimeoutError`."""
        lim = self.limits
        # Silence counts only while the client waits: a client that was
        # itself held up (writing to a full pipe, say) has not been ignored
        # by the helper meanwhile.
        silent_since = trio.current_time()
        while True:
            start = trio.current_time()
            deadline = silent_since + lim.idle_timeout if lim.idle_timeout else math.inf
            if not self._stop_sent:
                deadline = min(deadline, self._stop_point + STOP_SLACK)
            if start >= self._stop_point:
                deadline = min(deadline, start + lim.stop_timeout - self._waited_after_stop)
            with trio.move_on_at(deadline):
                try:
                    data = await self._stream.receive_some(RECEIVE_SIZE)
                except (trio.BrokenResourceError, OSError) as e:
                    raise self._lost(f"connection to {self.address} broke: {e}") from None
                now = trio.current_time()
                if now > self._stop_point:
                    self._waited_after_stop += now - max(start, self._stop_point)
                    self._bytes_after_stop += len(data)
                    self._check_drain()
                return data  # type: ignore[return-value]  # trio's receive_some gives bytes-like; bytearray is read as bytes
            now = trio.current_time()
            if now > self._stop_point:
                self._waited_after_stop += now - max(start, self._stop_point)
            if lim.idle_timeout and now >= silent_since + lim.idle_timeout:
                raise self._lost(
                    f"the helper at {self.address} sent nothing for {lim.idle_timeout:g} s "
                    "(raise --idle-timeout if the service is just quiet)",
                    PeerTimeoutError,
                )
            if self._waited_after_stop >= lim.stop_timeout:
                raise self._lost(
                    f"the helper at {self.address} did not end the session within {lim.stop_timeout:g} s of the stop",
                    PeerTimeoutError,
                )
            if not self._stop_sent and now >= self._stop_point + STOP_SLACK:
                with trio.move_on_after(lim.stop_timeout):
                    await self.stop()  # the duration is over and the helper goes on: ask it to stop

    def _check_drain(self) -> None:
        allowed = 2 * self.info.queue_bytes + STOP_DRAIN_MARGIN
        if self._bytes_after_stop > allowed:
            raise self._lost(
                f"the helper at {self.address} sent {self._bytes_after_stop:,} bytes after the stop "
                f"without ending the session (more than twice its {self.info.queue_bytes:,}-byte "
                "queue and the tracer's last buffers)",
                PeerTimeoutError,
            )

    async def next_frame(self) -> Frame | proto.End | None:
        ev: proto.Event | _Failure = proto.Heartbeat()
        while isinstance(ev, proto.Heartbeat):  # a heartbeat only says the helper is there
            while not self._pending:
                if self._finished:
                    return None
                data = await self._receive()
                if not data:
                    raise self._lost(f"the helper at {self.address} closed the connection before the end of the trace")
                self._pending.extend(_received(self._conn, data))
            ev = self._pending.popleft()
            if isinstance(ev, _Failure):
                self._finished = True
                raise ev.error
        if isinstance(ev, (proto.Chunk, proto.SegmentEnd, proto.Gap)):
            return ev
        if isinstance(ev, proto.End):
            self._finished = True
            return ev
        if isinstance(ev, proto.Refusal):
            raise refusal(shown(ev.code), shown(ev.message))
        raise ProtocolError(f"unexpected {type(ev).__name__} in the middle of a session")

    def _lost(self, why: str, kind: type[ConnectionLostError] = ConnectionLostError) -> ConnectionLostError:
        self._finished = True
        c = self.counters
        return kind(
            f"{why}: got {plural(c.bytes, 'byte')} in {plural(c.chunks, 'chunk')}; the trace is incomplete",
            bytes_received=c.bytes,
            chunks_received=c.chunks,
        )


@dataclass(frozen=True)
class _Failure:
    """Where in the received frames the peer broke the protocol."""

    error: ProtocolError


async def _first_bytes(
    stream: trio.abc.Stream, addr: Address, reopen: Callable[[], Awaitable[trio.abc.Stream]] | None
) -> bytes | bytearray:
    """The peer's first bytes: a helper's preamble, sent at once. An HTTP
    server (a pprof port given without http://) answers our preamble with
    an error, if it answers at all before its read timeout: it is asked
    on another connection, so that the user hears so at once."""
    data: bytes | bytearray = b""
    with trio.move_on_after(HELPER_SPEAKS_WITHIN if reopen is not None else math.inf):
        data = await stream.receive_some(RECEIVE_SIZE)
        return _not_http(data, addr)

    async def probe() -> None:
        assert reopen is not None
        if await _speaks_http(reopen):
            raise _http_error(addr)

    async with open_nursery() as nursery:
        nursery.start_soon(probe)
        data = await stream.receive_some(RECEIVE_SIZE)
        nursery.cancel_scope.cancel()
    return _not_http(data, addr)


async def _speaks_http(reopen: Callable[[], Awaitable[trio.abc.Stream]]) -> bool:
    """Whether the peer answers an HTTP request like an HTTP server. A
    helper takes the request for a preamble it does not know and closes
    the connection without a word."""
    with trio.move_on_after(HTTP_PROBE_TIMEOUT):
        try:
            probe = await reopen()
        except (ConnectError, OSError, ValueError):
            return False
        try:
            await probe.send_all(HTTP_PROBE)
            return (await probe.receive_some(len(b"HTTP/"))).startswith(b"HTTP/")
        except (trio.BrokenResourceError, OSError):
            return False
        finally:
            await trio.aclose_forcefully(probe)
    return False


def _not_http(data: bytes | bytearray, addr: Address) -> bytes | bytearray:
    if data.startswith(b"HTTP/"):
        raise _http_error(addr)
    return data


def _http_error(addr: Address) -> ConnectError:
    host = f"[{addr.host}]" if ":" in addr.host else addr.host
    return ConnectError(
        f"an HTTP server answered at {addr}, not a livetrace helper: for a service that serves "
        f"net/http/pprof there, try http://{host}:{addr.port}"
    )


def _received(conn: proto.ClientConnection, data: bytes | bytearray) -> list[proto.Event | _Failure]:
    """The events the data completes; a protocol error comes after the good
    frames before it, so that they are used (recorded) first."""
    try:
        return conn.receive_data(data)  # type: ignore[return-value]  # list is invariant: its events are proto.Events
    except ProtocolError as e:
        return [*e.events, _Failure(e)]  # type: ignore[list-item]  # a frame reader puts its proto.Events there


async def _handshake(
    stream: trio.abc.Stream,
    addr: Address,
    hello: Hello,
    heartbeat_ms: int,
    reopen: Callable[[], Awaitable[trio.abc.Stream]] | None = None,
) -> tuple[proto.SessionInfo, proto.ClientConnection, deque[proto.Event | _Failure]]:
    """``reopen``: another connection to the same TCP address, to ask a
    silent peer whether it is an HTTP server."""
    conn = proto.ClientConnection()
    try:
        await stream.send_all(proto.client_preamble())
        first = await _first_bytes(stream, addr, reopen)
        if not first:
            raise ConnectError(f"{addr} closed the connection during the handshake")
        events: deque[proto.Event | _Failure] = deque(_received(conn, first))
        version = 0
        while True:
            while events:
                ev = events.popleft()
                if isinstance(ev, proto.PeerPreamble):
                    version = proto.negotiate(ev)
                    await stream.send_all(
                        proto.hello(
                            token=hello.token,
                            duration_ns=int((hello.duration or 0) * 1e9),
                            client=hello.name,
                            advance_ms=hello.advance_ms,
                            advance_bytes=hello.generation_bytes or 0,
                            segment_ms=int((hello.segment or 0) * 1000),
                            heartbeat_ms=heartbeat_ms,
                        )
                    )
                elif isinstance(ev, proto.Refusal):
                    raise refusal(shown(ev.code), shown(ev.message))
                elif isinstance(ev, proto.SessionInfo) and version:
                    if ev.protocol != version:
                        raise ProtocolError(
                            f"the handshake from {addr} names protocol version {ev.protocol}, "
                            f"not version {version} that both sides speak"
                        )
                    return ev, conn, events
                elif isinstance(ev, proto.Heartbeat):
                    continue
                elif isinstance(ev, _Failure):
                    raise ev.error
                else:
                    raise ProtocolError(f"expected a handshake from {addr}, got {type(ev).__name__}")
            data = await stream.receive_some(RECEIVE_SIZE)
            if not data:
                raise ConnectError(f"{addr} closed the connection during the handshake")
            events.extend(_received(conn, data))
    except (trio.BrokenResourceError, OSError) as e:
        raise ConnectError(f"connection to {addr} broke during the handshake: {e}") from None
