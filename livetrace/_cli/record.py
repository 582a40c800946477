"""``livetrace record``: a session written to files that go tool trace opens."""

from __future__ import annotations

import signal
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import trio

from livetrace._cli.common import EXIT_INCOMPLETE, EXIT_OK, about, platform, say, until_done, window_seconds
from livetrace._cli.progress import format_bytes, show_progress, show_status
from livetrace._items import Gap, WindowGap
from livetrace._nursery import open_nursery
from livetrace._outfile import check_output, is_stream
from livetrace._plural import plural
from livetrace._protocol import text as peer
from livetrace._protocol.frames import SessionMode
from livetrace._protocol.redact import redact
from livetrace._session.connect import connect
from livetrace._session.pprof_http import is_pprof_address
from livetrace._session.recording import Recorder, Recording, segment_path
from livetrace._session.session import Session

# A pprof recording's window without --duration (with one: the whole duration).
RECORD_WINDOW = 5.0
PROGRESS_INTERVAL = 0.25


def traced_seconds(rec: Recording, duration: float | None, elapsed: float) -> float:
    """How long the recording traced: not the time since the session began
    (a pprof window's bytes may all come at its end, and a helper may have
    started the trace before), but

    - for a pprof session, its complete windows' length (a duration's last
      window is cut to fit it);
    - for a helper's session, the helper's clock from when it started the
      tracer (or, joining a trace already running, from when the first
      chunk after the header was read) to when the last chunk was read;

    the time since the session began (``elapsed``) where neither says."""
    info = rec.info
    if info.mode is SessionMode.PPROF_WINDOWS:
        span = (len(rec.segments) + rec.complete) * window_seconds(info)
        span = min(span, duration) if duration else span
    elif rec.read_span is not None:
        first, last = rec.read_span
        span = (last - (first if info.joined_running else info.start_unix_ns)) / 1e9
    else:
        span = 0.0
    return span if span > 0 else elapsed


def report(rec: Recording, err: TextIO, elapsed: float, duration: float | None = None) -> int:
    c = rec.counters
    elapsed = traced_seconds(rec, duration, elapsed)
    rate = c.bytes / elapsed if elapsed > 0 else 0.0
    what = f"{format_bytes(c.bytes)} in {plural(c.chunks, 'chunk')} over {elapsed:.1f} s ({format_bytes(rate)}/s)" + (
        f", {plural(rec.generations, 'generation')}" if rec.generations else ""
    )
    files = ", ".join(str(p) for p in rec.paths) or "nothing"
    if c.dropped_chunks:
        say(
            err,
            f"the consumer fell behind: {plural(c.dropped_chunks, 'chunk')} ({format_bytes(c.dropped_bytes)}) "
            f"dropped, {plural(c.dropped_generations, 'generation')} shed",
        )
    if rec.complete:
        end = rec.end
        assert end is not None
        if end.reason == "overflow":
            say(
                err,
                "warning: the helper's queue filled and it stopped the trace early; "
                "read faster or give the helper a bigger queue (LIVETRACE_QUEUE_MB)",
            )
        say(err, f"recorded {what}; trace complete (ended: {peer.shown(end.reason)}) -> {files}")
        return EXIT_OK
    why = (
        str(rec.error)
        if rec.error
        else (peer.shown(rec.end.detail) if rec.end and rec.end.detail else "the session was cut short")
    )
    say(err, f"INCOMPLETE recording: {why}")
    say(err, f"kept {what} in {files}")
    return EXIT_INCOMPLETE


