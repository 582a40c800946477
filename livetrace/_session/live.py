"""Decoding a live session: the session's pipeline.

:class:`LiveDecoder` (sans-IO) turns a session's frames (chunks, gaps,
segment and window ends) into event batches and notices, through the
decoder :func:`open_decoder` picks for the trace's header.

:class:`Pump` is the pipeline around it, a stage with one input and one
output: frames in (a session's :meth:`~Session.chunks`), items out (to the
:class:`Fanout`, which hands them to the subscribers). It runs two tasks:
the reader, on trio, hands each frame to the frame subscribers and queues
it for decoding (the queue bounded by bytes: a full one holds up the
reader, and so the source); the decoder takes whatever has arrived into
its one worker thread (:meth:`Pump._work`), which decodes. With one job,
that thread also selects for each subscriber (and runs their maps) and
hands each item back to trio as soon as it is made, in the order of the
trace. With more, the decoder orders each Go 1.22+ generation in the pool
(``_trace/modern/parallel.py``: the thread only reads, assembles and
carries), cuts the items into units, a generation each, and puts them on a
line (``pipeline.py``) whose pool selects, builds spans and maps several
generations at once, and whose sequencer thread delivers them in order. At
most ``jobs + 1`` generations are in flight (ordered in the pool, on the
line, or being cut), holding at most ``max_pipeline_bytes`` of events
unless one alone holds more, and the decoder assembles one more.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor

import trio

from livetrace._errors import LimitExceededError, LivetraceError, TraceFormatError
from livetrace._host import keep_freed_memory
from livetrace._items import Gap, SegmentEnd, WindowEnd, WindowGap
from livetrace._nursery import open_nursery
from livetrace._protocol.frames import Chunk, Frame
from livetrace._session.defaults import PIPELINE_BYTES_PER_JOB
from livetrace._session.limits import Counters
from livetrace._session.pipeline import Cutter, Unit, stages, unit_bytes
from livetrace._session.pool import Line
from livetrace._session.subscribers import Fanout
from livetrace._session.window_gaps import WindowGaps
from livetrace._trace.decoder import Item, TraceDecoder, open_decoder
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import Kind
from livetrace._trace.modern.parallel import COLUMN_BYTES_PER_WIRE_BYTE, Holding, SharedPool

__all__ = ["Item", "LiveDecoder", "Pump"]

# Frames read but not yet decoded: the reader waits past this, or, with a pool, past the wire bytes
# that the pipeline's cap stands for, if more. The helper sheds what its consumer does not read for
# about a second (its queue, 64 MiB, is a second of a 16-core service's trace), and a pool's
# pipeline takes a few seconds to pass a generation of such a service on: the consumer holds the
# trace that waits meanwhile, as it came (a byte a byte), rather than the service, or nobody.
DECODE_QUEUE_BYTES = 32 << 20
# The decoder's thread is handed the frames that came within this long of the first (or this many
# bytes of them): what a generation waits for at most before it is decoded, on top of its own time.
GATHER_SECONDS = 0.05
GATHER_BYTES = 4 << 20


class _Ordered:
    """Among the frames to decode: a generation is ordered in the pool
    (decode what is ready, though no frame came)."""


_ORDERED = _Ordered()


class LiveDecoder:
    """Feeds a session's frames to its trace's decoder. ``kinds`` keeps only
    events of those kinds; ``provisional`` asks a legacy trace for its
    provisional events too."""

    def __init__(
        self,
        kinds: Iterable[Kind] | None = None,
        provisional: bool = True,
        jobs: int = 1,
        shared: SharedPool | None = None,
    ) -> None:
        self._kinds = None if kinds is None else frozenset(kinds)
        self._provisional = provisional
        self._jobs = jobs
        self._shared = shared
        self._decoder: TraceDecoder | None = None
        self._gaps = WindowGaps()  # a pprof session's gaps, measured on the trace's clock

    @property
    def largest_generation(self) -> int:
        """Bytes of the largest generation decoded so far."""
        return self._decoder.largest_generation if self._decoder is not None else 0

    @property
    def peak_in_flight(self) -> tuple[int, int]:
        """The most generations, and bytes, in flight at once (``open_decoder``'s ``shared``)."""
        return self._decoder.peak_in_flight if self._decoder is not None else (0, 0)

    def process(self, frames: list[Frame]) -> Iterator[Item]:
        """The batches (and notices) the frames complete, lazily: consume
        them all before processing more."""
        yield from self._gaps.items(self._process(frames))

    def _process(self, frames: list[Frame]) -> Iterator[Item]:
        for f in frames:
            d = self._decoder
            if isinstance(f, WindowGap):
                self._gaps.gap(f)  # the window before it was ended whole: nothing of it to abandon
                continue
            if isinstance(f, Chunk) and f.data:
                self._gaps.chunk(f.data)
            if d is None:
                if isinstance(f, Gap):
                    yield f
                if not isinstance(f, Chunk):
                    continue
                # The first chunk is the trace's header.
                d = self._decoder = open_decoder(
                    f.data, self._kinds, provisional=self._provisional, jobs=self._jobs, shared=self._shared
                )
            if isinstance(f, Chunk):
                yield from d.feed_iter(f.data, f.read_unix_ns)
                _stop_where_the_trace_ended(d)
            elif isinstance(f, Gap):
                yield from d.gap(f.first_generation if f.discard_received else None)
                yield f
            elif isinstance(f, WindowEnd):
                yield from d.end_trace()
            elif isinstance(f, SegmentEnd):
                self._gaps.segment_ended()
                yield from d.end_segment(f.stop_unix_ns)
        if self._decoder is not None:
            yield from self._decoder.ready()

    def finish(self) -> Iterator[Item]:
        if self._decoder is not None:
            yield from self._gaps.items(self._decoder.close_iter())
        yield from self._gaps.flush()


def _stop_where_the_trace_ended(decoder: TraceDecoder) -> None:
    """A file's decoding ends without an error where a table ends its trace,
    as Go's reader ends it (TraceEndsInTable). A service's stream goes on
    past that point, and nothing after it can be read: the session stops
    there and says why, rather than take the rest without a word."""
    ended = decoder.ended_in_table
    if ended is not None:
        raise TraceFormatError(
            f"{ended.reason}; the service's trace goes on past it, but no reader of it can, so the session stops here",
            offset=ended.offset,
            generation=ended.generation,
        )


class Pump:
    """A session's pipeline (see the module's docstring): ``frames`` in,
    items out to ``fanout``; it counts into ``counters`` and holds each
    generation to ``max_generation_bytes``. Decoding runs only if some
    subscriber wanted decoded items when the pump started. ``jobs``: the
    pool's threads (1: none, the decoder's thread does it all);
    ``max_pipeline_bytes``: the most the units on the line may hold at once
    (see :func:`unit_bytes`), past which it waits for fewer."""

    def __init__(
        self,
        frames: AsyncIterator[Frame],
        fanout: Fanout,
        counters: Counters,
        max_generation_bytes: int,
        jobs: int = 1,
        max_pipeline_bytes: int = PIPELINE_BYTES_PER_JOB,
    ) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, not {jobs}")
        if max_pipeline_bytes < 1:
            raise ValueError(f"max_pipeline_bytes must be at least 1, not {max_pipeline_bytes}")
        self.max_pipeline_bytes = max_pipeline_bytes
        self._frames = frames
        self._fanout = fanout
        self._counters = counters
        self.jobs = jobs
        self._line: Line[Unit] | None = None
        self._cutter = Cutter(fanout)
        self._live = LiveDecoder(None, False)
        self._meter = _GenerationMeter(max_generation_bytes)
        self._queued = 0
        wire = max_pipeline_bytes // COLUMN_BYTES_PER_WIRE_BYTE
        self._queue_cap = DECODE_QUEUE_BYTES if jobs == 1 else max(DECODE_QUEUE_BYTES, wire)
        self._room = trio.Event()
        self._to_decode: trio.MemorySendChannel[object] | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self.decoding = False
        self.started = False

    async def run(self) -> None:
        self.started = True
        self.decoding = self._fanout.decoding
        self._live = LiveDecoder(None, self._fanout.provisional)
        raw_send, raw_recv = trio.open_memory_channel[object](256)
        self._to_decode, self._token = raw_send, trio.lowlevel.current_trio_token()
        async with open_nursery() as nursery:
            nursery.start_soon(self._read, raw_send)
            if self.decoding:
                await self._decode(raw_recv)
                nursery.cancel_scope.cancel()  # after an error the reader may be waiting for room

    # -- the input: frames, on trio --

    async def _read(self, out: trio.MemorySendChannel[object]) -> None:
        async with out:
            try:
                async for frame in self._frames:
                    await self._fanout.publish_frame(frame)
                    if not self.decoding:
                        continue
                    self._meter.add(frame)
                    await out.send(frame)
                    self._queued += _size(frame)
                    while self._queued > self._queue_cap:
                        self._room = trio.Event()
                        await self._room.wait()
            except LivetraceError as e:
                if not self.decoding:
                    self._fanout.finish(e)
                    return
                await out.send(e)
            if not self.decoding:
                self._fanout.finish()

    async def _decode(self, frames: trio.MemoryReceiveChannel[object]) -> None:
        if self.jobs == 1:
            await self._decode_with_line(frames)
            return
        keep_freed_memory()
        pool = ThreadPoolExecutor(self.jobs, thread_name_prefix="livetrace-pool")
        try:
            token = trio.lowlevel.current_trio_token()
            steps = stages(self._fanout, self._counters, token, pool, self.jobs)
            line = self._line = Line(steps, pool, self.jobs + 1, self.max_pipeline_bytes, unit_bytes)
            # The generations are ordered in the same pool, and the line's are counted against
            # the generations the pool may order ahead (parallel.py's bound).
            held = self._holding
            cap = self.max_pipeline_bytes
            shared = SharedPool(pool, self._ordered, held, lambda fits: line.wait_until(lambda: fits(held())), cap)
            self._live = LiveDecoder(None, self._fanout.provisional, self.jobs, shared)
            await self._decode_with_line(frames)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)  # after an error, a task still running ends alone

    async def _decode_with_line(self, frames: trio.MemoryReceiveChannel[object]) -> None:
        error: BaseException | None = None
        try:
            async with open_nursery() as nursery:
                if self._line is not None:
                    nursery.start_soon(trio.to_thread.run_sync, self._line.run)
                try:
                    error = await self._decode_all(frames)
                except LivetraceError as e:
                    error = e  # what was decoded before it is delivered first
                finally:
                    if self._line is not None:
                        self._line.close()
        except LivetraceError as e:
            error = e
        self._fanout.finish(error)

    async def _decode_all(self, frames: trio.MemoryReceiveChannel[object]) -> BaseException | None:
        """Decode until the frames end (None) or an error ends them (it)."""
        async for first in frames:
            items = await _gathered(first, frames)
            error = next((i for i in items if isinstance(i, BaseException)), None)
            if error is not None:
                items = items[: items.index(error)]
            await trio.to_thread.run_sync(self._work, items)
            self._queued -= sum(map(_size, items))
            self._room.set()
            if error is not None:
                return error
        await trio.to_thread.run_sync(self._work, None)
        return None

    def _ordered(self) -> None:
        """In a pool thread: a generation is ordered. Wake the decoder, which
        may be waiting for frames, with a frame of its own (none is needed
        if the queue is full: frames are waiting, and decoding them takes
        what is ready too)."""
        try:
            assert self._token is not None
            self._token.run_sync_soon(self._wake_decoder)
        except trio.RunFinishedError:
            pass  # the session is over

    def _wake_decoder(self) -> None:
        try:
            assert self._to_decode is not None
            self._to_decode.send_nowait(_ORDERED)
        except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
            pass  # frames are queued already, or there are no more (the end takes what is left)

    def _holding(self) -> Holding:
        """What is past the ordering: on the line (a generation in each unit
        where spans are built) or being cut into units."""
        assert self._line is not None
        whole, units, size = self._line.holding(_whole)
        cut_whole, cut_size = self._cutter.holding()
        return Holding(whole + cut_whole, size + cut_size, units == 0)

    @property
    def peak_in_flight(self) -> int:
        """The most generations that were in flight at once, ordered in the
        pool or held past it (0 with one job); never above jobs + 1, plus the
        one the decoder assembles."""
        return self._live.peak_in_flight[0]

    @property
    def peak_bytes_in_flight(self) -> int:
        """The most bytes (as ordered columns) that were in flight at once
        while more than one generation was; never above
        ``max_pipeline_bytes``."""
        return self._live.peak_in_flight[1]

    @property
    def peak_units(self) -> int:
        """The most units that were on the line at once (0 with one job)."""
        return 0 if self._line is None else self._line.peak

    @property
    def peak_shared_bytes(self) -> int:
        """The most bytes that more than one unit on the line held at once
        (0 with one job); never above ``max_pipeline_bytes``."""
        return 0 if self._line is None else self._line.peak_shared

    # -- the worker thread: frames to items, out to the fan-out --

    def _work(self, frames: list[object] | None) -> None:
        """In the worker thread: decode the frames (None: the trace is over,
        decode what is left), select, and hand over one item at a time (at
        the end, then the spans still open)."""
        live, fan, counters = self._live, self._fanout, self._counters
        # _decode cut the errors off: frames only, and the pool's wake-ups, which only ask for what is ready.
        got = None if frames is None else [f for f in frames if f is not _ORDERED]
        items = live.finish() if got is None else live.process(got)  # type: ignore[arg-type]
        if self._line is not None:
            self._cut(items, frames is None)
            counters.largest_generation = live.largest_generation
            return
        for item in items:
            if isinstance(item, EventBatch):
                counters.events += len(item)
            prepared = fan.prepare(item)
            if prepared:
                trio.from_thread.run(fan.deliver, prepared)
        if frames is None:
            prepared = fan.prepare_end()
            if prepared:
                trio.from_thread.run(fan.deliver, prepared)
        counters.largest_generation = live.largest_generation
        counters.spans = fan.spans_built

    def _cut(self, items: Iterator[Item], end: bool) -> None:
        """Put the items on the line a unit at a time (what came before a
        decoding error too); stop if the line has stopped."""
        line, cutter, counters = self._line, self._cutter, self._counters
        assert line is not None
        try:
            for item in items:
                if isinstance(item, EventBatch):
                    counters.events += len(item)
                unit = cutter.add(item)
                if unit is not None and not line.put(unit):
                    return
        finally:
            unit = cutter.flush(end)
            if unit is not None:
                line.put(unit)


