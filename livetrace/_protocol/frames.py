"""The livetrace session protocol, sans-IO: bytes in, protocol events out.

See docs/protocol.md. The preamble and the frame envelope are fixed for
every protocol version, so peers can always tell each other which versions
they speak before anything else is understood.
"""

from __future__ import annotations

import enum
import json
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from construct import Const, Int16ub, Struct

from livetrace._errors import ProtocolError, ProtocolVersionError, TraceFormatError

# The helper's gap and segment frames are read into the stream's own items.
from livetrace._items import Gap as Gap
from livetrace._items import SegmentEnd as SegmentEnd
from livetrace._protocol import schema
from livetrace._trace.version import TraceVersion

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

MIN_VERSION = 1
MAX_VERSION = 1

Preamble = Struct(
    "magic" / Const(b"LIVETRACE"),
    "min_version" / Int16ub,
    "max_version" / Int16ub,
).compile()

# A frame's header (type u8, payload length u32) and a chunk frame's
# (seq u64, read_unix_ns i64, generation u64), big-endian: read in place
# with struct, as a chunk frame comes every 64 KiB of trace (construct's
# parse of a copy of their bytes was a tenth of the GIL a live view held).
_FRAME_HEAD = struct.Struct(">BI")
_CHUNK_HEAD = struct.Struct(">QqQ")

PREAMBLE_SIZE = Preamble.sizeof()
FRAME_HEADER_SIZE = _FRAME_HEAD.size
CHUNK_HEADER_SIZE = _CHUNK_HEAD.size

# Frame types.
HELLO = 0x01
STOP = 0x02
HANDSHAKE = 0x10
ERROR = 0x11
CHUNK = 0x20
GAP = 0x21
END = 0x22
SEGMENT = 0x23
HEARTBEAT = 0x24

# A chunk is one buffer the runtime handed over: a batch of at most 64 KiB
# on modern Go, a per-P buffer or a piece of the footer (also flushed in
# 64 KiB buffers) on legacy Go; the demo's largest is under 70 KB on every
# toolchain. 16 MiB leaves a wide margin and still bounds what a peer can
# make the client hold for one frame (docs/protocol.md, "Security model").
MAX_FRAME = 16 << 20


def _frame_head(src: bytes | bytearray, pos: int) -> tuple[int, int]:
    """The type and payload length of the frame whose header starts at pos;
    ProtocolError past MAX_FRAME (before any of it is waited for)."""
    ftype, length = _FRAME_HEAD.unpack_from(src, pos)
    if length > MAX_FRAME:
        raise ProtocolError(
            f"frame of {length} bytes (type {ftype:#04x}) exceeds the {MAX_FRAME}-byte "
            "limit; a livetrace helper sends chunks of at most 64 KiB"
        )
    return ftype, length


class SessionMode(enum.Enum):
    """How a session's trace comes, decided once (``SessionInfo.mode``)."""

    MODERN = "modern"
    """Go 1.22+: each generation is complete, its events exact, as it ends."""
    LEGACY_SEGMENTS = "legacy segments"
    """Go 1.21 and older, restarted every ``segment_ms``: each segment is a
    complete trace as it ends (its events exact then); nothing is traced
    between two."""
    LEGACY_PROVISIONAL = "legacy provisional"
    """Go 1.21 and older in one trace: provisional events as the runtime's
    buffers arrive, the exact ones only when the trace stops."""
    PPROF_WINDOWS = "pprof windows"
    """net/http/pprof: ``/debug/pprof/trace`` windows of ``window_ms`` back to
    back, each a complete trace of either format; nothing is traced between
    two."""


@dataclass(frozen=True)
class SessionInfo:
    """What the helper says about the traced process when a session starts."""

    protocol: int
    helper: str
    go_version: str
    goos: str
    goarch: str
    pid: int
    executable: str
    gomaxprocs: int
    start_unix_ns: int
    queue_bytes: int
    session: int
    advance_ms: int = 0  # how often the helper closes a generation for us; 0: the runtime's own period
    advance_bytes: int = 0  # the helper closes a generation once it holds this much; 0: by time only
    segment_ms: int = 0  # how often the helper restarts a legacy trace; 0: one trace for the session
    # The session joined a trace already running for other consumers: the stream is the trace header,
    # then everything from generation first_generation (Go 1.22+) or from segment first_segment (legacy).
    joined_running: bool = False
    first_generation: int = 0
    first_segment: int = 0
    # A net/http/pprof session's window (not in the helper's handshake): 0 for a helper's session.
    window_ms: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def trace_version(self) -> TraceVersion | None:
        """The trace format the runtime writes, from ``go_version`` (a pprof
        session's names the format itself); None for a version that names
        no Go release (a development build's, say), which is taken for new."""
        try:
            return TraceVersion.of_runtime(self.go_version).format
        except (ValueError, TraceFormatError):
            return None

    @property
    def legacy(self) -> bool:
        """Whether the runtime writes a legacy trace (Go 1.21 and older)."""
        version = self.trace_version
        return version is not None and version.is_legacy

    @property
    def mode(self) -> SessionMode:
        """How the session's trace comes (see :class:`SessionMode`): what
        every consumer reads, rather than working it out again."""
        if self.window_ms:
            return SessionMode.PPROF_WINDOWS
        if self.segment_ms:
            return SessionMode.LEGACY_SEGMENTS
        if self.legacy:
            return SessionMode.LEGACY_PROVISIONAL
        return SessionMode.MODERN

    @property
    def restarts(self) -> bool:
        """Whether the trace is cut into complete traces as it goes (legacy
        segments, or net/http/pprof windows): a legacy trace's exact events
        then come soon, and provisional ones are not worth making."""
        return self.mode in (SessionMode.LEGACY_SEGMENTS, SessionMode.PPROF_WINDOWS)


