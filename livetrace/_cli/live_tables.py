"""A live session as tables, a unit at a time: what ``livetrace sql`` reads
from an address, and what ``export --to parquet`` writes a file of per
generation (a legacy trace's segment, a pprof window).

The units are the ones ``livetrace.iter_tables`` makes of the file that
``livetrace record`` would have written of the same session: a unit per
generation, a capture per trace of the stream (the session; each legacy
segment or pprof window, as each is a file of its own when recorded). A
unit is built when the next one begins (or the session ends), in a worker
thread, so that the session's reader is never held up by pyarrow."""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import trio

from livetrace._items import Gap, SegmentGap, WindowGap
from livetrace._protocol.frames import SessionInfo, SessionMode
from livetrace._tables.build import Unit, UnitBuilder
from livetrace._tables.captures import Capture
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.builder import SpanBuilder
from livetrace._trace.spans.model import SpanKind

if TYPE_CHECKING:
    from livetrace._session.session import Session

# What the captures table calls a live source.
SOURCE_OF_MODE = {SessionMode.PPROF_WINDOWS: "pprof window"}
HELPER_SOURCE = "helper"


def live_capture_id(address: str, info: SessionInfo, index: int) -> int:
    """A capture's id: the session (where, which process, when it began) and
    which trace of it."""
    key = f"{address}\0{info.pid}\0{info.start_unix_ns}\0{info.session}\0{index}"
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little", signed=True) or 1


def service_name(info: SessionInfo) -> str:
    """The service, as the captures table names it: its executable's name."""
    return os.path.basename(info.executable) or info.executable


def host_of(address: str) -> str:
    """The traced service's host: the one an address names (tcp:, tls:,
    http://, HOST:PORT), else this one (a unix socket, a pid, a name)."""
    if "://" in address:
        return urlsplit(address).hostname or socket.gethostname()
    rest = address.split(":", 1)[1] if address.startswith(("tcp:", "tls:")) else address
    if address.startswith(("unix:", "pid:", "/")) or ":" not in rest:
        return socket.gethostname()
    return rest.rsplit(":", 1)[0].strip("[]")


@dataclass
class Pending:
    """One unit's inputs, taken off the session; :meth:`LiveUnits.build` makes it."""

    capture: Capture
    batches: list[EventBatch] = field(default_factory=list)
    spans: list[SpanBatch] = field(default_factory=list)
    counts: tuple[int, dict[SpanKind, int]] | None = None
    last: bool = False


class LiveUnits:
    """A session's decoded items in, units out (sans-IO but for the clock of
    none: the items carry everything). :meth:`feed` each item; it returns
    the units it completed, as :class:`Pending` inputs that :meth:`build`
    turns into tables (in a worker thread, one at a time)."""

    def __init__(self, address: str, info: SessionInfo, builder: UnitBuilder | None = None) -> None:
        self.address = address
        self.info = info
        self.builder = builder or UnitBuilder()
        self._index = 0
        self._host = host_of(address)
        self._spans = SpanBuilder()
        self._gen: object = None
        self._pending = Pending(self._capture())

    def _capture(self) -> Capture:
        info = self.info
        version = info.trace_version
        return Capture(
            live_capture_id(self.address, info, self._index),
            SOURCE_OF_MODE.get(info.mode, HELPER_SOURCE),
            self.address,
            str(version) if version is not None else info.go_version,
            trace_index=self._index,
            service=service_name(info),
            host=self._host,
            pid=info.pid or None,
            go_version=info.go_version,
        )

    def _take(self, last: bool) -> Pending:
        done = self._pending
        times = [b.times[-1] for b in done.batches if len(b)]
        # As iter_tables does: the goroutine counts where the unit ends (before
        # close() empties the builder), then a capture's open spans cut there.
        done.counts = (times[-1], self._spans.open_counts()) if times else None
        if last:
            done.spans.append(self._spans.close())
        done.last = last
        self._pending = Pending(done.capture)
        return done

    def feed(self, item: object) -> list[Pending]:
        out: list[Pending] = []
        if isinstance(item, EventBatch):
            if item.gen is not self._gen and self._gen is not None and self._pending.batches:
                out.append(self._take(last=False))
            self._gen = item.gen if item.gen is not None else self._gen
            self._pending.batches.append(item)
            self._pending.spans.append(self._spans.feed(item))
        elif isinstance(item, SegmentGap | WindowGap):  # the next trace of the session: a capture of its own
            out.append(self._take(last=True))
            self._next_capture()
        elif isinstance(item, Gap):  # generations shed: no span runs across them
            self._spans.gap()
        return out

    def _next_capture(self) -> None:
        self._index += 1
        self._spans = SpanBuilder()
        self._gen = None
        self._pending = Pending(self._capture())

    def close(self) -> list[Pending]:
        """The session ended: its last unit, with its capture's row."""
        return [self._take(last=True)]

    def build(self, p: Pending) -> Unit:
        unit = self.builder.build(p.capture.capture, p.batches, p.spans, p.counts)
        p.capture.saw(unit["events"])
        if p.last:
            unit["captures"] = p.capture.row()
        return unit


async def feed_session(session: Session, units: LiveUnits, sink: Callable[[Unit], None], *, buffer: int = 64) -> None:
    """Every unit of the session, built and handed to ``sink``, each in a
    worker thread, in order, until the session ends."""

    def build_and_sink(pending: list[Pending]) -> None:
        for p in pending:
            sink(units.build(p))

    async with session.subscribe(what="batches", lossless=True, buffer=buffer) as sub:
        async for item in sub:
            done = units.feed(item)
            if done:
                await trio.to_thread.run_sync(build_and_sink, done)
    await trio.to_thread.run_sync(build_and_sink, units.close())