async def record_command(
    address: str,
    out: Path,
    *,
    duration: float | None,
    token: str | None,
    progress: bool,
    err: TextIO,
    segment: float | None = None,
    window: float | None = None,
    **limits: Any,
) -> tuple[int, Recording]:
    check_output(out, "record")
    pprof = is_pprof_address(address)
    if pprof:
        window, segment = window or duration or RECORD_WINDOW, None
    stop, abort = trio.Event(), trio.CancelScope()
    async with open_nursery() as nursery:
        waiting = trio.CancelScope()
        await nursery.start(_stop_before_start, stop, abort, pprof, err)
        if window is not None and pprof:
            # Said at once: a quiet service sends its first window only as it ends.
            say(
                err,
                f"recording {redact(address)} in pprof windows of {window:g} s to {out}"
                + (f" for {duration:g} s" if duration else "; Ctrl-C stops at the end of the window in progress"),
            )
        if window is not None and pprof and progress:
            nursery.start_soon(_show_waiting, waiting, window, err)
        with abort:
            async with connect(
                address, token=token, duration=duration, segment=segment, window=window, stop=stop, **limits
            ) as session:
                waiting.cancel()
                result = await _record(session, out, duration, segment, progress, err, stop.is_set())
        nursery.cancel_scope.cancel()
    if abort.cancelled_caught:
        raise KeyboardInterrupt  # a second Ctrl-C before the session began: nothing to keep
    return result


async def _stop_before_start(
    stop: trio.Event,
    abort: trio.CancelScope,
    pprof: bool,
    err: TextIO,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Ctrl-C (or SIGTERM) before the session began: the first stops it as
    it begins (a pprof session: at the end of its first window, which is
    kept), a second gives up. Once the session began, its own handling
    (opened later, so it takes the signals first) is in charge."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        await signals.__anext__()
        stop.set()
        say(
            err,
            "stopping at the end of the first pprof window, which is kept (Ctrl-C again to abort: nothing is recorded)"
            if pprof
            else "stopping as soon as the session begins (Ctrl-C again to abort)",
        )
        await signals.__anext__()
        say(err, "aborted")
        abort.cancel()


async def _show_waiting(scope: trio.CancelScope, window: float, err: TextIO) -> None:
    """The status line until the first window's header came."""
    with scope:
        await show_status(
            lambda t: f"{t:6.1f} s  waiting for pprof window 1 ({window:g} s): a quiet service sends it at its end",
            err,
            PROGRESS_INTERVAL,
        )


async def _record(
    session: Session,
    out: Path,
    duration: float | None,
    segment: float | None,
    progress: bool,
    err: TextIO,
    stopped: bool,
) -> tuple[int, Recording]:
    """Record the session that began (``stopped``: a Ctrl-C came before)."""
    info = session.info
    pprof = info.mode is SessionMode.PPROF_WINDOWS
    if not pprof:  # a pprof session said so before its first window came
        say(
            err,
            f"recording {about(info)}{platform(info)}) "
            f"to {out}" + (f" for {duration:g} s" if duration else "; Ctrl-C stops"),
        )
    where = (
        f"one after another to {'standard output' if str(out) == '-' else out} (livetrace decode reads them so)"
        if is_stream(out)
        else f"in a file of its own ({out}, then {segment_path(out, 2)}, ...)"
    )
    if pprof:
        say(
            err,
            f"{about(info)}) answered: pprof windows of {window_seconds(info):g} s back to back, each a complete "
            f"trace, written {where}; nothing is traced between two windows",
        )
    elif segment and info.mode is not SessionMode.LEGACY_SEGMENTS:
        say(
            err,
            f"note: {peer.shown(info.go_version)} writes self-contained generations; --segment applies "
            "only to Go 1.21 and older, so this is one trace",
        )
    elif info.mode is SessionMode.LEGACY_SEGMENTS:
        say(
            err,
            f"segment mode: the trace restarts every {info.segment_ms / 1000:g} s; each segment is "
            f"a complete trace, written {where}",
        )

    def on_gap(gap: Gap, continued: Path | None) -> None:
        if isinstance(gap, WindowGap):
            say(err, gap.message)
            return
        where = f"; continuing in {continued}" if continued else ""
        say(
            err,
            f"fell behind: the helper shed generations {gap.first_generation}-{gap.last_generation} "
            f"({format_bytes(gap.bytes)}){where}",
        )

    recorder = Recorder(session, out, on_gap=on_gap)
    start = trio.current_time()
    helpers = [partial(show_progress, session.counters, err)] if progress else []
    await until_done(session, err, recorder.run, *helpers, stopped=stopped)
    return report(recorder.result, err, trio.current_time() - start, duration), recorder.result
