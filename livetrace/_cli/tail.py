"""``livetrace tail``: a session's events as text or JSON lines, live."""

from __future__ import annotations

import queue
import threading
import time
from array import array
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import suppress
from functools import partial
from typing import Any, NamedTuple, TextIO

import trio

from livetrace._cli.common import (
    EXIT_INCOMPLETE,
    EXIT_OK,
    about,
    say,
    silence_stdout,
    until_done,
    window_seconds,
)
from livetrace._cli.output import widen_pipe, write_bytes
from livetrace._cli.render.jsonl import JsonlEncoder, PartsAcross, utf8
from livetrace._cli.render.parts import Kept
from livetrace._cli.render.provisional import ProvisionalJsonl
from livetrace._cli.render.spans import MAX_PIECES, SpanLines, first_spans
from livetrace._cli.render.text import TextAcross, TextEncoder
from livetrace._items import Notice, Provisional, SymbolsResolved, WindowGap
from livetrace._plural import plural
from livetrace._protocol import text as peer
from livetrace._protocol.frames import SessionInfo, SessionMode
from livetrace._session.connect import connect
from livetrace._session.session import Session
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import KIND_NAMES, Event, Kind
from livetrace._trace.select.filter import Filter
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import Follow, follow_for


async def tail_command(
    address: str,
    *,
    duration: float | None,
    fmt: str,
    token: str | None,
    out: TextIO,
    err: TextIO,
    limit: int | None = None,
    kinds: frozenset[str] = frozenset(),
    period: float = 0.5,
    segment: float = 1.0,
    flt: Filter | None = None,
    spans: bool = False,
    color: bool = False,
    window: float | None = None,
    **limits: Any,
) -> int:
    """Print a live service's events (or spans) as they are decoded: those
    of the given kinds, or those ``flt`` keeps; colour the text if asked."""
    if flt is None and kinds:
        flt = Filter(kinds=frozenset(Kind(KIND_NAMES.index(k)) for k in kinds))
    widen_pipe(out)
    # A window on a helper's address: connect says it applies to http:// ones only.
    async with connect(
        address,
        token=token,
        duration=duration,
        advance=period or None,
        segment=segment or None,
        window=window,
        **limits,
    ) as session:
        info = session.info
        view = View(fmt, flt, spans, color)
        what = "spans" if view.spans else "events"
        mode = info.mode
        if mode is SessionMode.PPROF_WINDOWS:
            how = pprof_how(info, what)
        elif mode is SessionMode.LEGACY_SEGMENTS:
            how = (
                f"a legacy trace, restarted every {info.segment_ms / 1000:g} s: each segment's {what} are "
                f"printed, exact and with stacks, once it completes"
            )
        elif mode is SessionMode.LEGACY_PROVISIONAL and view.spans:
            how = "a legacy trace without segments: spans are made from the exact events, which come when it stops"
        elif mode is SessionMode.LEGACY_PROVISIONAL:
            view.provisional = True
            how = (
                "a legacy trace without segments: events are printed provisionally (marked ~, times "
                "estimated, stacks as ids) as the runtime's buffers fill, and stacks resolve when it stops"
            )
        else:
            every = f"{info.advance_ms / 1000:g} s" if info.advance_ms else "about a second"
            if info.advance_bytes:
                every += f", or {info.advance_bytes / (1 << 20):g} MiB"
            how = f"{what} arrive a generation ({every}) at a time"
        say(err, f"tailing {about(info)}); {how}" + ("" if duration else "; Ctrl-C stops"))
        # Lines are written in the session's pipeline (in parallel with --jobs), except where
        # something that crosses batches decides what is shown: --limit, the provisional path.
        view.render = limit is None and not view.provisional
        done = await until_done(session, err, partial(print_events, session, view, out, limit))
        shown, pipe_closed, behind = done or Printed(0, False, array("q"))
        say(err, view.summary(session.counters.events, shown, session.counters.spans))
        if lag := behind_text(behind):
            say(err, lag)
        if done is None:  # aborted: lines decoded were never printed
            return EXIT_INCOMPLETE
        if pipe_closed:
            silence_stdout()
            return EXIT_OK
        end = session.end
        if end is None:
            return EXIT_INCOMPLETE
        say(
            err,
            f"{plural(shown, 'span' if view.spans else 'event')}; session ended: {peer.shown(end.reason)}"
            + (
                f"; {plural(end.dropped_generations, 'generation')} shed because the consumer fell behind"
                if end.dropped_generations
                else ""
            )
            + (
                f"; {plural(session.counters.segments + 1, 'pprof window')}"
                if mode is SessionMode.PPROF_WINDOWS
                else f"; {plural(session.counters.segments + 1, 'segment')}, "
                f"largest {session.counters.largest_generation:,} bytes"
                if mode is SessionMode.LEGACY_SEGMENTS
                else ""
                if mode is SessionMode.LEGACY_PROVISIONAL
                else f"; largest generation {session.counters.largest_generation / 1e6:.1f} MB"
            ),
        )
        return EXIT_OK


