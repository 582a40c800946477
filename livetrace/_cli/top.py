"""``livetrace top``: a live summary of where a service's time goes,
redrawn in the terminal (rich), or printed as snapshots on a pipe."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import termios
import tty
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

import trio
from rich.console import Console
from rich.live import Live

from livetrace._cli.common import EXIT_INCOMPLETE, EXIT_OK, about, live_pass, say
from livetrace._nursery import open_nursery
from livetrace._protocol.text import json_safe
from livetrace._session.recording import Recorder
from livetrace._session.session import Session
from livetrace._views.top import Snapshot, TopFeeder, TopStats, subscribe_top
from livetrace._views.top_screen import SORT_KEYS, View, screen, snapshot_dict

# A burst of batches (one generation decoded) is over when nothing more
# comes for this long: the snapshot need not wait for the next generation.
QUIET = 0.25


@contextmanager
def _keys_mode(fd: int) -> Iterator[bool]:
    """The terminal in cbreak mode (keys one at a time, Ctrl-C still a
    signal) for the duration; False if ``fd`` is not a terminal."""
    if not os.isatty(fd):
        yield False
        return
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        yield True
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


class _Display:
    """Where snapshots go: a redrawn screen, text blocks, or JSON lines."""

    def __init__(self, out: TextIO, fmt: str, view: View, redraw: bool) -> None:
        self.view = view
        self.fmt = fmt
        self.out = out
        width = None if redraw else max(100, _columns(out))
        self.console = Console(file=out, width=width, highlight=False, no_color=not redraw, emoji=False)
        self.live: Live | None = None
        self.about = ""
        self.last: Snapshot | None = None
        self.quit = False  # q was pressed

    def show(self, snap: Snapshot) -> None:
        self.last = snap
        if self.fmt == "json":
            self.out.write(json_safe(json.dumps(snapshot_dict(snap))) + "\n")
            self.out.flush()
        elif self.live is not None:
            if not self.view.paused:
                self.live.update(screen(snap, self.about, self.view, keys=True), refresh=True)
        else:
            self.console.print(screen(snap, self.about, self.view, keys=False))
            self.console.print()
            self.out.flush()

    def key(self, k: str) -> bool:
        """Act on a key; False for quit."""
        if k == "q":
            return False
        if k in SORT_KEYS:
            self.view.sort = SORT_KEYS[k][0]
        elif k == "p":
            self.view.paused = not self.view.paused
        else:
            return True
        if self.live is not None and self.last is not None:
            self.live.update(screen(self.last, self.about, self.view, keys=True), refresh=True)
        return True


def _columns(out: TextIO) -> int:
    try:
        return os.get_terminal_size(out.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 120


async def _feed(session: Session, stats: TopStats, display: _Display, once: bool, interval: float) -> None:
    """Feed the session's spans and events to the stats, showing a snapshot
    at the end of a generation (segment, window) once ``interval`` has
    passed; with ``once``, only one, of the whole session, at its end.

    The spans come built (in the session's pool, with --jobs) from a span
    subscription with marks; what top needs of the events, summarized in
    the pool too, from a batch subscription. A mark says how many events
    its spans are of: the summaries of those are in by then, and the
    goroutines' states at the mark are the snapshot's."""
    last_shown = trio.current_time()
    fed = False

    def due() -> bool:
        return fed and not once and trio.current_time() - last_shown >= interval

    def show() -> None:
        nonlocal last_shown, fed
        display.show(stats.snapshot())
        last_shown, fed = trio.current_time(), False

    # Lossless: a top that cannot keep up holds the reading up, and the helper sheds whole
    # generations, which the snapshot counts (a lossy subscriber lost 60% of the 16-P
    # trace's batches, each loss breaking the spans open there).
    events, spans = subscribe_top(session)
    feeder = TopFeeder(stats, events.take_buffered)

    async with events, spans:
        it = spans.__aiter__()
        while True:
            item: object = None
            try:
                # What is in the buffer already, without a checkpoint (and a cancel scope) each:
                # those were a third of top's thread.
                item = spans.next_nowait()
            except StopAsyncIteration:
                break
            except trio.WouldBlock:
                # Wait for the next item until the interval is over (forever if nothing was
                # fed), then only as long as the generation's burst may still go on.
                deadline = last_shown + interval if fed and not once else math.inf
                with trio.move_on_at(trio.current_time() + QUIET if due() else deadline) as quiet:
                    try:
                        item = await it.__anext__()
                    except StopAsyncIteration:
                        break
                if quiet.cancelled_caught:  # the burst is over: the generation is all in
                    if due() and feeder.between:
                        show()
                    continue
            if feeder.ends_unit(item) and due():
                show()
            # A loss is news too: the helper's last gap comes after the last spans, when the
            # session ended while top was behind, and the last snapshot must count it.
            lost = stats.losses
            if feeder.feed(item) or stats.losses > lost:
                fed = True
        if fed or once:
            show()


async def _read_keys(display: _Display, fd: int, scope: trio.CancelScope, feeding: trio.CancelScope) -> None:
    """Keys until q, which ends the feeding at once: what is still queued
    is not worth a wait (leaving the session drops the connection, which
    stops the helper's tracer)."""
    with scope:
        while True:
            await trio.lowlevel.wait_readable(fd)
            for k in os.read(fd, 32).decode("utf-8", "replace").lower():
                if not display.key(k):
                    display.quit = True
                    feeding.cancel()
                    return


async def run_top(args: argparse.Namespace, out: TextIO, err: TextIO, **limits: Any) -> bool:
    redraw = args.format == "text" and not args.once and out.isatty()
    display = _Display(out, args.format, View(sort=args.sort, rows=args.rows), redraw)
    stats = TopStats()
    duration = args.duration or (args.interval if args.once else None)
    # A refresh per generation: ask for them (and legacy segments) as often as the interval.
    limits.setdefault("advance", min(1.0, max(0.1, args.interval)))
    limits.setdefault("segment", max(1.0, args.interval))

    async def collect(session: Session) -> bool:
        display.about = f"{about(session.info)})"
        recorder = Recorder(session, args.record) if args.record else None
        keys, feeding = trio.CancelScope(), trio.CancelScope()
        async with open_nursery() as nursery:
            if recorder is not None:
                nursery.start_soon(recorder.run)  # ends with the session
            with _keys_mode(sys.stdin.fileno()) if redraw else _no_keys() as reading:
                if reading:
                    nursery.start_soon(_read_keys, display, sys.stdin.fileno(), keys, feeding)
                with feeding:
                    if redraw:
                        with Live(console=display.console, screen=True, auto_refresh=False) as live:
                            display.live = live
                            await _feed(session, stats, display, args.once, args.interval)
                    else:
                        await _feed(session, stats, display, args.once, args.interval)
                display.live = None
                keys.cancel()
                if display.quit and recorder is not None:
                    await session.stop()  # the recording still ends complete
        if recorder is not None:
            say(err, "recorded " + ", ".join(str(p) for p in recorder.result.paths))
        return True

    complete = await live_pass(args.address, duration, args.token, err, "watching", collect, **limits)
    return complete or display.quit


@contextmanager
def _no_keys() -> Iterator[bool]:
    yield False


async def top_once(address: str, seconds: float, out: TextIO, err: TextIO, rows: int = 8) -> bool:
    """One plain snapshot of ``seconds`` of a service (the demo's summary)."""
    options = {"once": True, "interval": seconds, "format": "text", "sort": "running", "rows": rows, "record": None}
    args = argparse.Namespace(address=address, duration=seconds, token=None, **options)
    return await run_top(args, out, err)


def top_command(args: argparse.Namespace, err: TextIO, **limits: Any) -> int:
    complete = trio.run(lambda: run_top(args, sys.stdout, err, **limits))
    return EXIT_OK if complete else EXIT_INCOMPLETE
