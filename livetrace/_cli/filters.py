"""`tail`'s filter options, turned into a :class:`Filter` with the API's meaning."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from fnmatch import fnmatchcase

from livetrace._trace.model.events import KIND_NAMES, Kind
from livetrace._trace.select.filter import Filter
from livetrace._trace.spans.model import SPAN_KIND_NAMES, SpanKind

_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s)\s*")


def duration_ns(text: str) -> int:
    """``1ms``, ``500us``, ``2.5s``, ``800ns`` -> nanoseconds."""
    m = _DURATION.fullmatch(text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 1ms, 500us, 2s or 800ns")
    return round(float(m.group(1)) * _UNITS[m.group(2)])


def id_list(text: str) -> list[int]:
    """``3``, ``3,7,12``: ids, for repeatable comma-list options."""
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or a comma list of numbers") from None


def regex(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError(f"bad regular expression {text!r}: {e}") from None


def kind_names(patterns: Sequence[str], names: Sequence[str]) -> set[str] | None:
    """The names the patterns choose: globs, each chooses those it matches,
    a ``!`` glob takes those away (from all of them if no other is given);
    None for no patterns."""
    if not patterns:
        return None
    plus = [p for p in patterns if not p.startswith("!")]
    chosen = {n for n in names if any(fnmatchcase(n, p) for p in plus)} if plus else set(names)
    for p in patterns:
        hit = {n for n in names if fnmatchcase(n, p.removeprefix("!"))}
        if not hit:
            raise ValueError(f"--kind {p}: no kind matches; kinds: {', '.join(names)}")
        if p.startswith("!"):
            chosen -= hit
    return chosen


def build_filter(args: argparse.Namespace, spans: bool) -> Filter | None:
    """The filter the options ask for (None: none asked for). ``spans``:
    --kind names span kinds."""
    kinds: frozenset[Kind] | frozenset[SpanKind] | None = None
    if spans:
        chosen = kind_names(args.kind, SPAN_KIND_NAMES)
        if chosen is not None:
            kinds = frozenset(SpanKind(SPAN_KIND_NAMES.index(n)) for n in chosen)
    else:
        chosen = kind_names(args.kind, KIND_NAMES[1:])
        if chosen is not None:
            kinds = frozenset(Kind(KIND_NAMES.index(n)) for n in chosen)
    flt = Filter(
        kinds=kinds,
        goroutines=frozenset(i for ids in args.goroutine for i in ids) if args.goroutine else None,
        procs=frozenset(i for ids in args.proc for i in ids) if args.proc else None,
        tasks=tuple(args.task) or None,
        regions=tuple(args.region) or None,
        logs=tuple(args.log) or None,
        min_duration=args.min_duration,
        stack=args.grep,
    )
    return None if flt == Filter() else flt


def add_filter_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "filters",
        "Each option narrows what is shown (they combine with AND; repeated values with OR). "
        "They run in the decoding core, as Session.subscribe(filter=...) does.",
    )
    g.add_argument(
        "-k",
        "--kind",
        action="append",
        metavar="GLOB",
        default=[],
        help="show only events of the kinds the glob matches, or, with a leading !, not those "
        f"(repeatable): -k Log -k 'Task*', -k '!StateTransition'; kinds: {', '.join(KIND_NAMES[1:])}; "
        f"with --spans, span kinds: {', '.join(SPAN_KIND_NAMES)}",
    )
    g.add_argument(
        "--goroutine",
        action="append",
        type=id_list,
        metavar="ID[,ID...]",
        default=[],
        help="events on these goroutines",
    )
    g.add_argument("--proc", action="append", type=id_list, metavar="P[,P...]", default=[], help="events on these Ps")
    g.add_argument(
        "--task",
        action="append",
        metavar="GLOB",
        default=[],
        help="events of tasks whose type matches (and their regions and logs)",
    )
    g.add_argument("--region", action="append", metavar="GLOB", default=[], help="region events whose type matches")
    g.add_argument("--log", action="append", metavar="GLOB", default=[], help="log events whose category matches")
    g.add_argument(
        "--grep", type=regex, metavar="REGEX", help="events with a stack frame ('function file:line') the regex finds"
    )
    g.add_argument(
        "--min-duration",
        type=duration_ns,
        metavar="DURATION",
        help="spans at least this long (1ms, 500us, 2s): implies --spans",
    )
    g.add_argument("--spans", action="store_true", help="print spans (intervals with durations) instead of events")