def pprof_how(info: SessionInfo, what: str) -> str:
    """How a pprof session's events come, for tail's first line."""
    w = f"{window_seconds(info):g} s"
    if info.legacy:
        how = (
            f"a legacy trace in {w} /debug/pprof/trace windows: each window's {what} are printed, exact and "
            "with stacks, when it ends"
        )
    else:
        how = f"{what} arrive a generation at a time as each {w} /debug/pprof/trace window streams in"
    return how + "; nothing is traced between two windows"


class View:
    """What `tail` shows and how: the format, the filter, events or spans,
    colour; and the gaps it met, for the summary."""

    def __init__(self, fmt: str, flt: Filter | None, spans: bool, color: bool) -> None:
        self.fmt = fmt
        self.filter = flt
        self.spans = spans or (flt is not None and flt.min_duration is not None)
        self.color = color and fmt == "text"
        self.gaps = 0
        # Events printed provisionally (legacy Go without segments): those the provisional path
        # cannot place (before its clock is known) are never printed, nor exact ones at the stop.
        self.provisional = False
        self.render = False  # lines are made in the pipeline (Render)

    def subscribe(self, session: Session) -> AsyncIterator[object]:
        return session.subscribe(
            self.filter,
            what="spans" if self.spans else "batches",
            buffer=2,
            lossless=True,
            provisional=not session.info.restarts,
            map=Render(self) if self.render else None,
            follow=self.follows(),
        )

    def follows(self) -> Follow | None:
        """What the span builder must follow for this view (None: what its
        filter's kinds need): a text line shows no logs, so a text view
        needs them only to filter by them."""
        flt = self.filter or Filter()
        if not self.spans or self.fmt != "text" or flt.logs is not None or flt.predicate is not None:
            return None
        return follow_for(flt.kinds) & ~Follow.LOGS

    def summary(self, seen: int, shown: int, built: int = 0) -> str:
        if self.spans:
            return (
                f"summary: {plural(seen, 'event')} seen, {plural(built, 'span')} built, {plural(shown, 'span')} "
                f"shown, {plural(max(0, built - shown), 'span')} dropped (filtered out, or past --limit), "
                f"{plural(self.gaps, 'gap')}"
            )
        why = (
            "filtered out, past --limit, or never placed provisionally"
            if self.provisional
            else "filtered out, or past --limit"
        )
        return (
            f"summary: {plural(seen, 'event')} seen, {plural(shown, 'event')} shown, "
            f"{plural(max(0, seen - shown), 'event')} dropped ({why}), {plural(self.gaps, 'gap')}"
        )


class Formatter:
    """The bytes `tail` writes for a batch (of events, spans or a notice):
    its lines in the view's format, in pieces to write in order."""

    def __init__(
        self,
        view: View,
        across: PartsAcross | None = None,
        text_across: TextAcross | None = None,
        span_pieces: Kept[bytes] | None = None,
    ) -> None:
        self.view = view
        self.jsonl = JsonlEncoder(across)
        self.provisional_jsonl = ProvisionalJsonl()
        self.text = TextEncoder(view.color, across=text_across)
        self.spans = SpanLines(view.fmt, view.color, kept=span_pieces)

    def pieces(self, batch: Sequence[object], t0: int, provisional: bool) -> list[bytes]:
        """provisional: the batch is a legacy trace's events before its footer."""
        if isinstance(batch, SpanBatch):
            return self.spans.pieces(batch, t0)
        if self.view.fmt == "jsonl":
            if provisional:
                return self.provisional_jsonl.encode(batch)  # type: ignore[arg-type]  # a Provisional's batch holds Events only
            if isinstance(batch, EventBatch):
                return self.jsonl.encode_batch(batch)
            return [utf8(self.jsonl.encode_many(batch))]  # type: ignore[arg-type]  # events, or a notice
        return [self.text.encode(batch, t0, provisional)]  # type: ignore[arg-type]  # events, or a notice: one piece


