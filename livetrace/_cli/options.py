"""The options' types and the options every live command shares: argparse
and constants only, so that building the parser imports no command."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from livetrace._session.defaults import (
    GENERATION_BYTES,
    GENERATION_BYTES_RANGE,
    IDLE_TIMEOUT,
    MAX_DEFAULT_PIPELINE_BYTES,
    MIN_ADVANCE,
    MIN_WINDOW,
    PIPELINE_BYTES_PER_JOB,
    PIPELINE_MEMORY_SHARE,
    STOP_TIMEOUT,
)


def _finite(text: str, unit: str, example: str) -> float:
    """A finite number an option takes, or an error that shows one."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of {unit}, such as {example}")
    return value


def seconds_value(text: str) -> float:
    """A number of seconds, as the options take it."""
    return _finite(text, "seconds", "5 or 0.5")


def period_option(text: str) -> float:
    """A --period: 0 (the runtime's own, about a second) or 0.1 to 1 seconds."""
    value = seconds_value(text)
    if value != 0 and not MIN_ADVANCE <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} s: the period is {MIN_ADVANCE} to 1 s, or 0 for the runtime's own")
    return value


def generation_mb_option(text: str) -> int:
    """A --generation-mb: 0 (no limit) or 1 to 1024 MiB, in bytes."""
    value = _finite(text, "MiB", "8 or 0")
    lo, hi = GENERATION_BYTES_RANGE
    size = int(value * (1 << 20))
    if value != 0 and not lo <= size <= hi:
        raise argparse.ArgumentTypeError(
            f"{text} MiB: a generation's size is {lo >> 20} to {hi >> 20} MiB, or 0 for no limit"
        )
    return size


def window_option(text: str) -> float:
    v = seconds_value(text)
    if not v >= MIN_WINDOW:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_WINDOW:g} s")
    return v


def duration_option(text: str) -> float:
    v = seconds_value(text)
    if v <= 0:
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return v


def segment_option(text: str) -> float:
    v = seconds_value(text)
    if v < 1:
        raise argparse.ArgumentTypeError("must be at least 1 second: each restart stops the world twice")
    return v


def segment_or_zero_option(text: str) -> float:
    return 0.0 if seconds_value(text) == 0 else segment_option(text)


def seconds_or_zero_option(text: str) -> float:
    v = seconds_value(text)
    if not v >= 0:
        raise argparse.ArgumentTypeError("must be a number of seconds, 0 or more")
    return v


def jobs_option(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of threads, such as 4") from None
    if v < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return v


def add_jobs_option(p: argparse.ArgumentParser, default: int | None = None, why: str = "") -> None:
    """--jobs, for a command whose session's pipeline does the work (connect's ``jobs``);
    ``default`` (and ``why``) where the command's own differs from the cores less one."""
    p.add_argument(
        "-j",
        "--jobs",
        type=jobs_option,
        metavar="N",
        default=default,
        help="order (Go 1.22+), select, build spans and write lines in N threads besides the decoder's, "
        "several generations (legacy segments, pprof windows) at once (default: "
        + (f"{default}{why}" if default else "the cores this process may use, less one")
        + "; 1: all in the decoder's thread); the output is the same for any N. "
        "Provisional events (a legacy trace with --segment 0) are written by one thread",
    )
    p.add_argument(
        "--max-pipeline-mb",
        type=megabytes_option,
        metavar="MB",
        help=f"the most the generations in those threads' hands may hold at once, in MiB of decoded "
        f"events (default {PIPELINE_BYTES_PER_JOB >> 20} a job, at most {MAX_DEFAULT_PIPELINE_BYTES >> 20} and "
        f"1/{PIPELINE_MEMORY_SHARE} of the memory this process may use); past it fewer run side by side, and "
        "one alone may hold more",
    )
    p.add_argument(
        "--generation-mb",
        type=generation_mb_option,
        default=GENERATION_BYTES,
        metavar="MB",
        help=f"have the helper close a generation once it holds this much trace, 1 to 1024 (default "
        f"{GENERATION_BYTES >> 20}; 0: only by time): a busy service's generations are then decoded soon "
        "after they end, and several side by side (Go 1.22+ with a helper)",
    )


def megabytes_option(text: str) -> int:
    v = _finite(text, "MiB", "64 or 0.5")
    if not v >= 1:
        raise argparse.ArgumentTypeError("must be at least 1 (MiB)")
    return int(v * (1 << 20))


def session_arguments(
    p: argparse.ArgumentParser, *, files: bool = False, sources: bool = False, no_sources: bool = False
) -> None:
    """``files``: the command also reads a trace file (SOURCE) instead of a
    live service; ``sources``: one or more of either (``args.sources``),
    or none at all with ``no_sources`` (an option names the data instead)."""
    service = (
        "where its livetrace helper listens (unix:/path, tcp:HOST:PORT, tls:HOST:PORT, HOST:PORT), the "
        "http://HOST:PORT of its net/http/pprof (no helper needed), or the process itself: pid:N, or NAME, an "
        "executable's name that matches exactly one process (see livetrace ps)"
    )
    if sources:
        p.add_argument(
            "sources",
            nargs="*" if no_sources else "+",
            metavar="SOURCE",
            help=f"a trace file, a directory of them, a glob (quoted), or a live service: {service}",
        )
    else:
        p.add_argument(
            "address",
            metavar="SOURCE" if files else "ADDRESS",
            help=f"a trace file (- for standard input), or a live service: {service}"
            if files
            else f"the service: {service}",
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
    if getattr(args, "jobs", None):
        opts["jobs"] = args.jobs
    if getattr(args, "max_pipeline_mb", None):
        opts["max_pipeline_bytes"] = args.max_pipeline_mb
    if hasattr(args, "generation_mb"):
        opts["generation_bytes"] = args.generation_mb or None
    return opts
