"""The flight recorder on a live session (trio): frames into the ring,
spans and events into the triggers, captures written off the event path."""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import psutil
import trio

from livetrace._errors import LivetraceError
from livetrace._flight.capture import Capture, Firing, now_ns
from livetrace._flight.capture_writer import FINISH_WITHIN, CaptureFailure, CaptureWriter, check_out_dir
from livetrace._flight.capture_writer import FlightState as FlightState
from livetrace._flight.ring import DEFAULT_MAX_BYTES, FlightRing, Layout
from livetrace._flight.triggers import Trigger, parse_trigger
from livetrace._items import SymbolsResolved, WindowGap
from livetrace._nursery import open_nursery
from livetrace._protocol.frames import SessionInfo, SessionMode
from livetrace._session.session import Session
from livetrace._session.subscribers import Subscription
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import Event
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import Span

DEFAULT_AFTER = 5.0
DEFAULT_COOLDOWN = 10.0
RSS_POLL = 1.0
TRIM_EVERY = 0.5
FRAME_BUFFER = 64
TRIGGER_BUFFER = 64
# After the tail, how long a capture waits at most for the generation (segment)
# then in progress to complete, beyond the period the helper closes them at.
UNIT_SLACK = 5.0


def local_process(info: SessionInfo) -> psutil.Process | None:
    """The traced process if it runs on this machine (the pid the helper
    gave is a process with its executable, started before the session), else None."""
    if info.pid <= 0:
        return None  # a net/http/pprof session knows no pid
    try:
        p = psutil.Process(info.pid)
        if p.create_time() > info.start_unix_ns / 1e9 + 1:
            return None
        if info.executable and os.path.realpath(p.exe()) != os.path.realpath(info.executable):
            return None
        return p
    except (psutil.Error, OSError):
        return None


def layout_of(info: SessionInfo) -> Layout:
    mode = info.mode
    if mode is SessionMode.PPROF_WINDOWS:
        return Layout.WINDOWS  # each net/http/pprof window is a complete trace, in any format
    if mode is SessionMode.LEGACY_SEGMENTS:
        return Layout.SEGMENTS
    if mode is SessionMode.LEGACY_PROVISIONAL:
        raise LivetraceError(
            f"{info.go_version} writes a trace only readable whole: the flight recorder needs segment mode "
            "(connect(segment=...)), which this helper did not start"
        )
    return Layout.GENERATIONS


class SpanHit(NamedTuple):
    """What a span trigger's batch fired it with: the span, and the
    generations of its start and end (None: a legacy trace's)."""

    span: Span
    first: int | None
    last: int | None


class EventHit(NamedTuple):
    event: Event
    gen: int | None


def span_hits(trig: Trigger) -> Callable[[SpanBatch], Callable[[], SpanHit | None]]:
    """A span trigger's map (see ``Session.subscribe``): which span of each
    batch fires it, found in the session's pool from the columns."""

    def hit(batch: SpanBatch) -> SpanHit | None:
        i = trig.fired(batch)
        if i is None:
            return None
        first, last = batch.tables.get(batch.start_tables[i]), batch.tables.get(batch.end_tables[i])
        return SpanHit(batch[i], None if first is None else first.gen, None if last is None else last.gen)

    return lambda batch: lambda: hit(batch)


def event_hits(trig: Trigger) -> Callable[[EventBatch], Callable[[], EventHit | None]]:
    """An event trigger's map: the first event kept fires it (for a log
    trigger, the first whose message the pattern finds), found in the
    session's pool."""

    def hit(batch: EventBatch) -> EventHit | None:
        i = trig.fired_event(batch)
        if i is None:
            return None
        ev = batch[i]
        return EventHit(ev, None if ev.gen is None else ev.gen.gen)

    return lambda batch: lambda: hit(batch)