class Rendered(NamedTuple):
    """A batch's lines (or several batches', joined), made in the pipeline:
    how many, the bytes, and the wall-clock time (Unix ns) of each batch's
    newest event or span end, where the trace's clock gives one."""

    lines: int
    pieces: list[bytes]
    walls: list[int]


def newest_wall(batch: object) -> list[int]:
    """When (Unix ns) the batch's last event happened, or its last span
    ended, by the clock of the generation it is in: what `tail` is behind
    the service by, once the line is written. As a list of one (none for
    an empty batch, a notice, or a trace with no clock), as a joined
    item's :attr:`Rendered.walls` holds each batch's."""
    if isinstance(batch, SpanBatch) and len(batch):
        tables = batch.tables.get(batch.end_tables[-1])
        base = None if tables is None else tables.wall_base
        return [] if base is None else [base + batch.ends[-1]]
    if isinstance(batch, EventBatch) and len(batch):
        base = None if batch.gen is None else batch.gen.wall_base
        return [] if base is None else [base + batch.times[-1]]
    return []


class Render:
    """`tail`'s map (see :meth:`Session.subscribe`): called on each batch in
    order, it keeps what crosses batches (the first time shown, for the
    text's relative times); the work it returns writes the batch's lines,
    in the pipeline's pool, with the :class:`Formatter` of the batch's
    generation (whose caches are per generation; the pool's threads share
    it: its writers keep no state per batch, and their caches only grow,
    under the GIL; the JSON and text of stacks and strings are kept across
    generations: :class:`PartsAcross`, :class:`TextAcross`, and the spans'
    pieces in a ``Kept`` of their own)."""

    def __init__(self, view: View) -> None:
        self._view = view
        self._t0: int | None = None
        self._key: object = None
        self._across, self._text_across = PartsAcross(), TextAcross()
        self._span_pieces = Kept[bytes](MAX_PIECES)
        self._formatter = self._new_formatter()

    def _new_formatter(self) -> Formatter:
        return Formatter(self._view, self._across, self._text_across, self._span_pieces)

    def __call__(self, batch: EventBatch | SpanBatch) -> Callable[[], Rendered]:
        if self._t0 is None:
            self._t0 = batch.starts[0] if isinstance(batch, SpanBatch) else batch.times[0]
        # A span batch's names and stacks are its generation's (or its builder's) tables.
        key = batch.names_table if isinstance(batch, SpanBatch) else batch.gen
        if key is not self._key or key is None:
            self._formatter, self._key = self._new_formatter(), key
        formatter, t0 = self._formatter, self._t0

        def lines() -> Rendered:
            return Rendered(len(batch), formatter.pieces(batch, t0, False), newest_wall(batch))

        return lines

    @staticmethod
    def join(done: list[Rendered]) -> Rendered:
        """Consecutive batches' lines as one item: written with one call, one hand-over each way."""
        return Rendered(
            sum(r.lines for r in done), [p for r in done for p in r.pieces], [w for r in done for w in r.walls]
        )


class Printed(NamedTuple):
    """What `tail` wrote: how many lines, whether the reader of its output
    went away, and how far behind the service each batch was once written (ns)."""

    shown: int
    closed: bool
    behind: array[int]


def behind_text(behind: array[int]) -> str | None:
    """The summary's line on how far behind the service the lines were
    written (None where the trace's clock says nothing)."""
    if not behind:
        return None
    ordered = sorted(behind)

    def at(q: float) -> str:
        return f"{max(0, ordered[min(len(ordered) - 1, int(q * len(ordered)))]) / 1e9:.2f} s"

    return (
        f"lines written behind the service by p50 {at(0.5)}, p99 {at(0.99)}, max {at(1.0)} "
        f"({plural(len(ordered), 'batch', 'batches')})"
    )


async def print_events(session: Session, view: View, out: TextIO, limit: int | None) -> Printed:
    """Write events (those the view's filter keeps, gaps always) until the
    session ends, the limit is reached (the rest of the session is read but
    not shown) or the reader of out goes away; how many were written, and
    whether the reader went away. A legacy trace without segments shows its
    provisional events, and then only the notice that its footer came."""
    writer = Writer(out)
    try:
        closed = await _print_events(session, view, writer, limit)
    except Exception:
        # The session's error: the lines decoded before it are written first, as they came.
        with suppress(Exception):
            await writer.close()
        raise
    except BaseException:  # cancelled (a second Ctrl-C): a full pipe is not waited for
        writer.abandon()
        raise
    closed = await writer.close() or closed
    return Printed(writer.written, closed, writer.behind)


