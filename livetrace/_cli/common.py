"""What the commands share: exit codes, messages, stopping on signals, and the options of a session."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO, TypeVar

import trio

from livetrace._protocol import text as peer
from livetrace._protocol.frames import SessionInfo
from livetrace._session.nursery import open_nursery
from livetrace._session.pprof_http import MIN_WINDOW
from livetrace._session.session import IDLE_TIMEOUT, MIN_ADVANCE, STOP_TIMEOUT, Session, connect

EXIT_OK, EXIT_INCOMPLETE, EXIT_ERROR = 0, 1, 2


T = TypeVar("T")


def period_option(text: str) -> float:
    """A --period: 0 (the runtime's own, about a second) or 0.1 to 1 seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if value != 0 and not MIN_ADVANCE <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} s: the period is {MIN_ADVANCE} to 1 s, or 0 for the runtime's own")
    return value


def say(err: TextIO, msg: str) -> None:
    print(f"livetrace: {msg}", file=err, flush=True)


# Past the session's own stop timeout (and a pprof window), a stop that has
# not ended the command is stuck on our side: output nobody reads, say.
STOP_GRACE_MARGIN = 5.0


async def stop_on_signals(session: Session, abort: trio.CancelScope, err: TextIO) -> None:
    """First Ctrl-C (or SIGTERM): ask the helper to stop (a pprof session:
    at the end of its window), so the trace still ends complete. Second, or
    the stop not done within its grace: give up at once."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        await signals.__anext__()
        grace = session.limits.stop_timeout + STOP_GRACE_MARGIN
        if is_pprof(session.info):
            grace += window_seconds(session.info)
            say(
                err,
                f"stopping at the end of the current pprof window (at most {window_seconds(session.info):g} s; "
                "Ctrl-C again to abort, which leaves that window incomplete)",
            )
        else:
            say(err, "stopping; the tracer is flushing its last data (Ctrl-C again to abort)")
        await session.stop()
        with trio.move_on_after(grace) as waited:
            await signals.__anext__()
            say(err, "aborted")
        if waited.cancelled_caught:
            say(err, f"still not done {grace:g} s after the stop (is the output blocked?): aborting")
        abort.cancel()


async def until_done(
    session: Session, err: TextIO, work: Callable[[], Awaitable[T]], *helpers: Callable[[], Awaitable[None]]
) -> T | None:
    """Run work with Ctrl-C handling (and helpers such as a progress line)
    beside it; None if a second Ctrl-C aborted it."""
    result = None
    async with open_nursery() as nursery:
        abort = trio.CancelScope()
        nursery.start_soon(stop_on_signals, session, abort, err)
        for helper in helpers:
            nursery.start_soon(helper)
        with abort:
            result = await work()
        nursery.cancel_scope.cancel()
    return result


def silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush of a broken
    pipe does not complain."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def about(info: SessionInfo) -> str:
    """The traced process as the helper names it (escaped: its words); the
    caller closes the parenthesis. A pprof session knows no pid: it names
    the endpoint and the trace format's Go version instead."""
    if is_pprof(info):
        exe = peer.shown(info.executable) or "the service"
        return f"{exe} (through {peer.shown(str(info.extra.get('url', '')))}, trace format {info.go_version}"
    return f"{peer.shown(info.executable)} (pid {info.pid}, {peer.shown(info.go_version)}"


def platform(info: SessionInfo) -> str:
    """The platform after a space (" linux/amd64"); "" when the source does not say (pprof)."""
    if not info.goos and not info.goarch:
        return ""
    return f" {peer.shown(info.goos)}/{peer.shown(info.goarch)}"


def is_pprof(info: SessionInfo) -> bool:
    """Whether the session reads /debug/pprof/trace windows (no helper)."""
    return info.window_ms > 0


def window_seconds(info: SessionInfo) -> float:
    """A pprof session's window, in seconds."""
    return info.window_ms / 1000


def window_option(text: str) -> float:
    v = float(text)
    if not v >= MIN_WINDOW:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_WINDOW:g} s")
    return v


def duration_option(text: str) -> float:
    v = float(text)
    if v <= 0:
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return v


def segment_option(text: str) -> float:
    v = float(text)
    if v < 1:
        raise argparse.ArgumentTypeError("must be at least 1 second: each restart stops the world twice")
    return v


def segment_or_zero_option(text: str) -> float:
    return 0.0 if float(text) == 0 else segment_option(text)


def seconds_or_zero_option(text: str) -> float:
    v = float(text)
    if not v >= 0:
        raise argparse.ArgumentTypeError("must be a number of seconds, 0 or more")
    return v


def megabytes_option(text: str) -> int:
    v = float(text)
    if not v >= 1:
        raise argparse.ArgumentTypeError("must be at least 1 (MiB)")
    return int(v * (1 << 20))


def session_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "address",
        metavar="ADDRESS",
        help="the service: where its livetrace helper listens (unix:/path, tcp:HOST:PORT, tls:HOST:PORT, "
        "HOST:PORT), the http://HOST:PORT of its net/http/pprof (no helper needed), or the process itself: "
        "pid:N, or NAME, an executable's name that matches exactly one process (see livetrace ps)",
    )
    p.add_argument(
        "-d", "--duration", type=duration_option, metavar="SECONDS", help="stop after this long (default: until Ctrl-C)"
    )
    p.add_argument("--token", help="the service's LIVETRACE_TOKEN (default: $LIVETRACE_TOKEN)")
    p.add_argument(
        "--idle-timeout",
        type=seconds_or_zero_option,
        default=IDLE_TIMEOUT,
        metavar="SECONDS",
        help=f"give up on a helper that sends nothing, not even a heartbeat, for this long (default "
        f"{IDLE_TIMEOUT:g}; 0 waits forever); what arrived is kept",
    )
    p.add_argument(
        "--stop-timeout",
        type=duration_option,
        default=STOP_TIMEOUT,
        metavar="SECONDS",
        help=f"give up on a helper that has not ended the session this long after the stop or the "
        f"end of --duration, counting only time spent waiting on it (default {STOP_TIMEOUT:g})",
    )
    p.add_argument(
        "--allow-uid",
        type=int,
        action="append",
        default=[],
        metavar="UID",
        help="also accept a unix socket served by this user (by default only by you or root: the "
        "token goes to whoever serves the socket)",
    )
    p.add_argument(
        "--tls-ca",
        type=Path,
        metavar="FILE",
        help="tls: addresses: verify the helper's certificate against this CA or self-signed "
        "certificate (PEM) instead of the system's CAs",
    )
    p.add_argument(
        "--tls-pin",
        metavar="sha256:HEX",
        help="tls: addresses: accept only the certificate with this SHA-256 fingerprint",
    )


def connect_options(args: argparse.Namespace) -> dict[str, Any]:
    opts: dict[str, Any] = {
        "idle_timeout": args.idle_timeout or None,
        "stop_timeout": args.stop_timeout,
        "allow_uid": args.allow_uid,
        "tls_ca": args.tls_ca,
        "tls_pin": args.tls_pin,
    }
    if getattr(args, "max_generation_mb", None):
        opts["max_generation_bytes"] = args.max_generation_mb
    return opts


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
        how = " in /debug/pprof/trace windows" if is_pprof(session.info) else ""
        span = f"for {duration:g} s" if duration else "until Ctrl-C"
        say(err, f"{doing} {about(session.info)}){how} {span}" + (f": {what}" if what else ""))
        done = await until_done(session, err, lambda: collect(session))
        end = session.end
        if end is not None:
            say(err, f"session ended: {peer.shown(end.reason)}")
        return done is not None and end is not None
