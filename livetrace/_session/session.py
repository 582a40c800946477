"""The trio shell around the protocol: connect to a helper, read its chunks."""

from __future__ import annotations

import contextlib
import math
import os
import socket
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import trio

from livetrace._attach.resolve import is_process_reference, resolve_process
from livetrace._errors import (
    ConnectError,
    ConnectionLostError,
    PeerTimeoutError,
    ProtocolError,
    refusal,
)
from livetrace._notice import Notice
from livetrace._plural import plural
from livetrace._protocol import frames as proto
from livetrace._protocol.address import Address, parse_address
from livetrace._protocol.text import shown
from livetrace._session import transport
from livetrace._session.defaults import IDLE_TIMEOUT, MAX_GENERATION_BYTES, MIN_ADVANCE, STOP_TIMEOUT
from livetrace._session.live import Item
from livetrace._session.nursery import open_nursery
from livetrace._session.pprof_http import PprofAddress, is_pprof_address
from livetrace._session.subscribers import DEFAULT_BUFFER, Fanout, Pump, Subscription, What
from livetrace._trace.legacy.live import Provisional
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import Event, Kind
from livetrace._trace.select.filter import Filter
from livetrace._version import __version__

RECEIVE_SIZE = 1 << 18
HANDSHAKE_TIMEOUT = 15.0
# A helper sends its preamble as it accepts a connection; a peer still silent
# after this long is asked, on a second connection, whether it speaks HTTP (an
# HTTP server waits for a request line, and our preamble never ends one).
HELPER_SPEAKS_WITHIN = 0.25
HTTP_PROBE = b"HEAD / HTTP/1.0\r\n\r\n"
HTTP_PROBE_TIMEOUT = 3.0
# The helper ends a duration by itself; the client sends its own STOP if it
# finds itself waiting this long past the duration.
STOP_SLACK = 2.0
# Beyond its queue (queue_bytes), what a helper may send after the stop:
# the buffers and tables the runtime flushes as it stops.
STOP_DRAIN_MARGIN = 64 << 20

Frame = proto.Chunk | proto.Gap | proto.SegmentEnd


@dataclass(frozen=True)
class Limits:
    """What the client holds a helper to (docs/protocol.md, "Security
    model"). ``idle_timeout``: the longest silence (None: wait forever);
    ``stop_timeout``: how long the helper may take to end the session after
    the stop, counting only time the client spends waiting on it;
    ``max_generation_bytes``: the most one generation (a legacy segment) may
    hold while its events are decoded."""

    idle_timeout: float | None = IDLE_TIMEOUT
    stop_timeout: float = STOP_TIMEOUT
    max_generation_bytes: int = MAX_GENERATION_BYTES

    @property
    def heartbeat_ms(self) -> int:
        """The heartbeat period to ask for: about ten in an idle timeout, at
        most one a second, and none if silence is never a failure."""
        if not self.idle_timeout:
            return 0
        return max(100, min(1000, int(self.idle_timeout * 100)))


@dataclass
class Counters:
    """What arrived so far; updated as frames arrive."""

    chunks: int = 0
    bytes: int = 0
    gaps: int = 0
    dropped_chunks: int = 0
    dropped_bytes: int = 0
    dropped_generations: int = 0
    largest_generation: int = 0  # bytes, once events are being decoded
    segments: int = 0  # legacy trace segments completed (segment mode)
    events: int = 0  # events decoded (when subscribers asked for them)
    spans: int = 0  # spans built (when subscribers asked for them)


