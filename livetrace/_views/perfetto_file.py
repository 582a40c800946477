"""A :class:`Timeline` as a Perfetto trace file: a ``Trace`` proto of
TracePackets. The track descriptors are made with the ``perfetto``
package's trace builder and protos; then, per track, its slices as
balanced TYPE_SLICE_BEGIN/END pairs and TYPE_INSTANT events, and its
counter values as TYPE_COUNTER events.

Those events are most of a file (two or three per span) and a protobuf
message object costs about 9 µs each, so they are written by the small
encoder below: the same fields, in the wire format the package's own
TracePacket reads back (the tests read every file with it). Packets come
track by track, each track's in time order: the trace processor sorts a
file's packets by time before it reads them.
"""

from __future__ import annotations

from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import CounterDescriptor, TrackDescriptor, TrackEvent
from perfetto.trace_builder.proto_builder import TraceProtoBuilder

from livetrace._views.perfetto import Slice, Timeline

SEQUENCE = 1  # every packet comes from one writer: ours

# Wire tags (field number << 3 | wire type) of the fields the events use,
# by name from the package's descriptors.
_LEN, _VARINT, _FIXED64 = 2, 0, 1


def _tag(message: type, name: str, wire: int) -> bytes:
    return _varint(message.DESCRIPTOR.fields_by_name[name].number << 3 | wire)  # type: ignore[attr-defined]


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # an int64's two's complement, as protobuf writes it
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, data: bytes) -> bytes:
    return tag + _varint(len(data)) + data


def _packet_tags() -> tuple[bytes, ...]:
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace, TracePacket

    return (
        _tag(Trace, "packet", _LEN),
        _tag(TracePacket, "timestamp", _VARINT),
        _tag(TracePacket, "trusted_packet_sequence_id", _VARINT) + _varint(SEQUENCE),
        _tag(TracePacket, "track_event", _LEN),
        _tag(TrackEvent, "type", _VARINT),
        _tag(TrackEvent, "track_uuid", _VARINT),
        _tag(TrackEvent, "name", _LEN),
        _tag(TrackEvent, "categories", _LEN),
        _tag(TrackEvent, "flow_ids", _FIXED64),
        _tag(TrackEvent, "terminating_flow_ids", _FIXED64),
        _tag(TrackEvent, "counter_value", _VARINT),
    )


_PACKET, _TIMESTAMP, _SEQUENCE, _TRACK_EVENT, _TYPE, _UUID, _NAME, _CATEGORY, _FLOW, _END_FLOW, _COUNTER = (
    _packet_tags()
)


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def event(self, time: int, body: bytes) -> None:
        packet = _TIMESTAMP + _varint(time) + _SEQUENCE + _field(_TRACK_EVENT, body)
        self.parts.append(_field(_PACKET, packet))


def _descriptors(timeline: Timeline, uuids: dict[tuple[object, ...], int]) -> bytes:
    builder = TraceProtoBuilder()  # type: ignore[no-untyped-call]  # the package has no annotations here
    explicit = TrackDescriptor.ChildTracksOrdering.EXPLICIT
    for t in timeline.tracks:
        d = TrackDescriptor(uuid=uuids[t.key], name=t.name, sibling_order_rank=t.rank, child_ordering=explicit)
        if t.parent is not None:
            d.parent_uuid = uuids[t.parent]
        if t.counter is not None:
            d.counter.CopyFrom(CounterDescriptor())
        packet = builder.add_packet()
        packet.trusted_packet_sequence_id = SEQUENCE
        packet.track_descriptor.CopyFrom(d)
    data: bytes = builder.serialize()
    return data


def encode_timeline(timeline: Timeline) -> bytes:
    """The timeline as the bytes of a Perfetto trace (a ``Trace`` proto)."""
    uuids = {t.key: i + 1 for i, t in enumerate(timeline.tracks)}
    w = _Writer()
    event = w.event
    begin = _TYPE + _varint(TrackEvent.TYPE_SLICE_BEGIN)
    instant = _TYPE + _varint(TrackEvent.TYPE_INSTANT)
    counter = _TYPE + _varint(TrackEvent.TYPE_COUNTER)
    for t in timeline.tracks:
        uuid = _UUID + _varint(uuids[t.key])
        for time, value in t.counter or ():
            event(time, counter + uuid + _COUNTER + _varint(value))
        end = _TYPE + _varint(TrackEvent.TYPE_SLICE_END) + uuid
        heads: dict[tuple[str, str, bool], bytes] = {}  # a track's slices share a few names
        stack: list[Slice] = []
        for s in t.slices:
            while stack and stack[-1].end <= s.start:
                event(stack.pop().end, end)
            key = (s.name, s.category, s.instant)
            head = heads.get(key)
            if head is None:
                kind = instant if s.instant else begin
                head = heads[key] = (
                    kind + uuid + _field(_NAME, s.name.encode()) + _field(_CATEGORY, s.category.encode())
                )
            if s.flows_out or s.flows_in:
                head += b"".join(_FLOW + f.to_bytes(8, "little") for f in s.flows_out)
                head += b"".join(_END_FLOW + f.to_bytes(8, "little") for f in s.flows_in)
            event(s.start, head)
            if not s.instant:
                stack.append(s)
        while stack:
            event(stack.pop().end, end)
    return _descriptors(timeline, uuids) + b"".join(w.parts)
