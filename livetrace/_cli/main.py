"""The ``livetrace`` command: parse the command line (parser.py), then
import and run the one command asked for.

A command's module is imported only when it runs, so that ``--help`` and
``decode`` of a file start without trio, httpx, psutil or the decoders they
do not use (tests/test_startup.py checks what each path imports)."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable
from typing import TextIO, cast

from livetrace._cli.exits import EXIT_ERROR, EXIT_INCOMPLETE, EXIT_OK, say, silence_stdout
from livetrace._cli.options import connect_options
from livetrace._cli.output import TerminalWriter, WholeWriter
from livetrace._cli.parser import build_parser
from livetrace._errors import LivetraceError, TraceFormatError
from livetrace._host import arrow_from_malloc, keep_freed_memory, one_blas_thread


def whole_stdout(terminal_safe: bool = False) -> TextIO:
    """Standard output as a stream whose writes are never cut short, nor
    refused by a pipe a parent made non-blocking (see ``WholeWriter``);
    with ``terminal_safe``, one that escapes controls when it is a terminal
    (``TerminalWriter``)."""
    try:
        sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file: a StringIO in a test, say
        return sys.stdout
    writer = TerminalWriter if terminal_safe and sys.stdout.isatty() else WholeWriter
    return cast(TextIO, writer(sys.stdout))


def _record(args: argparse.Namespace, err: TextIO) -> int:
    import trio

    from livetrace._cli.record import record_command

    progress = err.isatty() if args.progress is None else args.progress
    if args.segment and str(args.output) == "-":
        say(err, "error: --segment writes one file per segment: give -o a file name, not -")
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
            window=args.window,
            **connect_options(args),
        )
    )
    return code


def _ps(args: argparse.Namespace, err: TextIO) -> int:
    import trio

    from livetrace._cli.ps import ps_command

    return trio.run(lambda: ps_command(args.targets, fmt=args.format, show_all=args.all, out=whole_stdout(), err=err))


def _demo(args: argparse.Namespace, err: TextIO) -> int:
    import trio

    from livetrace._cli.demo import demo_command

    return trio.run(demo_command, args, whole_stdout(), err)


def _tail(args: argparse.Namespace, err: TextIO) -> int:
    import trio

    from livetrace._cli.filters import build_filter
    from livetrace._cli.render.color import use_color
    from livetrace._cli.tail import tail_command

    return trio.run(
        lambda: tail_command(
            args.address,
            duration=args.duration,
            fmt=args.format,
            token=args.token,
            out=sys.stdout,
            err=err,
            limit=args.limit,
            flt=build_filter(args, spans=args.spans or args.min_duration is not None),
            spans=args.spans or args.min_duration is not None,
            color=use_color(args.color, sys.stdout),
            period=args.period,
            segment=args.segment,
            window=args.window,
            **connect_options(args),
        )
    )


def _flight(args: argparse.Namespace, err: TextIO) -> int:
    import trio

    from livetrace._cli.flight import flight_command

    return trio.run(lambda: flight_command(args, err, **connect_options(args)))


def _profile(args: argparse.Namespace, err: TextIO) -> int:
    from livetrace._cli.profile import profile_command

    return profile_command(args, err, **connect_options(args))


def _export(args: argparse.Namespace, err: TextIO) -> int:
    if args.to == "parquet":
        from livetrace._cli.export_parquet import export_parquet_command

        return export_parquet_command(args, err, **connect_options(args))
    if args.service or args.record or args.segment:
        say(err, "error: --service, --record and --segment are --to parquet's")
        return EXIT_ERROR
    from livetrace._cli.export import export_command

    return export_command(args, err, **connect_options(args))


def _sql(args: argparse.Namespace, err: TextIO) -> int:
    from livetrace._cli.sql import sql_command

    return sql_command(args, whole_stdout(terminal_safe=True), err, **connect_options(args))


def _top(args: argparse.Namespace, err: TextIO) -> int:
    from livetrace._cli.top import top_command

    return top_command(args, err, **connect_options(args))


def _agent(args: argparse.Namespace, err: TextIO) -> int:
    from livetrace._cli.agent import agent_command

    return agent_command(args, sys.stdout, err)


def _decode(args: argparse.Namespace, err: TextIO) -> int:
    from livetrace._cli.decode import dump_legacy, dump_parsed, dump_wire
    from livetrace._cli.sources import open_input

    out = whole_stdout(terminal_safe=True)
    with open_input(args.file) as stream:
        if args.dump == "parsed":
            dump_parsed(stream, out, args.binary, args.jobs)
        else:
            {"wire": dump_wire, "legacy": dump_legacy}[args.dump](stream, out)
    return EXIT_OK


# Each command, run: each imports its own module (and trio, if it is live)
# only here, when it is the one asked for.
COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
    "record": _record,
    "decode": _decode,
    "tail": _tail,
    "ps": _ps,
    "flight": _flight,
    "profile": _profile,
    "export": _export,
    "top": _top,
    "sql": _sql,
    "demo": _demo,
    "agent": _agent,
}


# Allocations between two passes over the youngest generation (Python's default: 700).
GC_YOUNGEST = 50_000


def _quiet_collector() -> None:
    """The cyclic collector set for a long stream of batches: the modules'
    objects are frozen out of its passes, and a youngest generation of
    many allocations (a batch makes thousands of short-lived objects, and
    each pass with the default 700 walks them all) is collected seldom; the
    cycles it frees are few and small here."""
    gc.freeze()
    gc.set_threshold(GC_YOUNGEST, *gc.get_threshold()[1:])


# Commands that run for weeks within a memory budget they check by their own RSS: what they free
# goes back to the system, so that the RSS they see comes down after a peak.
GIVES_MEMORY_BACK = frozenset({"agent"})


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _quiet_collector()
    arrow_from_malloc()
    one_blas_thread()
    if args.command not in GIVES_MEMORY_BACK:
        keep_freed_memory()
    err = sys.stderr
    try:
        return COMMANDS[args.command](args, err)
    except TraceFormatError as e:
        sys.stdout.flush()
        say(err, f"error: {e}")
        return EXIT_INCOMPLETE
    except BrokenPipeError:
        silence_stdout()
        return EXIT_OK
    except OSError as e:
        say(err, f"error: {e}")
    except ValueError as e:
        say(err, f"error: {e}")
    except LivetraceError as e:
        say(err, f"error: {e}")
    except KeyboardInterrupt:
        say(err, "interrupted")
        return 130
    return EXIT_ERROR