async def _print_events(session: Session, view: View, writer: Writer, limit: int | None) -> bool:
    shown, t0 = 0, None
    formatter = Formatter(view)
    provisional = False
    async for item in view.subscribe(session):
        if isinstance(item, Rendered):
            if await writer.write(item.lines, item.pieces, item.walls):
                return True
            shown += item.lines
            continue
        if isinstance(item, Notice) and not isinstance(item, SymbolsResolved):
            view.gaps += 1
        if isinstance(item, WindowGap):
            provisional = False  # a new pprof window: its events may come exact only
        if isinstance(item, Provisional):
            provisional = True
            batch: Sequence[Event | Notice] = item.events
        elif isinstance(item, EventBatch):
            if provisional:
                continue  # shown already; `record` keeps the exact trace
            batch = item
        elif isinstance(item, SymbolsResolved) and not provisional:
            continue  # in segment mode, every segment has one
        elif isinstance(item, Notice):
            batch = [item]
        else:
            batch = item  # type: ignore[assignment]  # a batch of spans
        if limit is not None and len(batch) > limit - shown:
            n = max(0, limit - shown)
            batch = first_spans(batch, n) if isinstance(batch, SpanBatch) else batch[:n]
        if t0 is None and isinstance(batch, SpanBatch) and len(batch):
            t0 = batch.starts[0]
        elif t0 is None and batch and isinstance(batch[0], Event):
            t0 = batch[0].time
        pieces = formatter.pieces(batch, t0 or 0, isinstance(item, Provisional))
        counted = isinstance(batch, (EventBatch, SpanBatch))
        lines = len(batch) if counted else sum(not isinstance(e, Notice) for e in batch)
        if await writer.write(lines, pieces, newest_wall(batch)):
            return True
        shown += lines
        if limit is not None and shown >= limit:
            await session.stop()
    return False


# Batches of lines queued for the writer's thread, at most.
WRITE_AHEAD = 2


class Writer:
    """Writes the lines to out, in order, whole (see :func:`write_bytes`),
    in a thread of its own, up to WRITE_AHEAD batches behind: while a slow
    reader keeps the pipe full, the session goes on reading the helper
    (which would otherwise shed generations sooner, and see its client as
    stalled) and Ctrl-C is answered at once. One thread for the whole
    tail, not one of trio's for each batch: a hand-over there and back is
    about 0.1 ms of CPU, several per cent of a tail's on a busy service."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._queue: queue.SimpleQueue[tuple[int, list[bytes], list[int]] | None] = queue.SimpleQueue()
        self._room = threading.Semaphore(WRITE_AHEAD)
        self.written = 0  # lines written whole
        # How far behind the service each batch's lines were once written (ns): the
        # lag a user's reader sees, measured where it starts (the reader's own is added to it).
        self.behind = array("q")
        self.closed = False  # the reader of out went away (`| head`: it has seen enough)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="livetrace-tail-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            lines, pieces, walls = item
            try:
                if not self.closed and self._error is None:
                    write_bytes(self._out, pieces)
                    self.written += lines
                    now = time.time_ns()
                    self.behind.extend(now - w for w in walls)
            except BrokenPipeError:
                self.closed = True
            except BaseException as e:  # raised in the task that writes, at its next write or close
                self._error = e
            finally:
                self._room.release()

    def _check(self) -> None:
        if self._error is not None:
            raise self._error

    async def write(self, lines: int, pieces: list[bytes], walls: list[int]) -> bool:
        """Queue a batch's pieces (or several batches': lines, how many lines
        they hold; walls, when each batch's newest event happened, Unix ns, where
        known); True once the reader of out has gone away."""
        self._check()
        if self.closed:
            return True
        if not self._room.acquire(blocking=False):
            await trio.to_thread.run_sync(self._room.acquire, abandon_on_cancel=True)
        self._queue.put((lines, pieces, walls))
        return self.closed

    async def close(self) -> bool:
        """Wait until what was queued is written; True if the reader of out
        went away."""
        self._queue.put(None)
        await trio.to_thread.run_sync(self._thread.join, abandon_on_cancel=True)
        self._check()
        return self.closed

    def abandon(self) -> None:
        """Stop after what was queued (the thread may still be writing it:
        its writes to a pipe nobody reads are not waited for)."""
        self._queue.put(None)
