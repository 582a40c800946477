"""A :class:`Timeline` as a Perfetto trace file (TracePacket protos of the
``perfetto`` package's trace builder): a TrackDescriptor per track, then
per track its slices as balanced TYPE_SLICE_BEGIN/END pairs and
TYPE_INSTANT events, and its counter values as TYPE_COUNTER events.

Packets come track by track, each track's in time order: the trace
processor sorts a file's packets by time before it reads them.
"""

from __future__ import annotations

from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import CounterDescriptor, TrackDescriptor, TrackEvent
from perfetto.trace_builder.proto_builder import TraceProtoBuilder

from livetrace._views.perfetto import Slice, Timeline

SEQUENCE = 1  # every packet comes from one writer: ours


def encode_timeline(timeline: Timeline) -> bytes:
    """The timeline as the bytes of a Perfetto trace (a ``Trace`` proto)."""
    builder = TraceProtoBuilder()  # type: ignore[no-untyped-call]  # the package has no annotations here
    add = builder.trace.packet.add
    uuids = {t.key: i + 1 for i, t in enumerate(timeline.tracks)}
    explicit = TrackDescriptor.ChildTracksOrdering.EXPLICIT
    for t in timeline.tracks:
        d = TrackDescriptor(uuid=uuids[t.key], name=t.name, sibling_order_rank=t.rank, child_ordering=explicit)
        if t.parent is not None:
            d.parent_uuid = uuids[t.parent]
        if t.counter is not None:
            d.counter.CopyFrom(CounterDescriptor())
        add(trusted_packet_sequence_id=SEQUENCE, track_descriptor=d)
    begin, end, instant = TrackEvent.TYPE_SLICE_BEGIN, TrackEvent.TYPE_SLICE_END, TrackEvent.TYPE_INSTANT
    counter = TrackEvent.TYPE_COUNTER
    for t in timeline.tracks:
        uuid = uuids[t.key]
        for time, value in t.counter or ():
            add(
                timestamp=time,
                trusted_packet_sequence_id=SEQUENCE,
                track_event=TrackEvent(type=counter, track_uuid=uuid, counter_value=value),
            )
        ends_at = TrackEvent(type=end, track_uuid=uuid)
        stack: list[Slice] = []
        for s in t.slices:
            while stack and stack[-1].end <= s.start:
                add(timestamp=stack.pop().end, trusted_packet_sequence_id=SEQUENCE, track_event=ends_at)
            ev = TrackEvent(
                type=instant if s.instant else begin,
                track_uuid=uuid,
                name=s.name,
                categories=(s.category,),
                flow_ids=s.flows_out,
                terminating_flow_ids=s.flows_in,
            )
            add(timestamp=s.start, trusted_packet_sequence_id=SEQUENCE, track_event=ev)
            if not s.instant:
                stack.append(s)
        while stack:
            add(timestamp=stack.pop().end, trusted_packet_sequence_id=SEQUENCE, track_event=ends_at)
    data: bytes = builder.serialize()
    return data
