"""``livetrace top``'s options and help: argparse only, so that the parser
is built without importing rich or the session layer."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from livetrace._cli.options import add_jobs_option, seconds_value, session_arguments

# The goroutine table's sortable columns (top_screen.SORT_KEYS binds each to a key).
SORT_COLUMNS = ("blocked", "goroutines", "runnable", "running", "syscall")

TOP_EXAMPLES = """\
examples:
  livetrace top unix:/run/svc.sock                      redraw every generation; keys below
  livetrace top pid:4242                                 a process, by its helper or its pprof
  livetrace top http://127.0.0.1:6060 --once             one snapshot of one second, as text
  livetrace top svc --format json --duration 60 > top.jsonl

keys: r running, b blocked, s syscall, w runnable, n goroutines (sort); p pause; q quit"""


def add_top_parser(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser(
        "top",
        help="a live view of where a service's time goes: GC, scheduler latency, goroutines, regions",
        description="Attach to a running Go service and show, refreshed every generation (a legacy "
        "trace's segment, a pprof window), what happened since the last refresh: GC cycles and "
        "stop-the-world pauses, scheduler latency, goroutines by state, the goroutines (grouped by "
        "their start function) that ran, waited, blocked (and on what) or sat in system calls the "
        "most, the slowest user regions and tasks, the heap and GOMAXPROCS, and whether anything "
        "was shed. In a terminal the screen redraws in place; on a pipe, or with --once, it prints "
        "plain text snapshots (or JSON lines with --format json). Times are those of the spans that "
        "ended in the interval, counted from its start. docs/views.md says more.",
        epilog=TOP_EXAMPLES,
        formatter_class=formatter,
    )
    session_arguments(p)
    # More jobs build each generation's spans in the pool, whole generations at a time: on 16 cores,
    # against a service writing 13M events/s, --jobs 7 kept top to one core all the same (the
    # decoder's ordering, and the GIL) and held 3.4 GiB, against 0.4 GiB with one job
    # (docs/decoder.md, "On 16 cores").
    add_jobs_option(
        p, default=1, why=", as more have not made top faster on 16 cores and hold whole generations in memory"
    )
    p.add_argument(
        "--once",
        action="store_true",
        help="trace for --interval seconds (or --duration), stop, print one snapshot of it and exit",
    )
    p.add_argument(
        "--interval",
        type=_interval,
        default=1.0,
        metavar="SECONDS",
        help="refresh at most this often, at the end of a generation, segment or window (default 1)",
    )
    p.add_argument("--format", choices=["text", "json"], default="text", help="snapshot format (default: text)")
    p.add_argument("--sort", choices=SORT_COLUMNS, default="running", help="goroutine groups' order (default: running)")
    p.add_argument("--rows", type=int, default=12, metavar="N", help="rows per table (default 12)")
    p.add_argument(
        "--record", type=Path, metavar="FILE", help="also write the trace top saw to FILE (as `livetrace record`)"
    )


def _interval(text: str) -> float:
    v = seconds_value(text)
    if not 0.1 <= v <= 60:
        raise argparse.ArgumentTypeError("must be from 0.1 to 60 seconds")
    return v
