"""``livetrace export``: a trace file or a live session as a Perfetto
timeline (docs/views.md, Perfetto)."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

import trio

from livetrace._cli.common import EXIT_INCOMPLETE, EXIT_OK, live_pass, say
from livetrace._cli.sources import is_file_source, read_whole_generations
from livetrace._errors import LivetraceError
from livetrace._nursery import open_nursery
from livetrace._outfile import check_output, write_output
from livetrace._plural import plural
from livetrace._session.session import Session
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.builder import SpanBuilder
from livetrace._views.perfetto import TIMELINE_FOLLOWS, Timeline, TimelineCollector


def file_timeline(source: str, err: TextIO) -> tuple[Timeline, bool]:
    """The timeline of a trace file, and whether it could be read whole (of
    one read in part: of its whole generations, as profile's)."""
    collector, spans = TimelineCollector(), SpanBuilder(follow=TIMELINE_FOLLOWS)

    def feed(batch: EventBatch) -> None:
        collector.feed_events(batch)
        collector.feed_spans(spans.feed(batch))

    # At the end of one trace of a stream, its open spans end there.
    complete = read_whole_generations(
        source, feed, lambda: collector.feed_spans(spans.close()), err, "the timeline is of the generations before it"
    )
    collector.feed_spans(spans.close())
    return collector.timeline(), complete


async def _collect(session: Session, collector: TimelineCollector) -> bool:
    """The session's spans and its events, each from its own subscriber
    (the layout sorts them out at the end), until it ends (True)."""

    async def spans() -> None:
        try:
            async with session.subscribe(what="spans", lossless=True, buffer=4, follow=TIMELINE_FOLLOWS) as sub:
                async for item in sub:
                    if isinstance(item, SpanBatch):
                        collector.feed_spans(item)
        except LivetraceError:
            return  # the session's error ends every subscriber: the events' one raises it, once

    async def events() -> None:
        async with session.subscribe(what="batches", lossless=True, buffer=4) as sub:
            async for item in sub:
                if isinstance(item, EventBatch):
                    collector.feed_events(item)

    async with open_nursery() as nursery:  # its lone error as itself: one line, not a group
        nursery.start_soon(spans)
        nursery.start_soon(events)
    return True


async def live_timeline(
    address: str, duration: float | None, token: str | None, err: TextIO, **limits: Any
) -> tuple[Timeline, bool]:
    collector = TimelineCollector()

    async def collect(session: Session) -> bool:
        return await _collect(session, collector)

    complete = await live_pass(address, duration, token, err, "exporting", collect, **limits)
    return collector.timeline(), complete


def export_command(args: argparse.Namespace, err: TextIO, **limits: Any) -> int:
    from livetrace._views.perfetto_file import encode_timeline  # needs the perfetto package

    check_output(args.output)
    if is_file_source(args.address):
        if args.duration:
            say(err, "note: --duration applies to a live service, not to a file")
        timeline, complete = file_timeline(args.address, err)
    else:
        timeline, complete = trio.run(lambda: live_timeline(args.address, args.duration, args.token, err, **limits))
    size = write_output(args.output, encode_timeline(timeline))
    slices = sum(map(len, timeline.tracks))
    where = "standard output" if str(args.output) == "-" else str(args.output)
    say(
        err,
        f"wrote {where}: {plural(len(timeline.tracks), 'track')}, {slices:,} slices and instants, "
        f"{plural(size, 'byte')}",
    )
    return EXIT_OK if complete else EXIT_INCOMPLETE
