"""A trace session over a frame source: what every session offers, whoever
serves it.

:class:`Session` takes its frames from a :class:`FrameSource`: a helper's
connection (``helper.HelperFrames``) or net/http/pprof windows
(``pprof_windows.PprofWindows``); :func:`~livetrace.connect`
(``connect.py``) picks one. It counts what arrives, and its subscribers get
the trace through one pipeline (``live.Pump``) that decodes it once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Protocol

import trio

from livetrace._items import Gap, Notice, Provisional, SegmentEnd, WindowGap
from livetrace._protocol import frames as proto
from livetrace._protocol.address import Address
from livetrace._protocol.frames import Frame
from livetrace._session.limits import Counters, Limits
from livetrace._session.live import Pump
from livetrace._session.pool import default_jobs, default_pipeline_bytes
from livetrace._session.pprof_http import PprofAddress
from livetrace._session.subscribers import DEFAULT_BUFFER, Fanout, Map, Subscription, What
from livetrace._trace.decoder import Item
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import Event, Kind
from livetrace._trace.select.filter import Filter
from livetrace._trace.spans.model import Follow

__all__ = ["Counters", "Frame", "FrameSource", "Limits", "Session"]


class FrameSource(Protocol):
    """Where a session's frames come from: a helper's connection
    (``helper.HelperFrames``) or net/http/pprof (``PprofWindows``)."""

    async def next_frame(self) -> Frame | proto.End | None:
        """The next frame; the :class:`End` once the trace is over, then None.
        Raises a :class:`LivetraceError` if the trace cannot go on."""
        ...

    async def stop(self) -> None: ...


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
        jobs: int | None = None,
        max_pipeline_bytes: int | None = None,
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
        # The pipeline's pool of threads (see live.Pump): set it before the first subscription.
        self.jobs = default_jobs() if jobs is None else jobs
        # None: the default for the pool's size when it starts (pool.default_pipeline_bytes).
        self.max_pipeline_bytes = max_pipeline_bytes

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
        map: Map | None = None,
        marks: bool = False,
        follow: Follow | None = None,
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
        provisional batches too. ``map`` runs work on each batch in the
        pipeline, in parallel across generations, and the subscriber gets
        its results (see :class:`Subscription`); ``marks`` gives a span
        subscriber a :class:`SpanMark` after each generation's spans;
        ``follow`` says what a span subscriber's spans need built, where its
        filter's kinds say more than it reads.
        Subscribe to decoded items before the session's first frame is read
        (in the same step as the first subscription): the trace is decoded
        only if some subscriber wanted it then."""
        if self._pump is not None and what != "frames" and not self._pump.decoding and self._pump.started:
            raise ValueError("this session's trace is not being decoded: subscribe to events before it starts")
        sub = self._fanout.subscribe(
            filter, what=what, buffer=buffer, lossless=lossless, provisional=provisional, map=map, marks=marks,
            follow=follow,
        )  # fmt: skip
        if self._pump is None:
            self._pump = Pump(
                self.chunks(),
                self._fanout,
                self.counters,
                self.limits.max_generation_bytes,
                self.jobs,
                default_pipeline_bytes(self.jobs) if self.max_pipeline_bytes is None else self.max_pipeline_bytes,
            )
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
            c.last_generation = max(c.last_generation, ev.generation)
            return ev
        if isinstance(ev, SegmentEnd):
            c.segments += 1
            return ev
        if isinstance(ev, WindowGap):  # nothing shed: the time between two windows
            c.gaps += 1
            return ev
        if isinstance(ev, Gap):
            c.gaps += 1
            c.dropped_chunks += ev.chunks
            c.dropped_bytes += ev.bytes
            c.dropped_generations += ev.last_generation - ev.first_generation + 1
            return ev
        self.end = ev
        c.dropped_chunks, c.dropped_bytes = ev.dropped_chunks, ev.dropped_bytes
        c.dropped_generations = ev.dropped_generations
        return None


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
