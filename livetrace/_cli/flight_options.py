"""``livetrace flight``'s options and help: argparse only, so that the
parser is built without importing the flight recorder."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from livetrace._cli.options import add_jobs_option, seconds_value, session_arguments, window_option

# An http:// address's /debug/pprof/trace windows: the ring keeps whole
# windows, so a capture's tail ends at most this long after --after.
FLIGHT_WINDOW = 2.0

FLIGHT_EXAMPLES = """\
examples:
  livetrace flight unix:/run/svc.sock --keep 30s --trigger 'gc>50ms' -o captures/
        a GC cycle over 50 ms: write the last 30 s and the next 5 s to captures/
  livetrace flight unix:/run/svc.sock --keep 1m --trigger 'region:checkout>200ms' --trigger 'stw>10ms' -o captures/
  livetrace flight tcp:127.0.0.1:7070 --keep 20s --trigger 'blocked[chan]>1s' --after 2s --max-files 10 -o captures/
  livetrace flight unix:/run/svc.sock --keep 30s --trigger 'log~"timeout|deadline"' --trigger 'rss>2GiB' -o captures/
  livetrace flight http://127.0.0.1:6060 --keep 20s --trigger 'gc>20ms' -o captures/
        a service with net/http/pprof only: 2 s /debug/pprof/trace windows back to back

triggers (combine several; any one fires):
  gc>D  stw>D  runnable>D  syscall>D  mark-assist>D     a span of that kind longer than D
  blocked>D  blocked[REASON]>D     a goroutine blocked longer than D, on chan, select, mutex, sync,
                                   cond, net, sleep, or a reason in quotes: blocked["chan receive"]>1s
  region:NAME>D  task:NAME>D       a user region or task of that type (a glob) longer than D
  log~"PATTERN"                    a log message (runtime/trace.Log) matching a regular expression
  rss>SIZE                         the process's resident memory above SIZE (local processes; for a
                                   remote one, the heap in use the trace reports)
  D: 50ms, 1.5s, 2m, 800us; SIZE: 2GiB, 512MiB, 100MB.

Each capture is DIR/<UTC time>-<trigger>.trace (Go 1.21 and older, and http:// addresses: one file
per kept segment or window, .2.trace, .3.trace, ...) that go tool trace opens, and a .json beside
it: the trigger, when it fired, the goroutine, the span and its stacks, the file's time range.
Ctrl-C or SIGTERM stops: a capture waiting for its tail is written at once with the tail it has
(an http:// address's window in progress ends first); nothing partial is left.
The recorder re-attaches, with backoff, when the service restarts or the connection drops.
docs/flight.md explains the memory bounds and the JSON fields."""


def _seconds(text: str) -> float:
    from livetrace._flight.triggers import parse_duration  # when given: the trigger language stays out of --help

    try:
        return parse_duration(text if not text.replace(".", "", 1).isdigit() else text + "s") / 1e9
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _size(text: str) -> int:
    from livetrace._flight.triggers import parse_size  # when given, as parse_duration above

    try:
        return parse_size(text if not text.replace(".", "", 1).isdigit() else text + "MiB")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return v


def add_flight_parser(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser(
        "flight",
        help="keep the last seconds of a live trace in memory and write them when a trigger fires",
        description="A flight recorder outside the process: attach to a running Go service, keep the last "
        "--keep of its execution trace in memory (whole generations on Go 1.22+, whole segments on "
        "older Go, whole /debug/pprof/trace windows for an http:// address), and each time a trigger "
        "fires, wait --after and write the kept window and that tail "
        "as a trace go tool trace opens, with a JSON file beside it saying why. Runs until stopped.",
        epilog=FLIGHT_EXAMPLES,
        formatter_class=formatter,
    )
    session_arguments(p)
    add_jobs_option(p)
    p.add_argument(
        "-t",
        "--trigger",
        action="append",
        required=True,
        metavar="EXPR",
        help="when to write a capture (repeatable; see the table below)",
    )
    p.add_argument(
        "-o", "--output", type=Path, required=True, metavar="DIR", help="directory for the captures (made if missing)"
    )
    p.add_argument(
        "--keep", type=_seconds, default=30.0, metavar="TIME", help="how much of the trace to keep (default 30s)"
    )
    p.add_argument(
        "--after", type=_seconds, default=5.0, metavar="TIME", help="the tail written after a trigger (default 5s)"
    )
    p.add_argument(
        "--cooldown",
        type=_seconds,
        default=10.0,
        metavar="TIME",
        help="after a capture starts, ignore triggers this long (those while it is pending join it) (default 10s)",
    )
    p.add_argument(
        "--max-files",
        type=_positive_int,
        metavar="N",
        help="keep only the newest N captures in DIR, removing older ones (default: no limit)",
    )
    p.add_argument(
        "--max-memory",
        type=_size,
        default=256 << 20,
        metavar="SIZE",
        help="the most trace the recorder holds; the oldest generations go first (default 256MiB)",
    )
    p.add_argument(
        "--segment",
        type=seconds_value,
        default=2.0,
        metavar="SECONDS",
        help="Go 1.21 and older: restart the trace this often (default 2, at least 1); a capture holds whole "
        "segments, and triggers fire when a segment completes",
    )
    p.add_argument(
        "--window",
        type=window_option,
        metavar="SECONDS",
        help=f"http:// addresses (net/http/pprof) only: ask /debug/pprof/trace for windows of SECONDS back to "
        f"back (default {FLIGHT_WINDOW:g}); a capture holds whole windows, one file each, and nothing is traced "
        "between two windows",
    )
    p.add_argument(
        "--status",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="one status line (default: when stderr is a terminal); without it, plain log lines",
    )
