"""``livetrace flight``: a flight recorder outside the process, with triggers."""

from __future__ import annotations

import argparse
import math
import signal
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import trio

from livetrace._cli.common import EXIT_ERROR, EXIT_OK, about, say, shed_note
from livetrace._cli.flight_options import FLIGHT_WINDOW
from livetrace._cli.progress import show_status
from livetrace._errors import (
    AlreadyTracingError,
    BusyError,
    ConnectError,
    ConnectionLostError,
    LivetraceError,
    NotASocketError,
    PeerCredentialsError,
    TLSVerificationError,
)
from livetrace._flight.capture import Capture, Firing
from livetrace._flight.capture_writer import FINISH_WITHIN, CaptureFailure, check_out_dir
from livetrace._flight.recorder import FlightRecorder, FlightState
from livetrace._flight.triggers import Trigger, TriggerError, format_size, parse_trigger
from livetrace._nursery import open_nursery
from livetrace._plural import plural
from livetrace._protocol import text as peer
from livetrace._session.connect import connect
from livetrace._session.session import Session
from livetrace._session.target import resolve

FIRST_BACKOFF = 0.5
MAX_BACKOFF = 30.0
STATUS_EVERY = 0.5


@dataclass
class _Run:
    """The command's state across sessions."""

    state: FlightState
    session: Session | None = None
    recorder: FlightRecorder | None = None
    stopping: bool = False
    shed: int = 0  # generations the helper shed, every session's
    shed_bytes: int = 0


def _fired(err: TextIO, f: Firing, started: bool) -> None:
    what = ""
    if f.span is not None:
        name = peer.shown(f.span.name or f.span.reason)
        where = "" if f.span.resource.kind == "None" else f" on {f.span.resource}"
        what = f": {f.span.kind}{' ' + name if name else ''} {f.span.duration / 1e6:.1f} ms{where}"
    elif f.value is not None:
        what = f": {format_size(f.value)}"
    elif f.event is not None and f.event.kind_name == "Log":
        what = f": log {peer.shown(f.event.log()[2])!s}"
    if started:
        say(err, f"trigger {f.trigger.text} fired{what}")


def _captured(err: TextIO, d: Capture) -> None:
    cut = " (tail cut short: the session ended)" if d.tail_cut else ""
    joined = d.joined + d.joined_late
    also = ""
    if joined:
        late = f", {d.joined_late} while it was written" if d.joined_late else ""
        also = f"; {joined} more trigger{'s' if joined > 1 else ''} fired and joined it{late}"
    say(
        err,
        f"wrote {', '.join(str(p) for p in d.traces)} ({format_size(d.size)}){cut} and {d.json_path.name}{also}",
    )


def _failed(err: TextIO, f: CaptureFailure) -> None:
    what = f"the capture of trigger {f.firing.trigger.text}"
    if f.abandoned:
        say(err, f"{what} was abandoned: {f.reason}")
    elif f.retry_in is not None:
        say(err, f"{what} is not written yet: {f.path}: {f.reason}; retrying in {f.retry_in:g} s")
    else:
        say(err, f"{what} failed: {f.path}: {f.reason}; recording goes on")


def status_text(run: _Run, elapsed: float) -> str:
    r = run.recorder
    st = run.state
    if r is None:
        return f"{elapsed:6.0f} s  not attached; fired {st.fired}, {plural(len(st.captures), 'capture')}"
    ring = r.ring
    return (
        f"{elapsed:6.0f} s  kept {ring.window_ns / 1e9:4.1f} s, {format_size(ring.size)} in {len(ring.units)} "
        f"{ring.layout.value}"
        f"  fired {st.fired + st.joined + st.suppressed}"
        + (f" ({st.joined} joined a capture)" if st.joined else "")
        + (f" ({st.suppressed} in cooldown)" if st.suppressed else "")
        + f", {plural(len(st.captures), 'capture')}"
        + (f", {st.failed + st.abandoned} not written" if st.failed + st.abandoned else "")
        + (f", {r.pending} pending" if r.pending else "")
    )


def summary(st: FlightState) -> str:
    """The last line: every trigger that fired, and what became of every capture."""
    fired = st.fired + st.joined + st.suppressed
    how = [f"{st.fired} started a capture"]
    how += [f"{st.joined} joined one"] if st.joined else []
    how += [f"{st.suppressed} in cooldown"] if st.suppressed else []
    outcome = [f"{plural(len(st.captures), 'capture')} written"]
    outcome += [f"{st.failed} failed"] if st.failed else []
    outcome += [f"{st.abandoned} abandoned at the stop"] if st.abandoned else []
    outcome += [f"{st.empty} with nothing kept yet to write"] if st.empty else []
    outcome += [f"{plural(st.removed, 'old file')} removed"] if st.removed else []
    return f"stopped: {plural(fired, 'trigger')} fired ({', '.join(how)}); {', '.join(outcome)}"


