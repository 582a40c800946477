"""What the live commands share: stopping on signals, naming the traced process, one pass over a session."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import trio

# The exit statuses, say() and silence_stdout() are the commands' through this module too.
from livetrace._cli.exits import EXIT_ERROR as EXIT_ERROR
from livetrace._cli.exits import EXIT_INCOMPLETE as EXIT_INCOMPLETE
from livetrace._cli.exits import EXIT_OK as EXIT_OK
from livetrace._cli.exits import say as say
from livetrace._cli.exits import silence_stdout as silence_stdout
from livetrace._nursery import open_nursery
from livetrace._plural import plural
from livetrace._protocol import text as peer
from livetrace._protocol.frames import SessionInfo, SessionMode
from livetrace._session.connect import connect
from livetrace._session.session import Session

if TYPE_CHECKING:
    from livetrace._tables.build import Unit

T = TypeVar("T")


# Past the session's own stop timeout (and a pprof window), a stop that has
# not ended the command is stuck on our side: output nobody reads, say.
STOP_GRACE_MARGIN = 5.0


async def stop_on_signals(session: Session, abort: trio.CancelScope, err: TextIO, stopped: bool = False) -> None:
    """First Ctrl-C (or SIGTERM): ask the helper to stop (a pprof session:
    at the end of its window), so the trace still ends complete. Second, or
    the stop not done within its grace: give up at once. ``stopped``: the
    first came before the session began, which was stopped already."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        if not stopped:
            await signals.__anext__()
        grace = session.limits.stop_timeout + STOP_GRACE_MARGIN
        if session.info.mode is SessionMode.PPROF_WINDOWS:
            grace += window_seconds(session.info)
        if not stopped and session.info.mode is SessionMode.PPROF_WINDOWS:
            say(
                err,
                f"stopping at the end of the current pprof window (at most {window_seconds(session.info):g} s; "
                "Ctrl-C again to abort, which leaves that window incomplete)",
            )
        elif not stopped:
            say(err, "stopping; the tracer is flushing its last data (Ctrl-C again to abort)")
        await session.stop()
        with trio.move_on_after(grace) as waited:
            await signals.__anext__()
            say(err, "aborted")
        if waited.cancelled_caught:
            say(err, f"still not done {grace:g} s after the stop (is the output blocked?): aborting")
        abort.cancel()


async def until_done(
    session: Session,
    err: TextIO,
    work: Callable[[], Awaitable[T]],
    *helpers: Callable[[], Awaitable[None]],
    stopped: bool = False,
) -> T | None:
    """Run work with Ctrl-C handling (and helpers such as a progress line)
    beside it; None if a second Ctrl-C aborted it. ``stopped``: a first
    Ctrl-C came before the session began, and stopped it already."""
    result = None
    async with open_nursery() as nursery:
        abort = trio.CancelScope()
        nursery.start_soon(stop_on_signals, session, abort, err, stopped)
        for helper in helpers:
            nursery.start_soon(helper)
        with abort:
            result = await work()
        nursery.cancel_scope.cancel()
    return result


def about(info: SessionInfo) -> str:
    """The traced process as the helper names it (escaped: its words); the
    caller closes the parenthesis. A pprof session knows no pid: it names
    the endpoint and the trace format's Go version instead."""
    if info.mode is SessionMode.PPROF_WINDOWS:
        exe = peer.shown(info.executable) or "the service"
        return f"{exe} (through {peer.shown(str(info.extra.get('url', '')))}, trace format {info.go_version}"
    return f"{peer.shown(info.executable)} (pid {info.pid}, {peer.shown(info.go_version)}"


def platform(info: SessionInfo) -> str:
    """The platform after a space (" linux/amd64"); "" when the source does not say (pprof)."""
    if not info.goos and not info.goarch:
        return ""
    return f" {peer.shown(info.goos)}/{peer.shown(info.goarch)}"


def window_seconds(info: SessionInfo) -> float:
    """A pprof session's window, in seconds."""
    return info.window_ms / 1000


async def live_pass(
    address: str,
    duration: float | None,
    token: str | None,
    err: TextIO,
    doing: str,
    collect: Callable[[Session], Awaitable[object]],
    what: str = "",
    **limits: Any,
) -> bool:
    """Attach, say ``doing`` to whom for how long (and ``what``), run ``collect`` on
    the session with Ctrl-C handling, and say how it ended; whether it
    ended as it should (not aborted, nor cut off)."""
    async with connect(address, token=token, duration=duration, **limits) as session:
        how = " in /debug/pprof/trace windows" if session.info.mode is SessionMode.PPROF_WINDOWS else ""
        span = f"for {duration:g} s" if duration else "until Ctrl-C"
        say(err, f"{doing} {about(session.info)}){how} {span}" + (f": {what}" if what else ""))
        done = await until_done(session, err, lambda: collect(session))
        end = session.end
        if end is not None:
            say(err, f"session ended: {peer.shown(end.reason)}")
        if shed := shed_note(session.counters.dropped_generations, session.counters.dropped_bytes):
            say(err, shed)
        return done is not None and end is not None


def shed_note(generations: int, nbytes: int) -> str:
    """What the helper shed because this consumer fell behind, as a line for
    the summary (or ''): the output says nothing of that time, and must say so."""
    if not generations:
        return ""
    return (
        f"the helper shed {plural(generations, 'generation')} ({nbytes / 1e6:,.1f} MB of trace) because this "
        "consumer fell behind: what they held is missing from the output (--jobs, a narrower filter, "
        "or a larger --max-pipeline-mb may keep up)"
    )


async def units_recorded(
    session: Session, sink: Callable[[Unit], Awaitable[None]], record: Path | None, err: TextIO
) -> None:
    """The session's tables, a unit at a time, to ``sink`` (sql and export
    --to parquet); its trace also written to ``record``, when given (as
    ``livetrace record``), and the files that made said."""
    from livetrace._session.recording import Recorder
    from livetrace._tables.live import session_units  # pyarrow: on a live source only

    async with open_nursery() as nursery:
        recorder = Recorder(session, record) if record is not None else None
        if recorder is not None:
            nursery.start_soon(recorder.run)
        await session_units(session, sink)
    if recorder is not None:
        say(err, "recorded " + ", ".join(str(p) for p in recorder.result.paths))