class FlightRecorder:
    """Keeps the last ``keep`` seconds of a session's raw trace in memory
    (at most ``max_memory`` bytes) and, each time one of ``triggers``
    fires, waits ``after`` seconds and writes a capture to ``out_dir``: a
    complete trace of the kept window and the tail, and a JSON file beside
    it (docs/flight.md). Triggers are :class:`Trigger` objects or their
    short text (``"gc>50ms"``); a trigger that fires while a capture is
    pending joins it; after a capture is written, triggers are ignored until
    ``cooldown`` seconds after it started; with ``max_files``, only the
    newest that many captures stay in ``out_dir``.

    :meth:`run` until the session ends; react to captures with ``on_capture``
    (called in the event loop) or ``async for capture in recorder.captures()``,
    and to captures that could not be written with ``on_error`` (a
    :class:`CaptureFailure`; recording goes on). Subscribe before the
    session's first frame (create the recorder and call run right after
    connecting). A new recorder (no ``state``) raises
    :class:`OutputPathError` if ``out_dir`` is not a writable directory;
    one that continues (``state`` from the last) reports each capture that
    fails instead.
    """

    def __init__(
        self,
        session: Session,
        *,
        keep: float,
        triggers: Sequence[Trigger | str],
        out_dir: str | os.PathLike[str] = ".",
        after: float = DEFAULT_AFTER,
        cooldown: float = DEFAULT_COOLDOWN,
        max_files: int | None = None,
        max_memory: int = DEFAULT_MAX_BYTES,
        on_capture: Callable[[Capture], object] | None = None,
        on_fire: Callable[[Firing, bool], object] | None = None,
        on_error: Callable[[CaptureFailure], object] | None = None,
        state: FlightState | None = None,
        finish_within: float = FINISH_WITHIN,
        on_dump: Callable[[Capture], object] | None = None,
    ) -> None:
        if on_dump is not None:  # its name until a capture was called a dump
            warnings.warn("FlightRecorder(on_dump=...) is deprecated: use on_capture", DeprecationWarning, stacklevel=2)
            on_capture = on_capture or on_dump
        if after < 0 or cooldown < 0:
            raise ValueError("after and cooldown are seconds, 0 or more")
        if max_files is not None and max_files < 1:
            raise ValueError("max_files must be at least 1")
        self.session = session
        self.triggers = [parse_trigger(t) if isinstance(t, str) else t for t in triggers]
        if not self.triggers:
            raise ValueError("a flight recorder needs at least one trigger")
        self.out_dir = Path(out_dir)
        if state is None:
            check_out_dir(self.out_dir)
        self.after = after
        self.cooldown = cooldown
        self.max_files = max_files
        self.ring = FlightRing(layout_of(session.info), keep_ns=int(keep * 1e9), max_bytes=max_memory)
        self.state = state or FlightState()
        self._on_capture = on_capture
        self._on_fire = on_fire
        self._send, self._recv = trio.open_memory_channel[Capture](math.inf)
        self._unit_done = trio.Event()
        self._ended = trio.Event()
        self.capture_writer = CaptureWriter(
            self.ring,
            self.out_dir,
            after=after,
            cooldown=cooldown,
            max_files=max_files,
            state=self.state,
            wait_tail=self._wait_tail,
            on_capture=self._captured,
            on_error=on_error,
            finish_within=finish_within,
        )
        self.process = local_process(session.info)
        self._subs: list[tuple[Trigger, Subscription]] = []
        self._frames = self._subscribe()

    def _subscribe(self) -> Subscription:
        s = self.session
        # The ring must see every byte: a lossless subscriber, which holds the
        # reader up rather than lose a frame. Triggers are lossy: one that
        # falls behind misses spans, it never slows the recording.
        frames = s.subscribe(what="frames", lossless=True, buffer=FRAME_BUFFER)
        for t in self.triggers:
            if t.source == "rss" and self.process is None:
                t = t.heap_trigger()  # the remote form of the same trigger
            # What fired a trigger is found in the session's pipeline (its pool, with jobs): the
            # subscriber gets a hit (or None) per batch its filter kept.
            if t.source == "spans":
                sub = s.subscribe(t.filter, what="spans", buffer=TRIGGER_BUFFER, map=span_hits(t))
                self._subs.append((t, sub))
            elif t.source == "events":
                sub = s.subscribe(t.filter, what="batches", buffer=TRIGGER_BUFFER, map=event_hits(t))
                self._subs.append((t, sub))
        return frames

    @property
    def pending(self) -> int:
        """Captures waiting for their tail or being written (0 or 1)."""
        return self.capture_writer.pending

    def abandon(self) -> None:
        """Give up the pending capture now, rather than within ``finish_within`` of the session's end."""
        self.capture_writer.abandon()

    def captures(self) -> AsyncIterator[Capture]:
        """The captures as they are written; ends when :meth:`run` returns."""
        return self._recv

    def dumps(self) -> AsyncIterator[Capture]:
        """Deprecated: :meth:`captures`, its name until a capture was called a dump."""
        warnings.warn("FlightRecorder.dumps() is deprecated: use captures()", DeprecationWarning, stacklevel=2)
        return self.captures()

    async def run(self) -> None:
        """Record until the session ends; the pending capture is then written
        with the tail it has (or abandoned after ``finish_within`` seconds).
        Raises the session's error (a lost connection, say) after that."""
        error: LivetraceError | None = None
        try:
            async with open_nursery() as watchers:
                for trig, sub in self._subs:
                    watchers.start_soon(self._watch, trig, sub)
                if self.process is not None and any(t.source == "rss" for t in self.triggers):
                    watchers.start_soon(self._poll_rss, self.process)
                watchers.start_soon(self._trim)
                async with open_nursery() as capturing:
                    capturing.start_soon(self.capture_writer.run)
                    try:
                        await self._record()
                    except LivetraceError as e:
                        error = e
                    finally:
                        self._ended.set()
                        self._unit_done.set()
                        self.capture_writer.close()
                watchers.cancel_scope.cancel()
        finally:
            self._send.close()
        if error is not None:
            raise error

    async def _record(self) -> None:
        ring = self.ring
        async for frame in self._frames:
            done = ring.completed
            ring.feed(frame)  # type: ignore[arg-type]  # a frames subscription yields frames
            if ring.completed != done:
                ring.trim(now_ns())
                self._unit_done.set()
                self._unit_done = trio.Event()
        end = self.session.end
        if end is not None and end.complete:
            ring.finish()

    async def _trim(self) -> None:
        while True:
            self.ring.trim(now_ns())
            await trio.sleep(TRIM_EVERY)

    async def _watch(self, trig: Trigger, sub: Subscription) -> None:
        # Which unit of the ring an item belongs to: a modern batch's tables
        # name its generation; a legacy segment's exact events all have
        # tables of their own trace's (generation 1), but follow the notice
        # that its footer arrived, which numbers the segment (from 0). A
        # pprof window's items, of either format, come before the gap that
        # follows it (notices always reach a subscriber): windows are
        # counted from 1, as the ring numbers its units.
        layout = self.ring.layout
        segments = layout.whole_units
        segment: int | None = 1 if layout is Layout.WINDOWS else None
        try:
            async for item in sub:
                if isinstance(item, WindowGap) and layout is Layout.WINDOWS:
                    segment = item.window + 1
                elif isinstance(item, SymbolsResolved) and layout is Layout.SEGMENTS:
                    segment = item.segment + 1
                elif isinstance(item, SpanHit):
                    unit = segment if segments else item.last
                    pin = segment if segments else (item.first if item.first is not None else unit)
                    self.fire(Firing(trig, now_ns(), span=item.span, unit=unit), pin=pin)
                elif isinstance(item, EventHit):
                    unit = segment if segments else item.gen
                    self.fire(Firing(trig, now_ns(), event=item.event, unit=unit))
        except LivetraceError:
            return  # the session's end: the frames' side reports it

    async def _poll_rss(self, proc: psutil.Process) -> None:
        rss_triggers = [t for t in self.triggers if t.source == "rss"]
        while True:
            try:
                rss = proc.memory_info().rss
            except psutil.Error:
                return  # the process is gone: the session ends too
            for t in rss_triggers:
                if rss > t.threshold:
                    self.fire(Firing(t, now_ns(), value=rss))
            await trio.sleep(RSS_POLL)

    def fire(self, firing: Firing, pin: int | None = None) -> bool:
        """A trigger fired: start a capture, unless one is pending (the firing
        joins it), or within the cooldown, or the session is over. Returns
        whether a capture was started. The capture keeps the generations
        (segments) from ``pin`` on (default: the firing's ``unit``) past
        ``keep`` until its snapshot is taken."""
        units = self.ring.units
        if firing.unit is None and units:
            firing = dataclasses.replace(firing, unit=units[-1].key)
        if pin is None:
            pin = firing.unit if firing.unit is not None else (units[-1].key if units else 0)
        started = self.capture_writer.fire(firing, pin)
        if self._on_fire is not None:
            self._on_fire(firing, started)
        return started

    async def _wait_tail(self) -> bool:
        """Wait for a capture's tail; whether it was cut short (the session ended)."""
        ring = self.ring
        with trio.move_on_after(self.after):
            await self._ended.wait()
            return True
        # The tail ends inside a generation (segment) still arriving: wait for it to be whole.
        target = ring.completed + 1
        info = self.session.info
        period = max(info.advance_ms, info.segment_ms, info.window_ms, 1000) / 1000
        with trio.move_on_after(period + UNIT_SLACK):
            while ring.completed < target and not self._ended.is_set():
                await self._unit_done.wait()
        return False

    def _captured(self, capture: Capture) -> None:
        self._send.send_nowait(capture)
        if self._on_capture is not None:
            self._on_capture(capture)