async def _signals(run: _Run, abort: trio.CancelScope, err: TextIO) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            if run.stopping:
                say(err, "aborted (no capture is left partial)")
                if run.recorder is not None:
                    run.recorder.abandon()
                abort.cancel()
                return
            run.stopping = True
            pending = run.recorder is not None and run.recorder.pending
            say(
                err,
                "stopping"
                + (
                    f"; the pending capture is written now with the tail it has, or abandoned after {FINISH_WITHIN:g} s"
                    if pending
                    else ""
                )
                + " (Ctrl-C again to abort)",
            )
            if run.session is not None:
                await run.session.stop()
            else:
                abort.cancel()


def _retryable(e: LivetraceError) -> bool:
    if isinstance(e, PeerCredentialsError | TLSVerificationError | NotASocketError):
        return False
    return isinstance(e, ConnectError | ConnectionLostError | BusyError | AlreadyTracingError)


async def flight_command(args: argparse.Namespace, err: TextIO, **limits: Any) -> int:
    try:
        triggers: list[Trigger] = [parse_trigger(t) for t in args.trigger]
    except TriggerError as e:
        print(f"livetrace flight: {e}", file=err, flush=True)
        return EXIT_ERROR
    out: Path = args.output
    try:
        await trio.Path(out).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        say(err, f"error: cannot use {out} for the captures: {e.strerror or e}")
        return EXIT_ERROR
    try:
        check_out_dir(out)
    except LivetraceError as e:
        say(err, f"error: {e}")
        return EXIT_ERROR
    if args.segment < 1:
        say(err, "error: --segment must be at least 1 second")
        return EXIT_ERROR
    run = _Run(FlightState())
    show = err.isatty() if args.status is None else args.status
    code = EXIT_OK
    async with open_nursery() as nursery:
        abort = trio.CancelScope()
        nursery.start_soon(_signals, run, abort, err)
        if show:
            nursery.start_soon(show_status, partial(status_text, run), err, STATUS_EVERY)
        with abort:
            code = await _attach_loop(run, args, triggers, err, limits)
        nursery.cancel_scope.cancel()
    say(err, summary(run.state))
    if shed := shed_note(run.shed, run.shed_bytes):
        say(err, shed)
    return code


async def _attach_loop(
    run: _Run, args: argparse.Namespace, triggers: list[Trigger], err: TextIO, limits: dict[str, Any]
) -> int:
    backoff = FIRST_BACKOFF
    deadline = math.inf if not args.duration else trio.current_time() + args.duration
    attached_before = False
    while not run.stopping and trio.current_time() < deadline:
        left = None if deadline == math.inf else deadline - trio.current_time()
        try:
            # A process named by pid or name is resolved on each attach (it
            # may have restarted), here rather than by connect(): the window
            # depends on what it resolves to.
            target = await resolve(args.address)
            if args.window is not None and not target.pprof:
                say(err, f"error: --window applies to http:// addresses (net/http/pprof) only, not {target.address}")
                return EXIT_ERROR
            window = (args.window or FLIGHT_WINDOW) if target.pprof else None
            async with connect(
                target.address,
                token=args.token,
                duration=left,
                advance=0.5,
                segment=args.segment,
                window=window,
                expected_pid=target.pid,
                **limits,
            ) as session:
                started = trio.current_time()
                recorder = FlightRecorder(
                    session,
                    keep=args.keep,
                    triggers=triggers,
                    out_dir=args.output,
                    after=args.after,
                    cooldown=args.cooldown,
                    max_files=args.max_files,
                    max_memory=args.max_memory,
                    state=run.state,
                    on_fire=lambda f, started: _fired(err, f, started),
                    on_capture=lambda d: _captured(err, d),
                    on_error=lambda f: _failed(err, f),
                )
                run.session, run.recorder = session, recorder
                info = session.info
                verb = "re-attached to" if attached_before else "attached to"
                say(
                    err,
                    f"{verb} {about(info)}); keeping {args.keep:g} s (at most {format_size(args.max_memory)})"
                    f" of {recorder.ring.layout.value}"
                    + (f" ({window:g} s, back to back; nothing is traced between two)" if window else "")
                    + "; triggers: "
                    + ", ".join(
                        t.text + ("" if t.source != "rss" or recorder.process else " (remote: heap in use)")
                        for t in triggers
                    ),
                )
                attached_before = True
                if run.stopping:
                    await session.stop()
                try:
                    await recorder.run()
                finally:
                    run.session = run.recorder = None
                    run.shed += session.counters.dropped_generations
                    run.shed_bytes += session.counters.dropped_bytes
                if trio.current_time() - started > MAX_BACKOFF:
                    backoff = FIRST_BACKOFF
                end = session.end
                if run.stopping or trio.current_time() >= deadline:
                    break
                why = peer.shown(end.reason) if end is not None else "no end frame"
                say(err, f"the session ended ({why}); re-attaching in {backoff:g} s")
        except LivetraceError as e:
            run.session = None
            if not _retryable(e) or run.stopping:
                say(err, f"error: {e}")
                return EXIT_ERROR
            say(err, f"{e}; re-attaching in {backoff:g} s")
        await trio.sleep(backoff)
        backoff = min(backoff * 2, MAX_BACKOFF)
    return EXIT_OK