class Session:
    """One trace session, from its start to its end: with a helper (from
    handshake to end frame) or with a net/http/pprof endpoint (windows of
    ``/debug/pprof/trace`` back to back, see ``pprof_windows``).

    Iterate over :meth:`chunks` for the raw trace; :attr:`end` is set once
    the source says the trace is over.
    """

    def __init__(
        self,
        source: FrameSource,
        address: Address | PprofAddress,
        info: proto.SessionInfo,
        nursery: trio.Nursery,
        *,
        limits: Limits | None = None,
        counters: Counters | None = None,
    ) -> None:
        self._source = source
        self._nursery = nursery
        self.address = address
        self.info = info
        self.counters = counters or Counters()  # shared with the source, which counts what it lost
        self.end: proto.End | None = None
        self._fanout = Fanout()
        self._pump: Pump | None = None
        self._default: Subscription | None = None
        self._default_kinds: frozenset[Kind] | None = None
        self.limits = limits or Limits()

    def chunks(self) -> AsyncIterator[Frame]:
        """The trace as it arrives: :class:`Chunk` frames and, where the
        helper shed generations, :class:`Gap` frames. Ends after the
        helper's end frame; raises :class:`ConnectionLostError` if the
        connection ends first."""
        return _FrameIterator(self)

    def event_batches(
        self, kinds: Iterable[Kind] | None = None, *, provisional: bool | None = None
    ) -> AsyncIterator[Item]:
        """Decoded events as they become available, as :class:`EventBatch`
        objects (a few thousand events of one generation each): each
        generation's events as soon as the generation is complete, and a
        :class:`Gap` where the helper shed generations. Decoding runs in a
        worker thread (the compiled core releases the GIL), so the
        connection keeps reading meanwhile; a consumer that falls behind
        holds up the decoder, and then the helper, which sheds generations
        rather than let the service wait.

        A legacy runtime (Go 1.21 and older) completes its trace only when
        it stops: its events come first as :class:`Provisional` batches as
        the chunks arrive (estimated times, stacks as ids), then, once the
        footer is in, a :class:`SymbolsResolved` notice and the exact events
        as EventBatch objects. In segment mode (``connect(segment=...)``)
        that happens once per segment, and a :class:`SegmentGap` marks each
        restart. ``provisional`` says whether to make the provisional
        events at all (the default: only when the trace is not cut into
        segments or pprof windows, whose exact events follow soon).

        ``kinds`` keeps only events of those kinds; the others are decoded
        but never made. Calling this again continues the same stream (with
        the same kinds); :meth:`events` shares it too. It is one lossless
        subscriber (see :meth:`subscribe`). Use events or :meth:`chunks`,
        not both."""
        wanted = None if kinds is None else frozenset(kinds)
        if self._default is None:
            if provisional is None:
                provisional = not self.info.restarts
            self._default = self.subscribe(
                Filter(kinds=wanted), what="batches", buffer=2, lossless=True, provisional=provisional
            )
            self._default_kinds = wanted
        elif kinds is not None and wanted != self._default_kinds:
            raise ValueError("this session's events are already being decoded for other kinds")
        return self._default  # type: ignore[return-value]  # a "batches" subscription yields Items

    def subscribe(
        self,
        filter: Filter | None = None,
        *,
        what: What = "events",
        buffer: int = DEFAULT_BUFFER,
        lossless: bool = False,
        provisional: bool = False,
    ) -> Subscription:
        """A new subscriber of this session's trace: its own filter, its own
        buffer of ``buffer`` batches, and ``what`` it gets ("events",
        "batches", "spans" or, undecoded, "frames"); see
        :class:`Subscription`. The trace is decoded once for all of them,
        and each filter runs in the core. A lossy subscriber (the default)
        that falls behind loses batches, and a :class:`SubscriberGap` says
        how many; a ``lossless`` one holds up the decoding, and so the
        helper, which then sheds generations for every subscriber.
        ``provisional`` gives a "batches" subscriber a legacy trace's
        provisional batches too. Subscribe to decoded items before the
        session's first frame is read (in the same step as the first
        subscription): the trace is decoded only if some subscriber wanted
        it then."""
        if self._pump is not None and what != "frames" and not self._pump.decoding and self._pump.started:
            raise ValueError("this session's trace is not being decoded: subscribe to events before it starts")
        sub = self._fanout.subscribe(filter, what=what, buffer=buffer, lossless=lossless, provisional=provisional)
        if self._pump is None:
            self._pump = Pump(self, self._fanout)
            self._nursery.start_soon(self._pump.run)
        return sub

    async def events(self, kinds: Iterable[Kind] | None = None) -> AsyncIterator[Event | Notice]:
        """Like :meth:`event_batches`, one event at a time, and only the
        exact ones: a legacy trace's provisional events are left out; the
        :class:`Notice` objects (gaps, a legacy trace's footer and segment
        gaps) come through."""
        async for batch in self.event_batches(kinds, provisional=False):
            if isinstance(batch, EventBatch):
                for ev in batch:
                    yield ev
            elif not isinstance(batch, Provisional):
                yield batch

    async def stop(self) -> None:
        """Ask the source to stop tracing: a helper stops at once, a pprof
        session at the end of the window in progress. The remaining chunks
        and the end still arrive through :meth:`chunks`."""
        await self._source.stop()

    async def _next_frame(self) -> Frame | None:
        if self.end is not None:
            return None
        ev = await self._source.next_frame()
        if ev is None:
            return None
        c = self.counters
        if isinstance(ev, proto.Chunk):
            c.chunks += 1
            c.bytes += len(ev.data)
            return ev
        if isinstance(ev, proto.SegmentEnd):
            c.segments += 1
            return ev
        if isinstance(ev, proto.WindowGap):  # nothing shed: the time between two windows
            c.gaps += 1
            return ev
        if isinstance(ev, proto.Gap):
            c.gaps += 1
            c.dropped_chunks += ev.chunks
            c.dropped_bytes += ev.bytes
            c.dropped_generations += ev.last_generation - ev.first_generation + 1
            return ev
        self.end = ev
        c.dropped_chunks, c.dropped_bytes = ev.dropped_chunks, ev.dropped_bytes
        c.dropped_generations = ev.dropped_generations
        return None


