"""The trio shell around the protocol: connect to a helper, read its chunks."""

from __future__ import annotations

import os
from collections import deque
import socket
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Union

import trio

from livetrace._session.nursery import open_nursery

from livetrace._protocol import frames as proto
from livetrace._protocol.address import Address, parse_address
from livetrace._errors import ConnectError, ConnectionLostError, LivetraceError, ProtocolError, refusal
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import Event, Kind
from livetrace._notice import Notice
from livetrace._trace.legacy.live import Provisional
from livetrace._session.live import Item, LiveDecoder
from livetrace._version import __version__

RECEIVE_SIZE = 1 << 18
HANDSHAKE_TIMEOUT = 15.0

Frame = Union[proto.Chunk, proto.Gap, proto.SegmentEnd]


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


class Session:
    """One trace session with a helper, from handshake to end frame.

    Iterate over :meth:`chunks` for the raw trace; :attr:`end` is set once
    the helper says the trace is over.
    """

    def __init__(self, stream: trio.abc.Stream, address: Address, info: proto.SessionInfo,
                 conn: proto.ClientConnection, pending: deque[proto.Event], nursery: trio.Nursery) -> None:
        self._stream = stream
        self._nursery = nursery
        self._conn = conn
        self._pending = pending
        self._stop_sent = False
        self._finished = False
        self.address = address
        self.info = info
        self.counters = Counters()
        self.end: proto.End | None = None
        self._event_stream: _EventStream | None = None

    def chunks(self) -> AsyncIterator[Frame]:
        """The trace as it arrives: :class:`Chunk` frames and, where the
        helper shed generations, :class:`Gap` frames. Ends after the
        helper's end frame; raises :class:`ConnectionLostError` if the
        connection ends first."""
        return _FrameIterator(self)

    def event_batches(self, kinds: Iterable[Kind] | None = None, *,
                      provisional: bool | None = None) -> AsyncIterator[Item]:
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
        events at all (the default: only when not in segment mode, where the
        exact ones follow within a segment).

        ``kinds`` keeps only events of those kinds; the others are decoded
        but never made. Calling this again continues the same stream (with
        the same kinds); :meth:`events` shares it too. Use events or
        :meth:`chunks`, not both."""
        wanted = None if kinds is None else frozenset(kinds)
        if self._event_stream is None:
            if provisional is None:
                provisional = not self.info.segment_ms
            self._event_stream = _EventStream(self, wanted, provisional)
        elif kinds is not None and wanted != self._event_stream.kinds:
            raise ValueError("this session's events are already being decoded for other kinds")
        return self._event_stream

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
        """Ask the helper to stop tracing. The remaining chunks and the end
        frame still arrive through :meth:`chunks`."""
        if self._stop_sent or self._finished:
            return
        self._stop_sent = True
        try:
            await self._stream.send_all(proto.encode_frame(proto.STOP))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the read side reports the lost connection

    async def _next_frame(self) -> Frame | None:
        while not self._pending:
            if self._finished:
                return None
            try:
                data = await self._stream.receive_some(RECEIVE_SIZE)
            except (trio.BrokenResourceError, OSError) as e:
                raise self._lost(f"connection to {self.address} broke: {e}") from None
            if not data:
                raise self._lost(f"the helper at {self.address} closed the connection before the end of the trace")
            self._pending.extend(self._conn.receive_data(data))
        ev = self._pending.popleft()
        c = self.counters
        if isinstance(ev, proto.Chunk):
            c.chunks += 1
            c.bytes += len(ev.data)
            return ev
        if isinstance(ev, proto.SegmentEnd):
            c.segments += 1
            return ev
        if isinstance(ev, proto.Gap):
            c.gaps += 1
            c.dropped_chunks += ev.chunks
            c.dropped_bytes += ev.bytes
            c.dropped_generations += ev.last_generation - ev.first_generation + 1
            return ev
        if isinstance(ev, proto.End):
            self.end = ev
            self._finished = True
            c.dropped_chunks, c.dropped_bytes = ev.dropped_chunks, ev.dropped_bytes
            c.dropped_generations = ev.dropped_generations
            return None
        if isinstance(ev, proto.Refusal):
            raise refusal(ev.code, ev.message)
        raise ProtocolError(f"unexpected {type(ev).__name__} in the middle of a session")

    def _lost(self, why: str) -> ConnectionLostError:
        self._finished = True
        c = self.counters
        return ConnectionLostError(
            f"{why}: got {c.bytes} bytes in {c.chunks} chunks; the trace is incomplete",
            bytes_received=c.bytes, chunks_received=c.chunks,
        )


class _EventStream:
    """Two tasks in the session's nursery: one reads frames off the socket,
    one decodes whatever has arrived in a worker thread, which hands each
    batch over as soon as it is made. Errors travel down the channel to the
    consumer."""

    def __init__(self, session: Session, kinds: frozenset[Kind] | None, provisional: bool) -> None:
        self.kinds = kinds
        self._counters = session.counters
        self._live = LiveDecoder(kinds, provisional)
        # Few batches in flight: memory stays bounded when the consumer is slow.
        self._send, self._recv = trio.open_memory_channel[object](2)
        session._nursery.start_soon(self._pump, session)

    async def _pump(self, session: Session) -> None:
        raw_send, raw_recv = trio.open_memory_channel[object](256)
        async with self._send, open_nursery() as nursery:
            nursery.start_soon(self._read, session, raw_send)
            await self._decode(raw_recv)

    @staticmethod
    async def _read(session: Session, out: trio.MemorySendChannel[object]) -> None:
        async with out:
            try:
                async for frame in session.chunks():
                    await out.send(frame)
            except LivetraceError as e:
                await out.send(e)

    def _deliver(self, items: Iterator[Item]) -> None:
        """In the worker thread: decode and hand over one batch at a time."""
        for item in items:
            trio.from_thread.run(self._send.send, item)
        self._counters.largest_generation = self._live.largest_generation

    async def _decode(self, frames: trio.MemoryReceiveChannel[object]) -> None:
        live = self._live
        try:
            async for first in frames:
                items = [first]
                while True:
                    try:
                        items.append(frames.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                error = next((i for i in items if isinstance(i, BaseException)), None)
                if error is not None:
                    items = items[: items.index(error)]
                await trio.to_thread.run_sync(self._deliver, live.process(items))  # type: ignore[arg-type]
                if error is not None:
                    await self._send.send(error)
                    return
            await trio.to_thread.run_sync(self._deliver, live.finish())
        except LivetraceError as e:
            await self._send.send(e)

    def __aiter__(self) -> _EventStream:
        return self

    async def __anext__(self) -> Item:
        try:
            item = await self._recv.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None
        if isinstance(item, BaseException):
            raise item
        return item  # type: ignore[return-value]


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


async def _open_stream(addr: Address) -> trio.abc.Stream:
    try:
        if addr.family == "unix":
            return await trio.open_unix_socket(addr.path)
        return await trio.open_tcp_stream(addr.host, addr.port)
    except FileNotFoundError:
        raise ConnectError(f"no socket at {addr.path}: is the service running with LIVETRACE_LISTEN={addr}?") from None
    except PermissionError:
        raise ConnectError(f"permission denied on {addr.path}: the socket is 0600, run as the service's user") from None
    except OSError as e:
        raise ConnectError(f"cannot connect to {addr}: {e.strerror or e}; is the service listening there?") from None


@asynccontextmanager
async def connect(address: str | Address, *, token: str | None = None, duration: float | None = None,
                  advance: float | None = None, segment: float | None = None,
                  client_name: str | None = None) -> AsyncIterator[Session]:
    """Start a trace session with the helper at ``address``.

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
    """
    addr = address if isinstance(address, Address) else parse_address(address)
    if token is None:
        token = os.environ.get("LIVETRACE_TOKEN") or None
    name = client_name or f"livetrace-py/{__version__} pid {os.getpid()} on {socket.gethostname()}"
    stream = await _open_stream(addr)
    try:
        with trio.fail_after(HANDSHAKE_TIMEOUT):
            info, conn, pending = await _handshake(stream, addr, token, duration, name, advance, segment)
    except trio.TooSlowError:
        await stream.aclose()
        raise ConnectError(f"{addr} accepted the connection but did not complete the handshake "
                           f"in {HANDSHAKE_TIMEOUT:.0f} s; is it a livetrace helper?") from None
    except BaseException:
        await stream.aclose()
        raise
    try:
        async with open_nursery() as nursery:
            session = Session(stream, addr, info, conn, pending, nursery)
            yield session
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await stream.aclose()


async def _handshake(stream: trio.abc.Stream, addr: Address, token: str | None, duration: float | None,
                     name: str, advance: float | None,
                     segment: float | None) -> tuple[proto.SessionInfo, proto.ClientConnection, deque[proto.Event]]:
    conn = proto.ClientConnection()
    try:
        await stream.send_all(proto.client_preamble())
        events: deque[proto.Event] = deque()
        sent_hello = False
        while True:
            while events:
                ev = events.popleft()
                if isinstance(ev, proto.PeerPreamble):
                    proto.negotiate(ev)
                    await stream.send_all(proto.hello(
                        token=token, duration_ns=int((duration or 0) * 1e9), client=name,
                        advance_ms=int((advance or 0) * 1000), segment_ms=int((segment or 0) * 1000)))
                    sent_hello = True
                elif isinstance(ev, proto.Refusal):
                    raise refusal(ev.code, ev.message)
                elif isinstance(ev, proto.SessionInfo) and sent_hello:
                    return ev, conn, events
                else:
                    raise ProtocolError(f"expected a handshake from {addr}, got {type(ev).__name__}")
            data = await stream.receive_some(RECEIVE_SIZE)
            if not data:
                raise ConnectError(f"{addr} closed the connection during the handshake")
            events.extend(conn.receive_data(data))
    except (trio.BrokenResourceError, OSError) as e:
        raise ConnectError(f"connection to {addr} broke during the handshake: {e}") from None
