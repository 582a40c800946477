"""The policies: how one process is traced, and the rows it gives.

- continuous: one session with the helper for as long as the process
  lives; a ``summaries`` row at the end of each generation (legacy segment),
  exactly the snapshot ``top --format json`` prints for it (the same
  :class:`TopStats`, the same JSON), and a ``spans`` row for each span over
  the target's thresholds;
- sampled: a window of ``window`` seconds every ``every`` seconds (the
  budget may stretch that), its trace kept as a capture of at most
  ``max_bytes`` (the session is stopped there), and one summary of it; the
  only policy for a pprof endpoint, whose single tracer the service's own
  users need between windows;
- flight: the flight recorder over a helper session, each capture kept and
  recorded, with the summaries as continuous has them (unless the target
  has ``summaries = false``: then the session decodes only what the
  triggers need).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import trio

from livetrace._agent.budget import Budget
from livetrace._agent.config import Policy, Target
from livetrace._agent.rows import KEY, SCHEMAS, TIME
from livetrace._agent.spool import private_dir
from livetrace._agent.store import Store
from livetrace._errors import AlreadyTracingError, BusyError, LivetraceError
from livetrace._flight.capture import Capture
from livetrace._flight.recorder import FlightRecorder
from livetrace._items import Gap, Notice, SegmentGap
from livetrace._nursery import open_nursery
from livetrace._outfile import plain_name
from livetrace._plural import plural
from livetrace._protocol.text import json_safe
from livetrace._session.connect import connect
from livetrace._session.limits import Counters
from livetrace._session.recording import Recorder
from livetrace._session.session import Session
from livetrace._session.subscribers import Fanout, Subscription
from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import RES_GOROUTINE, SPAN_KIND_NAMES
from livetrace._trace.spans.select import select_rows
from livetrace._views.top import Snapshot, TopFeeder, TopStats, subscribe_top
from livetrace._views.top_screen import snapshot_dict

__all__ = ["Traced", "summary_row", "trace_process"]

# Legacy runtimes (Go 1.21 and older) give their trace in segments, each a
# complete trace: a summary per segment, this long.
SEGMENT = 2.0
CAP_POLL = 0.1  # how often a sampled window's bytes are checked against its cap
BUDGET_POLL = 1.0  # how often a continuous session looks at the budget
NEVER = 1 << 62  # the threshold of a span kind the target does not keep
SERVICE_BYTES = 100  # of the service's name in a capture's file name (the rest: pid, time, suffix)

Emit = Callable[[str, list[dict[str, Any]]], None]


@dataclass
class Traced:
    """One process being traced: where it is, how, and where its rows go."""

    address: str
    pprof: bool  # only a pprof endpoint: sampled is the only policy
    target: Target
    provenance: dict[str, Any]  # host, service, pid, go_version, policy, labels
    captures: Path
    emit: Emit
    budget: Budget
    note: Callable[[str, int, str], None]  # a row of the agent's own record, about this process
    stop: trio.Event  # the agent is stopping: end the session as the helper ends one, its last rows sent
    store: Store | None = None  # where whole trace files are moved ([sinks] captures); None: they stay

    async def keep(self, path: Path) -> str:
        """A whole trace file moved to the store, if there is one: where it is
        now. Should the store refuse it, it stays here (said, as sink_down)."""
        if self.store is None:
            return str(path)
        store = self.store

        def move() -> str:
            where = store.put(path.relative_to(self.captures).as_posix(), path)
            path.unlink(missing_ok=True)
            return where

        try:
            return await trio.to_thread.run_sync(move)
        except OSError as e:
            self.note("sink_down", 0, f"captures {store.shown}: {str(e).splitlines()[0]}; {path} kept here")
            return str(path)

    @property
    def stem(self) -> str:
        """The start of this process's capture names: its service's name (a
        traced process may have chosen it: ``../../x`` stays one plain name
        in captures/) and its pid."""
        return f"{plain_name(self.provenance['service'], SERVICE_BYTES)}-{self.provenance['pid']}"

    async def pause_until(self, deadline: float) -> bool:
        """Wait until ``deadline`` (trio's clock); False if the agent stops first."""
        with trio.move_on_at(deadline):
            await self.stop.wait()
        return not self.stop.is_set()

    @property
    def policy(self) -> Policy:
        return Policy.SAMPLED if self.pprof else self.target.policy

    def rows(self, table: str, rows: list[dict[str, Any]]) -> None:
        now = time.time_ns() // 1000
        self.emit(table, [{**self.provenance, KEY: "", TIME: now, **r} for r in rows])


@asynccontextmanager
async def open_session(traced: Traced, **options: Any) -> AsyncIterator[Session]:
    """A session with the process, stopped as the helper stops one when the agent stops. Its stop
    event is its own: a session sets the one it is given when it stops (a pprof session at a
    window's end), which must not stop the agent's other sessions."""
    own = trio.Event()
    async with open_nursery() as nursery:

        async def relay() -> None:
            await traced.stop.wait()
            own.set()

        nursery.start_soon(relay)
        # One thread per session (jobs=1): the agent traces many processes at once within a CPU budget, and a
        # pool of cores-1 threads for each (and glibc keeping freed memory, process-wide, for them) is not that.
        # Nor does it ask for generations of a bounded size: they are for a view's lag and its pool, and the
        # agent stores a summary row a generation, which on a busy service they would multiply.
        async with connect(
            traced.address, client_name="livetrace-agent", stop=own, jobs=1, generation_bytes=None, **options
        ) as session:
            yield session
        nursery.cancel_scope.cancel()


def to_table(table: str, rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMAS[table])


def summary_row(snap: Snapshot) -> dict[str, Any]:
    """A snapshot as a ``summaries`` row: ``top_json`` is the line ``top
    --format json`` prints for it."""
    row: dict[str, Any] = {
        "first_generation": snap.first,
        "last_generation": snap.last,
        "start_ns": snap.start,
        "end_ns": snap.end,
        "events": snap.events,
        "heap_bytes": snap.heap,
        "heap_goal_bytes": snap.heap_goal,
        "gomaxprocs": snap.gomaxprocs,
        "shed_generations": snap.shed_generations,
        "lost_batches": snap.lost_batches,
        "gaps": snap.gaps,
        "top_json": json_safe(json.dumps(snapshot_dict(snap))),
    }
    for name, s in (("gc", snap.gc), ("stw", snap.stw), ("sched", snap.sched), ("mark_assist", snap.mark_assist)):
        row.update(
            {f"{name}_count": s.count, f"{name}_p50_ns": s.p50, f"{name}_p99_ns": s.p99, f"{name}_max_ns": s.max}
        )
    return row


SPANS_BUFFER = 64


@dataclass
class Feed:
    """What a session's summaries (and its spans over thresholds) are made
    of, as ``top`` makes its snapshots: what top needs of each batch's events
    (``events_of``, run in the session's pipeline, off the event loop), and
    every span, built once for all subscribers, with a mark after each
    batch's. Both lossless: an agent behind holds the decoding up, and the
    helper sheds whole generations (which are recorded), rather than lose
    batches, which would break the spans open there."""

    events: Subscription
    spans: Subscription


def summaries(source: Session | Fanout) -> Feed:
    """The subscriptions a :class:`Summaries` is fed from (of a session, or
    of a fan-out fed by hand), in this order: a batch's events are then
    handed over before its spans."""
    return Feed(*subscribe_top(source, SPANS_BUFFER))


class Summaries:
    """``top``'s snapshots, one per generation (legacy segment, pprof
    window), as ``summaries`` rows, from a :class:`Feed`, fed as top feeds
    them (:class:`TopFeeder`, ``take`` the events subscription's
    :meth:`Subscription.take_buffered`): each call of :meth:`feed` with an
    item of its span subscription, in order, gives the rows of the
    generations it completed. Sans-IO: the live policies feed it a
    session's subscriptions, the tests a trace file through a fan-out."""

    def __init__(self, take: Callable[[], list[object]]) -> None:
        self.stats = TopStats()
        self._feeder = TopFeeder(self.stats, take, tableless_apart=False)
        self._fed = False
        self._lost = False  # a loss noticed since the last row: it gets a row even with no batch after it
        self.segments = 0  # legacy segments ended (their rows made)

    @property
    def last_generation(self) -> int:
        """The latest generation fed (0: none, or a legacy trace)."""
        return self._feeder.last_generation

    @property
    def events(self) -> int:
        """Fed: what the session decoded (its counters' events) and got here."""
        return self._feeder.events

    def feed(self, item: object) -> list[dict[str, Any]]:
        out = self.end() if self._feeder.ends_unit(item) else []
        if self._feeder.feed(item):
            self._fed = True
        if isinstance(item, Notice):
            self.segments += isinstance(item, SegmentGap)
            self._lost = self._lost or isinstance(item, Gap)
        return out

    def end(self) -> list[dict[str, Any]]:
        """The summary of what was fed since the last one (none if nothing was, and nothing lost)."""
        if not self._fed and not self._lost:
            return []
        self._fed = self._lost = False
        return [summary_row(self.stats.snapshot())]

    def behind(self, counters: Counters) -> tuple[int, int]:
        """What the session (its ``counters``) has and this has not been fed:
        generations (legacy segments) received past the last one fed, and
        events decoded."""
        if counters.last_generation:
            units = counters.last_generation - self.last_generation
        else:
            units = counters.segments - self.segments
        return max(0, units), max(0, counters.events - self.events)


async def summarize(feed: Feed, traced: Traced, counters: Counters, over: Mapping[str, int] | None = None) -> None:
    """A summary row per generation (segment, window) until the session ends
    (``counters``: its own), a ``spans`` row for each span over its kind's
    threshold in ``over`` (if given), and a record of each generation the
    helper shed and, if the session is cut off (the agent's stop grace over,
    the budget, the process gone), of what it had received and not
    summarized."""
    summaries = Summaries(feed.events.take_buffered)

    def fed(item: object) -> None:
        if rows := summaries.feed(item):
            traced.rows("summaries", rows)
        if over and isinstance(item, SpanBatch) and (rows := span_rows(item, over, time.time_ns())):
            traced.rows("spans", rows)
        if isinstance(item, Gap):
            traced.note(*lost(item))

    spans = feed.spans
    async with feed.events, spans:
        try:
            it = spans.__aiter__()
            while True:
                try:
                    # What is in the buffer already, without a checkpoint each (as top reads it).
                    item = spans.next_nowait()
                except trio.WouldBlock:
                    try:
                        item = await it.__anext__()
                    except StopAsyncIteration:
                        break
                except StopAsyncIteration:
                    break
                fed(item)
        except trio.Cancelled:
            # What is decoded already is summarized (no await here: the scope is cancelled), the rest counted.
            for item in spans.take_buffered():
                fed(item)
            done = summaries.last_generation or summaries.segments
            if rows := summaries.end():
                traced.rows("summaries", rows)
            behind, events = summaries.behind(counters)
            unit = "segment" if not counters.last_generation and counters.segments else "generation"
            traced.note(
                "cut_off",
                behind,
                f"pid {traced.provenance['pid']}: the session was cut off with "
                + plural(behind, f"{unit} received and not summarized", f"{unit}s received and not summarized")
                + (f" after {unit} {done}" if done else "")
                + f", and {plural(events, 'event')} decoded and not summarized",
            )
            raise
        except LivetraceError:
            if rows := summaries.end():  # what came before the error
                traced.rows("summaries", rows)
            raise
    if rows := summaries.end():
        traced.rows("summaries", rows)


def lost(item: Gap) -> tuple[str, int, str]:
    """The agent's record of generations its session's helper shed."""
    n = item.last_generation - item.first_generation + 1
    return (
        "generations_shed",
        n,
        f"generations {item.first_generation} to {item.last_generation} shed by the helper "
        "(the agent fell behind; the summary before them counts them)",
    )


def span_rows(item: SpanBatch, over: Mapping[str, int], now_ns: int) -> list[dict[str, Any]]:
    """A ``spans`` row for each span of ``item`` at least as long as its
    kind's threshold in ``over``: those of its kinds and at least the least
    threshold picked in the core (a batch holds every span that ended in it,
    most of them short), then each kind's own threshold, each row read from
    the columns (a Span object would also read its stacks, which no row
    holds). The wall clock comes from the trace's own where it has one (its
    generation's clock snapshot, Go 1.25+; a live legacy session's
    estimate); else the newest span is taken as ending ``now_ns``, which is
    right to about a generation."""
    limits = [over.get(name, NEVER) for name in SPAN_KIND_NAMES]
    kinds, starts, ends = item.kinds, item.starts, item.ends
    keep = [i for i in _over_least(item, limits) if ends[i] - starts[i] >= limits[kinds[i]]]
    if not keep:
        return []
    bases = {k: t.wall_base for k, t in item.tables.items()}
    guess: int | None = None  # the newest span's end taken as now_ns: only where a span's tables have no clock
    rkinds, rids, start_tables = item.resource_kinds, item.resource_ids, item.start_tables
    names, reasons, task_names, table = item.names, item.reasons, item.task_names, item.names_table
    rows = []
    for i in keep:
        start = starts[i]
        base = bases.get(start_tables[i])
        if base is None:
            if guess is None:
                guess = now_ns - max(ends)
            base = guess
        rows.append(
            {
                "kind": SPAN_KIND_NAMES[kinds[i]],
                "start_ns": start,
                "duration_ns": ends[i] - start,
                "wall_start": (base + start) // 1000,  # µs
                "goroutine": rids[i] if rkinds[i] == RES_GOROUTINE else 0,
                # As a Span's text: bytes that are not UTF-8 kept (escaped)
                "reason": table[reasons[i]].decode("utf-8", "surrogateescape"),
                "name": table[names[i]].decode("utf-8", "surrogateescape"),
                "task_name": table[task_names[i]].decode("utf-8", "surrogateescape"),
            }
        )
    return rows


def _over_least(item: SpanBatch, limits: list[int]) -> memoryview:
    """The rows of the spans of the kinds ``limits`` has a threshold for, at least as long as the least."""
    mask = bytes(1 if n < NEVER else 0 for n in limits).ljust(256, b"\0")
    least = min(limits)
    if use_compiled(None):
        rows = ccore.span_select([c.cast("B") for c in item.columns()], mask, None, None, None, None, least, None)
    else:
        rows = select_rows(item.columns(), (mask, None, None, None, None, None), least)
    return memoryview(rows).cast("I")


async def continuous(traced: Traced) -> None:
    """The helper's whole trace while the agent is within its budget; over
    it, the target's sampled windows (stretched) until it is back within."""
    while True:
        if traced.budget.stretch() > 1:
            # What the continuous session cost, about: the agent's share of a core when it was cut.
            cost = max(traced.budget.cpu, 0.0)
            traced.note("budget_sampling", 0, f"over budget: pid {traced.provenance['pid']} sampled, not continuous")
            # Back only when the budget has room for what the session cost: never more than it allows.
            while traced.budget.stretch() > 1 or traced.budget.headroom() < cost:
                started = trio.current_time()
                await sample_or_skip(traced)
                if not await traced.pause_until(started + traced.target.every * traced.budget.stretch()):
                    return
            traced.note("budget_continuous", 0, f"within budget: pid {traced.provenance['pid']} continuous again")
        if not await continuous_session(traced):
            return


async def continuous_session(traced: Traced) -> bool:
    """One session until the process ends it (False), or the budget does (True)."""
    async with open_session(traced, segment=SEGMENT) as session:
        # Every subscription is made before the session's first frame is read.
        feed = summaries(session)
        cut = False
        async with open_nursery() as nursery:

            async def watch_budget() -> None:
                nonlocal cut
                while traced.budget.stretch() <= 1:  # noqa: ASYNC110  # the budget is measured, not signalled
                    await trio.sleep(BUDGET_POLL)
                cut = True
                nursery.cancel_scope.cancel()

            nursery.start_soon(watch_budget)
            await summarize(feed, traced, session.counters, traced.target.spans_over)
            nursery.cancel_scope.cancel()
    return cut


async def sampled(traced: Traced) -> None:
    target = traced.target
    while True:
        started = trio.current_time()
        await sample_or_skip(traced)
        if not await traced.pause_until(started + target.every * traced.budget.stretch()):
            return


async def sample_or_skip(traced: Traced) -> None:
    """One window; or, if the tracer is someone else's as it starts, a record of the window skipped.
    Between windows the tracer is the service's own users' (a pprof endpoint's one tracer), and any
    tool may hold it for a moment (``livetrace ps`` asks for a 1 ms trace): the next window is taken
    as planned, and the process stays attached."""
    try:
        await sample_once(traced)
    except (AlreadyTracingError, BusyError) as e:
        traced.note("window_skipped", 0, f"pid {traced.provenance['pid']}: {e}")


async def sample_once(traced: Traced) -> None:
    """One window: its trace kept as a capture (at most max_bytes), and summarized."""
    target = traced.target
    window = target.window
    where = private_dir(traced.captures)
    path = where / f"{traced.stem}-{time.time_ns()}.trace"
    limits: dict[str, Any] = {"window": window} if traced.pprof else {"segment": max(1.0, window)}
    async with open_session(traced, duration=window, **limits) as session:
        cut = False
        feed = summaries(session)
        recorder = Recorder(session, path)

        async def cap() -> None:
            nonlocal cut
            while session.counters.bytes <= target.max_bytes:  # noqa: ASYNC110  # counters have no event to wait on
                await trio.sleep(CAP_POLL)
            cut = True
            await session.stop()

        async with open_nursery() as nursery:
            nursery.start_soon(summarize, feed, traced, session.counters)
            capping = trio.CancelScope()

            async def capped() -> None:
                with capping:
                    await cap()

            nursery.start_soon(capped)
            rec = await recorder.run()
            capping.cancel()
    for p in rec.paths:
        size = p.stat().st_size
        traced.rows(
            "captures",
            [
                {
                    "source": "pprof window" if traced.pprof else "helper window",
                    "path": await traced.keep(p),
                    "bytes": size,
                    "trigger": "",
                    "cut": cut or not rec.complete,
                }
            ],
        )


async def flight(traced: Traced) -> None:
    target = traced.target
    where = private_dir(traced.captures / traced.stem)

    def row(c: Capture, where: str, size: int) -> dict[str, Any]:
        return {
            "source": "flight dump",
            "path": where,
            "bytes": size,
            "trigger": c.firing.trigger.text,
            "cut": c.tail_cut,
        }

    def captured(c: Capture) -> None:
        traced.rows("captures", [row(c, str(p), p.stat().st_size) for p in c.traces if p.exists()])

    # With a store, each capture is moved there first (in a worker thread); one cut off is recorded here.
    send, waiting = trio.open_memory_channel[Capture](math.inf)

    async def move_captures() -> None:
        pending: list[Capture] = []
        try:
            async for c in waiting:
                pending = [c]
                kept = [(p, p.stat().st_size) for p in c.traces if p.exists()]
                traced.rows("captures", [row(c, await traced.keep(p), size) for p, size in kept])
                pending = []
        except trio.Cancelled:
            for c in [*pending, *_drained(waiting)]:
                captured(c)
            raise

    async with open_session(traced, segment=SEGMENT) as session:
        recorder = FlightRecorder(
            session,
            keep=target.keep,
            triggers=target.triggers,
            out_dir=where,
            after=target.after,
            cooldown=target.cooldown,
            max_files=target.max_files,
            on_capture=captured if traced.store is None else send.send_nowait,
        )
        # Without summaries, the session decodes only what the triggers need, if anything.
        feed = summaries(session) if target.summaries else None
        async with open_nursery() as nursery:
            if feed is not None:
                nursery.start_soon(summarize, feed, traced, session.counters)
            nursery.start_soon(move_captures)
            with send:
                await recorder.run()


def _drained(channel: trio.MemoryReceiveChannel[Capture]) -> list[Capture]:
    out = []
    while True:
        try:
            out.append(channel.receive_nowait())
        except (trio.WouldBlock, trio.EndOfChannel):
            return out


POLICIES = {Policy.CONTINUOUS: continuous, Policy.SAMPLED: sampled, Policy.FLIGHT: flight}


async def trace_process(traced: Traced) -> None:
    """Trace the process by its policy until it (or its session) ends."""
    await POLICIES[traced.policy](traced)