async def _stop_when_set(stop: trio.Event, session: Session) -> None:
    await stop.wait()
    await session.stop()


class FrameSource(Protocol):
    """Where a session's frames come from: :class:`HelperFrames` (a
    helper's connection) or ``PprofWindows`` (net/http/pprof)."""

    async def next_frame(self) -> Frame | proto.End | None:
        """The next frame; the :class:`End` once the trace is over, then None.
        Raises a :class:`LivetraceError` if the trace cannot go on."""
        ...

    async def stop(self) -> None: ...


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


class _FrameIterator:
    def __init__(self, session: Session) -> None:
        self._session = session

    def __aiter__(self) -> _FrameIterator:
        return self

    async def __anext__(self) -> Frame:
        frame = await self._session._next_frame()
        if frame is None:
            raise StopAsyncIteration
        return frame


@asynccontextmanager
async def connect(
    address: str | Address,
    *,
    token: str | None = None,
    duration: float | None = None,
    advance: float | None = None,
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
) -> AsyncIterator[Session]:
    """Start a trace session with the helper at ``address``, or, given an
    ``http://HOST:PORT`` address, with the service's net/http/pprof.

    ``token`` defaults to ``$LIVETRACE_TOKEN``; ``duration`` (seconds) makes
    the helper stop by itself; ``advance`` (seconds, 0.1 to 1) asks it to
    close a generation that often instead of about once a second, so that
    live events arrive sooner (Go 1.22+; ``info.advance_ms`` says what it
    does). ``segment`` (seconds, at least 1) asks a legacy runtime (Go 1.21
    and older) to stop and restart the trace that often, so that each
    segment is a complete trace soon after its events: :meth:`Session.chunks`
    then yields a :class:`SegmentEnd` after each but the last
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
    """
    if is_process_reference(address):
        resolved = await resolve_process(address)
        address = resolved.address
        if expected_pid is None:
            expected_pid = resolved.pid
    if advance is not None and not MIN_ADVANCE <= advance <= 1:
        raise ValueError(f"advance must be {MIN_ADVANCE} to 1 seconds (None leaves it to the runtime), not {advance}")
    if token is None:
        token = os.environ.get("LIVETRACE_TOKEN") or None
    name = client_name or f"livetrace-py/{__version__} pid {os.getpid()} on {socket.gethostname()}"
    limits = Limits(idle_timeout or None, stop_timeout, max_generation_bytes)
    if isinstance(address, str) and is_pprof_address(address):
        from livetrace._session.pprof_windows import open_pprof_session  # imports httpx: only when needed

        async with open_pprof_session(address, window=window, duration=duration, limits=limits, stop=stop) as session:
            yield session
        return
    if window is not None:
        raise ValueError("a window applies to http:// addresses (net/http/pprof) only")
    addr = address if isinstance(address, Address) else parse_address(address)
    peer = transport.PeerCheck(transport.uids(allow_uid), expected_pid)
    tls = transport.TLSOptions(
        None if tls_ca is None else Path(tls_ca), None if tls_pin is None else transport.parse_pin(tls_pin)
    )
    stream: trio.abc.Stream | None = None
    try:
        with trio.fail_after(HANDSHAKE_TIMEOUT):
            stream = await transport.open_stream(addr, peer, tls)
            reopen = (lambda: transport.open_stream(addr, peer, tls)) if addr.family == "tcp" else None
            info, conn, pending = await _handshake(
                stream, addr, token, duration, name, advance, segment, limits.heartbeat_ms, reopen
            )
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
            source = HelperFrames(stream, addr, info, conn, pending, counters, limits, duration)
            session = Session(source, addr, info, nursery, limits=limits, counters=counters)
            if stop is not None:
                nursery.start_soon(_stop_when_set, stop, session)
            yield session
            nursery.cancel_scope.cancel()
    finally:
        await transport.close(stream)


async def _handshake(
    stream: trio.abc.Stream,
    addr: Address,
    token: str | None,
    duration: float | None,
    name: str,
    advance: float | None,
    segment: float | None,
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
                            token=token,
                            duration_ns=int((duration or 0) * 1e9),
                            client=name,
                            # The runtime closes a generation about once a second by itself, and the
                            # helper takes 100-999 ms: a second or more is left to the runtime.
                            advance_ms=0 if advance is None or advance >= 1 else round(advance * 1000),
                            segment_ms=int((segment or 0) * 1000),
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