@dataclass(frozen=True)
class Chunk:
    """One trace chunk exactly as ``runtime.ReadTrace`` returned it."""

    seq: int
    read_unix_ns: int
    generation: int  # 0 for the header and for every legacy chunk
    data: bytes


@dataclass(frozen=True)
class End:
    """The helper's last word: why the session ended and what was lost."""

    reason: str
    complete: bool
    chunks: int
    bytes: int
    dropped_chunks: int = 0
    dropped_bytes: int = 0
    dropped_generations: int = 0
    detail: str = ""


@dataclass(frozen=True)
class Heartbeat:
    """The helper is alive and had nothing else to send."""


@dataclass(frozen=True)
class PeerPreamble:
    min_version: int
    max_version: int


@dataclass(frozen=True)
class Refusal:
    code: str
    message: str


Event = PeerPreamble | SessionInfo | Refusal | Chunk | Gap | SegmentEnd | End | Heartbeat
# What a session's frame source yields, a helper's or net/http/pprof's (whose
# WindowGap and WindowEnd are a Gap and a SegmentEnd).
Frame = Chunk | Gap | SegmentEnd


def client_preamble() -> bytes:
    return cast(bytes, Preamble.build({"min_version": MIN_VERSION, "max_version": MAX_VERSION}))


def encode_frame(frame_type: int, payload: bytes = b"") -> bytes:
    return _FRAME_HEAD.pack(frame_type, len(payload)) + payload


def hello(
    *,
    token: str | None,
    duration_ns: int,
    client: str,
    advance_ms: int = 0,
    advance_bytes: int = 0,
    segment_ms: int = 0,
    heartbeat_ms: int = 0,
) -> bytes:
    body: dict[str, Any] = {"client": client}
    if advance_ms > 0:
        body["advance_ms"] = advance_ms
    if advance_bytes > 0:
        body["advance_bytes"] = advance_bytes
    if segment_ms > 0:
        body["segment_ms"] = segment_ms
    if heartbeat_ms > 0:
        body["heartbeat_ms"] = heartbeat_ms
    if token:
        body["token"] = token
    if duration_ns > 0:
        body["duration_ns"] = duration_ns
    return encode_frame(HELLO, json.dumps(body).encode())


def negotiate(peer: PeerPreamble) -> int:
    """The protocol version both sides speak, or ProtocolVersionError."""
    lo, hi = max(MIN_VERSION, peer.min_version), min(MAX_VERSION, peer.max_version)
    if lo > hi:
        raise ProtocolVersionError(
            "version",
            f"the helper speaks livetrace protocol versions {peer.min_version} to {peer.max_version} "
            f"and this client {MIN_VERSION} to {MAX_VERSION}; upgrade the older side",
        )
    return hi


_Message = TypeVar("_Message", bound="DataclassInstance")


def _message(cls: type[_Message], shape: schema.Schema, body: bytes) -> _Message:
    known, extra = shape.parse(body)
    if "extra" in cls.__dataclass_fields__:
        known = {**known, "extra": extra}
    return cls(**known)


