"""``livetrace record``: a session written to files that go tool trace opens."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, TextIO

import trio

from livetrace._cli.common import EXIT_INCOMPLETE, EXIT_OK, about, platform, say, until_done, window_seconds
from livetrace._cli.progress import format_bytes, show_progress
from livetrace._items import Gap, WindowGap
from livetrace._outfile import is_stream
from livetrace._plural import plural
from livetrace._protocol import text as peer
from livetrace._protocol.frames import SessionMode
from livetrace._session.connect import connect
from livetrace._session.pprof_http import is_pprof_address
from livetrace._session.recording import Recorder, Recording, check_output, segment_path

# A pprof recording's window without --duration (with one: the whole duration).
RECORD_WINDOW = 5.0


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
    check_output(out)
    if is_pprof_address(address):
        window, segment = window or duration or RECORD_WINDOW, None
    async with connect(address, token=token, duration=duration, segment=segment, window=window, **limits) as session:
        info = session.info
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
        if info.mode is SessionMode.PPROF_WINDOWS:
            say(
                err,
                f"pprof windows of {window_seconds(info):g} s back to back, each a complete trace, written {where}; "
                "nothing is traced between two windows",
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
        await until_done(session, err, recorder.run, *helpers)
        return report(recorder.result, err, trio.current_time() - start, duration), recorder.result