def _whole(u: Unit) -> bool:
    return u.spans is not None  # a generation: its spans are built on their own


class _GenerationMeter:
    """Bytes of the generation being received (of the segment, for a legacy
    trace, which is decoded whole), against the cap on what is held for
    one: a helper whose generation never ends must not take all memory."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._gen = 0
        self._size = 0

    def add(self, frame: Frame) -> None:
        if not isinstance(frame, Chunk):
            self._gen, self._size = 0, 0  # a gap or a segment's end: the next starts afresh
            return
        if frame.generation != self._gen and frame.generation != 0:
            self._gen, self._size = frame.generation, 0
        self._size += len(frame.data)
        if self._size > self.cap:
            what = f"generation {self._gen}" if self._gen else "the trace segment (a legacy trace is decoded whole)"
            raise LimitExceededError(
                f"{what} passed {self.cap / (1 << 20):g} MiB, the most this client holds for one generation "
                "(--max-generation-mb, or connect(max_generation_bytes=...)); raise it if the service's "
                "generations really are this large",
                limit=self.cap,
            )


async def _gathered(first: object, frames: trio.MemoryReceiveChannel[object]) -> list[object]:
    """first and the frames that follow it within GATHER_SECONDS (fewer
    once GATHER_BYTES came, or an error): a quiet service's helper sends a
    frame every few milliseconds, and each hand-over to the decoder's
    thread costs a thread's wake-up and trio's bookkeeping both ways, where
    a generation's frames are only decoded once it is whole anyway."""
    items, size = [first], _size(first)
    with trio.move_on_after(GATHER_SECONDS):
        while size < GATHER_BYTES and not isinstance(items[-1], BaseException):
            try:
                items.append(await frames.receive())
            except trio.EndOfChannel:
                break
            size += _size(items[-1])
    while True:
        try:
            items.append(frames.receive_nowait())
        except (trio.WouldBlock, trio.EndOfChannel):
            break
    return items


def _size(frame: object) -> int:
    return len(frame.data) if isinstance(frame, Chunk) else 0
