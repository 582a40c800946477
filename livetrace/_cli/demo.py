"""``livetrace demo``: build the bundled Go service, record it, tail it."""

from __future__ import annotations

import argparse
from collections import Counter
from typing import TextIO

import trio

from livetrace._cli.common import EXIT_OK, say
from livetrace._cli.record import record_command
from livetrace._cli.render.jsonl import text_line
from livetrace._cli.top import top_once
from livetrace._go.demo import run_demo
from livetrace._go.toolchain import build_demo, find_go, go_version
from livetrace._items import Gap, SegmentGap
from livetrace._plural import plural
from livetrace._session.connect import connect
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import KIND_NAMES, Kind


async def demo_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    go = find_go(args.go)
    version = go_version(go)
    say(err, f"building the demo service with {version} ({go})")
    exe = await trio.to_thread.run_sync(build_demo, go)
    async with run_demo(exe, args=["-workers", str(args.workers)]) as demo:
        say(
            err,
            f"started livetrace-demo (pid {demo.pid}, {demo.go_version}): HTTP at {demo.http}, "
            f"traces at {demo.trace_address}",
        )
        code, rec = await record_command(
            demo.trace_address, args.output, duration=args.seconds, token=None, progress=err.isatty(), err=err
        )
        if code == EXIT_OK and args.tail > 0:
            say(err, f"tailing its events live for {args.tail:g} s: user tasks and logs are shown, the rest counted")
            await demo_tail(demo.trace_address, args.tail, out)
            say(err, f"and what `livetrace top {demo.trace_address}` shows of one second:")
            await top_once(demo.trace_address, 1.0, out, err)
    if rec.complete and rec.paths:
        say(err, f"open the recording with: {go} tool trace {rec.paths[0]}")
    return code


async def demo_tail(address: str, seconds: float, out: TextIO) -> None:
    shown_per_generation = 6
    # A demo built with Go 1.21 or older comes in 1 s segments (newer Go ignores the request).
    async with connect(address, duration=seconds, advance=0.5, segment=1.0) as session:
        t0: int | None = None
        gen, counts, shown = None, Counter[int](), 0

        def summary() -> None:
            if counts:
                top = ", ".join(f"{KIND_NAMES[k]} {n:,}" for k, n in counts.most_common(4))
                print(f"  ... {plural(counts.total(), 'event')} in this generation: {top}", file=out, flush=True)

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
