"""A :class:`Timeline` as a Perfetto trace file: a ``Trace`` proto of
TracePackets. The track descriptors are made with the ``perfetto``
package's trace builder and protos; then, per track, its counter values as
TYPE_COUNTER events, its slices as balanced TYPE_SLICE_BEGIN/END pairs and
its instants as TYPE_INSTANT events.

Those events are most of a file (two or three per span, millions), and a
protobuf message object costs microseconds each, so they are written in
bulk, as the same fields in the wire format the package's own TracePacket
reads back (the tests read every file with it): an event is its timestamp
then a tail (sequence id, TrackEvent) that all events of one kind on one
track share, made once (an event with flows has its own). The timestamps'
varints come from the package's protobuf encoder, a million at a time (a
repeated int64 field of TrackEvent, serialised and cut); every other step is a ``map``, a slice
assignment or a ``writelines`` over whole columns, which run in C. Only
tracks whose slices overlap (Ps, tasks) are walked slice by slice, to nest
them. Packets come track by track, each track's in time order: the trace
processor sorts a file's packets by time before it reads them.
"""

from __future__ import annotations

import io
import re
import struct
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from functools import cache, partial
from itertools import chain, compress, islice, repeat
from operator import add, le, lshift
from typing import Any

from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import (
    CounterDescriptor,
    Trace,
    TracePacket,
    TrackDescriptor,
    TrackEvent,
)
from perfetto.trace_builder.proto_builder import TraceProtoBuilder

from livetrace._views.perfetto import Timeline, Track, no_gc

SEQUENCE = 1  # every packet comes from one writer: ours
CHUNK = 1 << 20  # events framed at a time: bounds the memory their bytes objects take

# Wire types, and the tags (field number << 3 | wire type) of the fields
# the events use, by name from the package's descriptors.
_LEN, _VARINT, _FIXED64 = 2, 0, 1


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # an int64's two's complement, as protobuf writes it
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _tag(message: Any, name: str, wire: int) -> bytes:
    return _varint(message.DESCRIPTOR.fields_by_name[name].number << 3 | wire)


def _field(tag: bytes, data: bytes) -> bytes:
    return tag + _varint(len(data)) + data


_PACKET = _tag(Trace, "packet", _LEN)
_TIMESTAMP = _tag(TracePacket, "timestamp", _VARINT)
_SEQUENCE = _tag(TracePacket, "trusted_packet_sequence_id", _VARINT) + _varint(SEQUENCE)
_TRACK_EVENT = _tag(TracePacket, "track_event", _LEN)
_TYPE = _tag(TrackEvent, "type", _VARINT)
_UUID = _tag(TrackEvent, "track_uuid", _VARINT)
_NAME = _tag(TrackEvent, "name", _LEN)
_CATEGORY = _tag(TrackEvent, "categories", _LEN)
_FLOW = _tag(TrackEvent, "flow_ids", _FIXED64)
_END_FLOW = _tag(TrackEvent, "terminating_flow_ids", _FIXED64)
_COUNTER = _tag(TrackEvent, "counter_value", _VARINT)
# The bulk varint encoder: a repeated int64 of TrackEvent (not packed: tag, varint, tag, varint...).
_VARINTS = "extra_counter_values"
_VARINTS_TAG = _tag(TrackEvent, _VARINTS, _VARINT)
_SPLIT = re.compile(re.escape(_VARINTS_TAG) + b"([\x80-\xff]*[\x00-\x7f])", re.DOTALL)


def _varints(values: list[int]) -> tuple[Sequence[bytes], int]:
    """Each value's varint, as protobuf writes an int64; and their size if
    they are all of one size (the usual case: times of one trace), else 0."""
    ev = TrackEvent()
    getattr(ev, _VARINTS).extend(values)
    data = ev.SerializeToString()
    size = _size(values[0]) if values else 0
    step = len(_VARINTS_TAG) + size
    if len(data) == step * len(values) and _all_of_size(data, size):
        return _records(size, len(values)).unpack(data), size  # cut, not searched
    return _SPLIT.findall(data), 0


