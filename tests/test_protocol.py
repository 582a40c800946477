"""The sans-IO protocol layer: framing, any chunking, refusals of bad peers."""

from __future__ import annotations

import itertools
import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace import ProtocolError, ProtocolVersionError, parse_address
from livetrace._protocol import frames as proto

from .conftest import examples
from .mutate import mutate


def server_preamble(lo: int = 1, hi: int = 1) -> bytes:
    return b"LIVETRACE" + struct.pack(">HH", lo, hi)


def chunk_frame(seq: int, gen: int, data: bytes) -> bytes:
    return proto.encode_frame(proto.CHUNK, struct.pack(">QqQ", seq, 1_700_000_000_000_000_000 + seq, gen) + data)


def json_frame(ftype: int, obj: dict[str, object]) -> bytes:
    return proto.encode_frame(ftype, json.dumps(obj).encode())


HANDSHAKE = {
    "protocol": 1,
    "helper": "0.1.0",
    "go_version": "go1.26.6",
    "goos": "linux",
    "goarch": "amd64",
    "pid": 42,
    "executable": "/srv/x",
    "gomaxprocs": 2,
    "start_unix_ns": 1,
    "queue_bytes": 1 << 20,
    "session": 1,
    "future_field": "kept",
}

STREAM = (
    server_preamble()
    + json_frame(proto.HANDSHAKE, HANDSHAKE)
    + chunk_frame(1, 0, b"go 1.26 trace\x00\x00\x00")
    + chunk_frame(2, 1, bytes(range(256)) * 40)
    + chunk_frame(3, 1, b"\x34")
    + json_frame(
        proto.GAP, {"first_generation": 2, "last_generation": 3, "chunks": 9, "bytes": 999, "discard_received": True}
    )
    + chunk_frame(4, 4, b"\x01" * 70000)
    + json_frame(proto.END, {"reason": "client-stop", "complete": True, "chunks": 4, "bytes": 80289})
)


def decode(pieces: list[bytes]) -> list[proto.Event]:
    conn = proto.ClientConnection()
    events: list[proto.Event] = []
    for p in pieces:
        events.extend(conn.receive_data(p))
    assert conn.buffered == 0
    return events


def test_whole_stream_decodes_to_every_frame() -> None:
    events = decode([STREAM])
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["PeerPreamble", "SessionInfo", "Chunk", "Chunk", "Chunk", "Gap", "Chunk", "End"]
    info = events[1]
    assert isinstance(info, proto.SessionInfo) and info.pid == 42 and info.extra == {"future_field": "kept"}
    chunks = [e for e in events if isinstance(e, proto.Chunk)]
    assert [c.seq for c in chunks] == [1, 2, 3, 4]
    assert chunks[0].data == b"go 1.26 trace\x00\x00\x00" and len(chunks[3].data) == 70000
    assert isinstance(events[5], proto.Gap) and events[5].discard_received
    assert isinstance(events[-1], proto.End) and events[-1].complete


@given(st.lists(st.integers(min_value=1, max_value=len(STREAM) - 1), max_size=40))
def test_any_chunking_gives_identical_events(cuts: list[int]) -> None:
    bounds = [0, *sorted(set(cuts)), len(STREAM)]
    assert decode([STREAM[a:b] for a, b in itertools.pairwise(bounds)]) == decode([STREAM])


def test_one_byte_at_a_time() -> None:
    assert decode([STREAM[i : i + 1] for i in range(len(STREAM))]) == decode([STREAM])


def test_not_a_helper_is_refused_with_advice() -> None:
    with pytest.raises(ProtocolError, match="not a livetrace helper"):
        proto.ClientConnection().receive_data(b"HTTP/1.1 400 Bad Request\r\n\r\n")


def test_oversized_frame_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="exceeds"):
        proto.ClientConnection().receive_data(server_preamble() + struct.pack(">BI", proto.CHUNK, 1 << 31))


def test_unknown_frame_type_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="unknown frame type 0x7f"):
        proto.ClientConnection().receive_data(server_preamble() + proto.encode_frame(0x7F, b"x"))


def test_short_chunk_frame_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="shorter than its header"):
        proto.ClientConnection().receive_data(server_preamble() + proto.encode_frame(proto.CHUNK, b"1234"))


