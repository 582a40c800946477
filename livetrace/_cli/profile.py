"""``livetrace profile``: Go's pprof-like trace profiles, of a file or live.

The live half's modules (trio, the session) are imported only by it: a
file's profile starts sooner without them."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from livetrace._cli.exits import EXIT_INCOMPLETE, EXIT_OK, say
from livetrace._cli.sources import is_file_source, read_whole_generations
from livetrace._outfile import check_output, write_output
from livetrace._plural import plural
from livetrace._trace.spans.builder import SpanBuilder
from livetrace._trace.spans.model import Follow
from livetrace._views.pprof import ProfileBuilder, Record
from livetrace._views.pprof_file import encode_profile

if TYPE_CHECKING:
    from livetrace._session.session import Session


def file_profile(source: str, kind: str, err: TextIO) -> tuple[list[Record], bool]:
    """The profile of a trace file, and whether it could be read whole (of
    one read in part: of its whole generations, as go tool trace's)."""
    builder, spans = ProfileBuilder(kind), SpanBuilder(follow=Follow.GOROUTINES)
    complete = read_whole_generations(
        source,
        lambda batch: builder.feed(spans.feed(batch)),
        lambda: builder.feed(spans.close()),  # one trace of a stream ended: its open spans end there
        err,
        "the profile is of the generations before it, as Go's is",
    )
    builder.feed(spans.close())
    return builder.records(), complete


async def _collect(session: Session, builder: ProfileBuilder) -> bool:
    """Feed the session's spans to the builder until it ends (True)."""
    from livetrace._items import SegmentGap, WindowGap
    from livetrace._trace.spans.batch import SpanBatch
    from livetrace._trace.spans.model import Follow

    # A profile reads the goroutines' states alone: no P's spans, no logs.
    async with session.subscribe(what="spans", lossless=True, buffer=4, follow=Follow.GOROUTINES) as spans:
        async for item in spans:
            if isinstance(item, SpanBatch):
                builder.feed(item)
            elif isinstance(item, SegmentGap | WindowGap):  # one trace ended; the next is its own
                builder.end_trace()
    return True


async def live_profile(
    address: str, kind: str, duration: float | None, token: str | None, err: TextIO, **limits: Any
) -> tuple[list[Record], bool]:
    """The profile of a live service's trace, and whether the session
    ended as it should (not aborted, nor cut off)."""
    from livetrace._cli.common import live_pass
    from livetrace._cli.parser import WHAT

    builder = ProfileBuilder(kind)

    async def collect(session: Session) -> bool:
        return await _collect(session, builder)

    complete = await live_pass(address, duration, token, err, "profiling", collect, WHAT[kind], **limits)
    return builder.records(), complete


def profile_command(args: argparse.Namespace, err: TextIO, **limits: Any) -> int:
    check_output(args.output)
    if is_file_source(args.address):
        if args.duration:
            say(err, "note: --duration applies to a live service, not to a file")
        records, complete = file_profile(args.address, args.kind, err)
    else:
        import trio

        records, complete = trio.run(
            lambda: live_profile(args.address, args.kind, args.duration, args.token, err, **limits)
        )
    write_output(args.output, [encode_profile(records)])
    total = sum(r.ns for r in records)
    count = sum(r.count for r in records)
    where = "standard output" if str(args.output) == "-" else str(args.output)
    say(
        err,
        f"wrote {where}: {plural(len(records), 'stack')}, {plural(count, 'interval')}, "
        f"{total / 1e6:,.3f} ms ({args.kind})",
    )
    return EXIT_OK if complete else EXIT_INCOMPLETE