class ClientConnection:
    """The client's side of the protocol as a state machine.

    ``receive_data`` takes bytes in any chunking and returns the events they
    complete; ``receive_data(b"")`` means the peer closed the connection.
    Every message is checked against its declared shape and against the
    order frames may come in (a handshake first, a gap only after the trace
    header, nothing after the end): a peer that breaks either gets a
    :class:`ProtocolError`.
    """

    def __init__(self) -> None:
        # The start of a frame whose end has not arrived (the preamble's,
        # before it is seen): the rest of the stream is read where it
        # arrives, only this piece kept between calls. Grown in place: a
        # peer may send a large frame a few bytes at a time.
        self._held = bytearray()
        self._preamble_seen = False
        self._handshake_seen = False
        self._chunk_seen = False
        self._ended = False
        self.closed = False

    def receive_data(self, data: bytes | bytearray) -> list[Event]:
        if self.closed:
            raise ProtocolError("data after the end of the session")
        if not data:
            self.closed = True
            return []
        data = data if type(data) is bytes else bytes(data)
        events: list[Event] = []
        if not self._preamble_seen:
            data, self._held = bytes(self._held) + data, bytearray()
            if len(data) < PREAMBLE_SIZE:
                self._held += data
                return events
            try:
                p = Preamble.parse(data[:PREAMBLE_SIZE])
            except Exception:
                raise ProtocolError(
                    "the peer is not a livetrace helper (no LIVETRACE preamble); check the address"
                ) from None
            data = data[PREAMBLE_SIZE:]
            self._preamble_seen = True
            events.append(PeerPreamble(p.min_version, p.max_version))
        try:
            pos = self._complete_held(data, events)
            if pos is not None:
                self._held += data[self._frames(data, pos, events) :]
        except ProtocolError as e:
            # The frames before the bad one are good: the caller may still use
            # them (a recording keeps their chunks) before reporting the error.
            e.events = list(events)
            self.closed = True
            raise
        return events

    def _complete_held(self, data: bytes, events: list[Event]) -> int | None:
        """The held frame completed from the front of data (only its own
        bytes copied) and read: where data's next frame starts, or None when
        data did not complete it (the held piece grown by all of data)."""
        pos = 0
        held = self._held
        while held:
            header_only = len(held) < FRAME_HEADER_SIZE  # its header first, for its length
            size = FRAME_HEADER_SIZE + (0 if header_only else _frame_head(held, 0)[1])
            take = min(size - len(held), len(data) - pos)
            held += data[pos : pos + take]
            pos += take
            if len(held) < size:
                return None
            if not header_only:
                frame = bytes(held)
                held.clear()
                self._frames(frame, 0, events)
        return pos

    def _frames(self, src: bytes, pos: int, events: list[Event]) -> int:
        """The whole frames of src from pos read into events: where the first
        that is not whole starts."""
        end = len(src)
        while end - pos >= FRAME_HEADER_SIZE:
            ftype, length = _frame_head(src, pos)
            if end - pos < FRAME_HEADER_SIZE + length:
                break
            start = pos + FRAME_HEADER_SIZE
            pos = start + length
            events.append(self._frame(ftype, src, start, pos))
        return pos

    def _frame(self, ftype: int, buf: bytes, start: int, stop: int) -> Event:
        if self._ended:
            raise ProtocolError(f"frame of type {ftype:#04x} after the end frame")
        if ftype == HEARTBEAT:
            return Heartbeat()  # its payload, empty in version 1, is not read
        if ftype == HANDSHAKE:
            if self._handshake_seen:
                raise ProtocolError("a second handshake frame in one session")
            self._handshake_seen = True
            return _message(SessionInfo, schema.HANDSHAKE, buf[start:stop])
        if ftype == ERROR:
            return _message(Refusal, schema.ERROR, buf[start:stop])
        if ftype == CHUNK:
            if stop - start < CHUNK_HEADER_SIZE:
                raise ProtocolError(f"chunk frame of {stop - start} bytes is shorter than its header")
            seq, read_unix_ns, generation = _CHUNK_HEAD.unpack_from(buf, start)
            self._in_order("chunk")
            self._chunk_seen = True
            return Chunk(seq, read_unix_ns, generation, buf[start + CHUNK_HEADER_SIZE : stop])
        body = buf[start:stop]
        if ftype == GAP:
            gap: Gap = _message(Gap, schema.GAP, body)
            if gap.last_generation < gap.first_generation:
                raise ProtocolError(
                    f"malformed gap frame: last_generation {gap.last_generation} is before "
                    f"first_generation {gap.first_generation}"
                )
            self._in_order("gap", after_chunk="a gap can only follow the trace header")
            return gap
        if ftype == SEGMENT:
            seg: SegmentEnd = _message(SegmentEnd, schema.SEGMENT, body)
            self._in_order("segment", after_chunk="a segment ends a trace")
            return seg
        if ftype == END:
            end: End = _message(End, schema.END, body)
            self._in_order("end")
            self._ended = True
            return end
        raise ProtocolError(f"unknown frame type {ftype:#04x} from the helper")

    def _in_order(self, what: str, after_chunk: str = "") -> None:
        if not self._handshake_seen:
            raise ProtocolError(f"{what} frame before the handshake")
        if after_chunk and not self._chunk_seen:
            raise ProtocolError(f"{what} frame before the first chunk: {after_chunk}")

    @property
    def buffered(self) -> int:
        """Bytes received that do not yet make a whole frame."""
        return len(self._held)