def _size(n: int) -> int:
    """The length of n's varint."""
    return 10 if n < 0 else max(1, (n.bit_length() + 6) // 7)


_HIGH, _LOW = bytes(range(0x80, 0x100)), bytes(range(0x80))


def _all_of_size(data: bytes, size: int) -> bool:
    """Whether data is tag, varint of that size, tag, varint...: each
    column of bytes checked whole (tag, continuation bytes, last byte)."""
    tag, step = len(_VARINTS_TAG), len(_VARINTS_TAG) + size
    n = len(data) // step
    return (
        all(data[i::step] == _VARINTS_TAG[i : i + 1] * n for i in range(tag))
        and not any(data[i::step].translate(None, _HIGH) for i in range(tag, step - 1))
        and not data[step - 1 :: step].translate(None, _LOW)
    )


@cache
def _records(size: int, n: int) -> struct.Struct:
    """n records of a tag and a varint of that size: the varints."""
    return struct.Struct(f"{len(_VARINTS_TAG)}x{size}s" * n)


class _Lengths(dict[int, bytes]):
    """length -> the bytes that go before a field of that length: its tag
    and the length's varint (then, for a packet, the timestamp's tag, which
    the length counts)."""

    def __init__(self, tag: bytes, then: bytes = b"") -> None:
        super().__init__()
        self.tag, self.then = tag, then

    def __missing__(self, n: int) -> bytes:
        self[n] = b = self.tag + _varint(n + len(self.then)) + self.then
        return b


class _Tails:
    """What follows an event's timestamp in its packet (the sequence id
    and the TrackEvent), by id: an event is (time, tail id)."""

    def __init__(self) -> None:
        self.tails: list[bytes] = []
        self.events = _Lengths(_SEQUENCE + _TRACK_EVENT)

    def add(self, body: bytes) -> int:
        """The id of a new tail with this TrackEvent."""
        self.tails.append(self.events[len(body)] + body)
        return len(self.tails) - 1

    def add_all(self, bodies: list[bytes]) -> range:
        first = len(self.tails)
        self.tails += map(add, map(self.events.__getitem__, map(len, bodies)), bodies)
        return range(first, len(self.tails))


class _Shared(dict[Any, int]):
    """Tail ids of a track's events by what they show (a label, a value),
    each made on first use from prefix + what make(key) gives."""

    def __init__(self, tails: _Tails, prefix: bytes, make: Any) -> None:
        super().__init__()
        self.tails, self.prefix, self.make = tails, prefix, make
        self.bodies: dict[int, bytes] = {}

    def __missing__(self, key: Any) -> int:
        body = self.prefix + self.make(key)
        self[key] = i = self.tails.add(body)
        self.bodies[i] = body
        return i


_le64 = partial(int.to_bytes, length=8, byteorder="little")  # a fixed64's bytes


def _flow_ids(tag: bytes, flows: Iterable[list[int]]) -> Iterator[bytes]:
    """Each list of flow ids as the repeated fixed64 field of that tag."""
    return map(add, repeat(tag), map(tag.join, map(map, repeat(_le64), flows)))


class _Events:
    """The events of every track, in file order, as columns."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.labels = [_field(_NAME, n.encode()) + _field(_CATEGORY, c.encode()) for n, c in timeline.labels]
        self.tails = _Tails()
        # Times and tail ids, in runs (a track's, a counter's) chained when written.
        self.times: list[list[int]] = []
        self.ids: list[list[int]] = []
        self.count = 0

    def track(self, t: Track, uuid: int) -> None:
        u = _UUID + _varint(uuid)
        if t.counter is not None:
            times, values = t.counter
            counter = _Shared(self.tails, _TYPE + _varint(TrackEvent.TYPE_COUNTER) + u + _COUNTER, _varint)
            self._add(times, list(map(counter.__getitem__, values)))
        if not len(t):
            return
        begins = _Shared(self.tails, _TYPE + _varint(TrackEvent.TYPE_SLICE_BEGIN) + u, self.labels.__getitem__)
        slices = list(map(begins.__getitem__, t.labels))
        instants = _Shared(self.tails, _TYPE + _varint(TrackEvent.TYPE_INSTANT) + u, self.labels.__getitem__)
        points = list(map(instants.__getitem__, t.instant_labels))
        # An event with flows has a tail of its own: its shared one's and the flow ids.
        if t.flows_out or t.flows_in:
            outs = dict(zip(t.flows_out, _flow_ids(_FLOW, t.flows_out.values()), strict=True))
            ins = dict(zip(t.flows_in, _flow_ids(_END_FLOW, t.flows_in.values()), strict=True))
            where = list(dict.fromkeys([*outs, *ins]))
            shared = map(begins.bodies.__getitem__, map(slices.__getitem__, where))
            if outs:  # tasks: a few
                extra: Iterable[bytes] = [outs.get(p, b"") + ins.get(p, b"") for p in where]
            else:
                extra = ins.values()
            for p, i in zip(where, self.tails.add_all(list(map(add, shared, extra))), strict=True):
                slices[p] = i
        if any(t.instant_flows):
            where = list(compress(range(len(points)), t.instant_flows))
            shared = map(instants.bodies.__getitem__, map(points.__getitem__, where))
            extra = map(add, repeat(_FLOW), map(_le64, compress(t.instant_flows, t.instant_flows)))
            for p, i in zip(where, self.tails.add_all(list(map(add, shared, extra))), strict=True):
                points[p] = i
        end = self.tails.add(_TYPE + _varint(TrackEvent.TYPE_SLICE_END) + u)
        st, en = t.starts, t.ends
        if all(map(le, en, st[1:])) and all(map(le, st, en)):
            self._flat(st, en, slices, t.instant_times, points, end)
        else:
            self._nested(st, en, slices, t.instant_times, points, end)

    def _add(self, times: list[int], ids: list[int]) -> None:
        self.times.append(times)
        self.ids.append(ids)
        self.count += len(times)

    def _flat(self, st: list[int], en: list[int], ids: list[int], it: list[int], ip: list[int], end: int) -> None:
        """Slices one after another (the common case): begin, end, begin,
        end, with the instants merged in; an instant at a time a slice
        begins or ends goes after it (as in _nested)."""
        times = [0] * (2 * len(st))
        times[::2], times[1::2] = st, en
        tails = [end] * len(times)
        tails[::2] = ids
        if it:
            # Sort keys: 2i + 1 for the i-th slice event, 2p for an instant
            # that goes before the p-th (after it, those at its time).
            keys = [*range(1, 2 * len(times), 2), *map(lshift, map(bisect_right, repeat(times), it), repeat(1))]
            order = sorted(range(len(keys)), key=keys.__getitem__)
            times += it
            tails += ip
            times, tails = list(map(times.__getitem__, order)), list(map(tails.__getitem__, order))
        self._add(times, tails)

    def _nested(self, st: list[int], en: list[int], ids: list[int], it: list[int], ip: list[int], end: int) -> None:
        """Slices that may overlap: each cut, where it must be, to the end
        of the slice it starts in; ends come out as later events pass them."""
        times: list[int] = []
        tails: list[int] = []
        time, tail = times.append, tails.append
        stack: list[int] = []  # ends of the open slices, innermost last
        push, pop = stack.append, stack.pop
        j, n = 0, len(it)
        for s, e, i in zip(st, en, ids, strict=True):
            while j < n and it[j] < s:  # instants before this slice (at its start: after it)
                while stack and stack[-1] <= it[j]:
                    time(pop())
                    tail(end)
                time(it[j])
                tail(ip[j])
                j += 1
            while stack and stack[-1] <= s:
                time(pop())
                tail(end)
            if stack and e > stack[-1]:
                e = stack[-1]
            push(e)
            time(s)
            tail(i)
        for x, i in zip(it[j:], ip[j:], strict=True):
            while stack and stack[-1] <= x:
                time(pop())
                tail(end)
            time(x)
            tail(i)
        times += reversed(stack)
        tails += repeat(end, len(stack))
        self._add(times, tails)

    def chunks(self) -> Iterator[bytes]:
        """Every event's packet, framed as a Trace's packet field: tag,
        length and timestamp's tag (one bytes object per length), the
        timestamp, the tail; a chunk of events at a time."""
        heads = _Lengths(_PACKET, _TIMESTAMP)
        tails = self.tails.tails
        # What goes before the timestamp, by tail id, for timestamps of one size.
        before: dict[int, list[bytes]] = {}
        times, ids = chain.from_iterable(self.times), chain.from_iterable(self.ids)
        for _ in range(0, self.count, CHUNK):
            chunk, mine = list(islice(times, CHUNK)), list(islice(ids, CHUNK))
            stamps, size = _varints(chunk)
            parts: list[bytes] = [b""] * (3 * len(chunk))
            if size:
                if size not in before:
                    before[size] = list(map(heads.__getitem__, map(add, map(len, tails), repeat(size))))
                parts[::3] = map(before[size].__getitem__, mine)
            else:
                parts[::3] = map(heads.__getitem__, map(add, map(len, stamps), map(len, map(tails.__getitem__, mine))))
            parts[1::3] = stamps
            parts[2::3] = map(tails.__getitem__, mine)
            out = io.BytesIO()
            out.writelines(parts)
            yield out.getvalue()


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


def encode_timeline(timeline: Timeline) -> Iterator[bytes]:
    """The timeline as the bytes of a Perfetto trace (a ``Trace`` proto),
    in pieces (the whole can be hundreds of MB: write them as they come)."""
    uuids = {t.key: i + 1 for i, t in enumerate(timeline.tracks)}
    yield _descriptors(timeline, uuids)
    with no_gc():
        events = _Events(timeline)
        for t in timeline.tracks:
            events.track(t, uuids[t.key])
        yield from events.chunks()