def test_malformed_json_frame_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="malformed end frame"):
        proto.ClientConnection().receive_data(server_preamble() + proto.encode_frame(proto.END, b"{nope"))
    with pytest.raises(ProtocolError, match="malformed gap frame"):
        proto.ClientConnection().receive_data(server_preamble() + json_frame(proto.GAP, {"first_generation": 1}))


def test_version_ranges_that_do_not_meet_are_refused_naming_both() -> None:
    with pytest.raises(
        ProtocolVersionError, match=r"helper speaks livetrace protocol versions 5 to 7 and this client 1 to 1"
    ):
        proto.negotiate(proto.PeerPreamble(5, 7))
    assert proto.negotiate(proto.PeerPreamble(0, 9)) == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("unix:/run/x.sock", "unix:/run/x.sock"),
        ("/run/x.sock", "unix:/run/x.sock"),
        ("tcp:127.0.0.1:7070", "tcp:127.0.0.1:7070"),
        ("localhost:7070", "tcp:localhost:7070"),
        ("tcp::7070", "tcp:127.0.0.1:7070"),
        ("[::1]:7070", "tcp:::1:7070"),
    ],
)
def test_addresses(text: str, expected: str) -> None:
    assert str(parse_address(text)) == expected


@pytest.mark.parametrize("text", ["unix:", "tcp:host", "host:99999", "nonsense"])
def test_bad_addresses_say_what_is_expected(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected unix:/path|empty unix socket"):
        parse_address(text)


@settings(max_examples=examples(400))
@given(st.data())
def test_fuzz_hostile_helper_streams_give_protocol_errors_only(data: st.DataObject) -> None:
    buf = mutate(data, STREAM)
    conn = proto.ClientConnection()
    try:
        for i in range(0, len(buf), 7):
            conn.receive_data(buf[i : i + 7])
    except ProtocolError:
        pass


def test_pieces_of_a_bytearray_give_the_same_events() -> None:
    bounds = [0, 3, 30, 5000, 5001, len(STREAM) - 2, len(STREAM)]
    pieces = [bytearray(STREAM[a:b]) for a, b in itertools.pairwise(bounds)]
    assert decode(pieces) == decode([STREAM])  # type: ignore[arg-type]  # decode's pieces are bytes; bytearrays read alike


def test_an_oversized_frame_is_refused_once_its_header_is_whole() -> None:
    """A header split across reads: the length is checked when the header
    is whole, not after the client waited for (and held) its payload."""
    conn = proto.ClientConnection()
    head = struct.pack(">BI", proto.CHUNK, 1 << 31)
    good = server_preamble() + json_frame(proto.HANDSHAKE, HANDSHAKE)
    assert [type(e).__name__ for e in conn.receive_data(good + head[:2])] == ["PeerPreamble", "SessionInfo"]
    assert conn.buffered == 2
    with pytest.raises(ProtocolError, match="exceeds") as err:
        conn.receive_data(head[2:])
    assert err.value.events == []
    with pytest.raises(ProtocolError, match="after the end of the session"):
        conn.receive_data(b"\x00")


def test_a_bad_frame_after_a_held_one_keeps_the_good_frames() -> None:
    """The frame held from the last read completes, then a bad one: the
    error carries the completed frame, for the caller to use first."""
    conn = proto.ClientConnection()
    first = chunk_frame(1, 0, b"go 1.26 trace\x00\x00\x00")
    conn.receive_data(server_preamble() + json_frame(proto.HANDSHAKE, HANDSHAKE) + first[:10])
    with pytest.raises(ProtocolError, match="unknown frame type 0x7f") as err:
        conn.receive_data(first[10:] + proto.encode_frame(0x7F, b"x"))
    assert [c.seq for c in err.value.events if isinstance(c, proto.Chunk)] == [1]


def test_a_large_frame_sent_a_few_bytes_at_a_time_arrives_whole() -> None:
    """A frame a slow (or hostile) peer sends in pieces is held and grown in
    place until whole, then read once."""
    payload = bytes(range(256)) * 4096  # 1 MiB
    stream = server_preamble() + json_frame(proto.HANDSHAKE, HANDSHAKE) + chunk_frame(1, 0, payload)
    conn = proto.ClientConnection()
    events: list[proto.Event] = []
    for i in range(0, len(stream), 61):
        events += conn.receive_data(stream[i : i + 61])
        assert conn.buffered < len(stream)
    assert conn.buffered == 0
    chunks = [e for e in events if isinstance(e, proto.Chunk)]
    assert len(chunks) == 1 and chunks[0].data == payload
