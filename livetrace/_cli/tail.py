"""``livetrace tail``: a session's events as text or JSON lines, live."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from typing import Any, TextIO

import trio

from livetrace._cli.common import EXIT_INCOMPLETE, EXIT_OK, about, say, silence_stdout, until_done
from livetrace._cli.output import widen_pipe, write_bytes
from livetrace._cli.render.jsonl import JsonlEncoder, provisional_dict, text_line, utf8
from livetrace._errors import TraceFormatError
from livetrace._notice import Notice
from livetrace._protocol import text as peer
from livetrace._session.session import Session, connect
from livetrace._trace.legacy.live import Provisional, SymbolsResolved
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import KIND_NAMES, Event, Kind
from livetrace._trace.version import TraceVersion


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
    widen_pipe(out)
    async with connect(
        address, token=token, duration=duration, advance=period or None, segment=segment or None, **limits
    ) as session:
        info = session.info
        if info.segment_ms:
            how = (
                f"a legacy trace, restarted every {info.segment_ms / 1000:g} s: each segment's events are "
                f"printed, exact and with stacks, once it completes"
            )
        elif is_legacy_go(info.go_version):
            how = (
                "a legacy trace without segments: events are printed provisionally (marked ~, times "
                "estimated, stacks as ids) as the runtime's buffers fill, and stacks resolve when it stops"
            )
        else:
            every = f"{info.advance_ms / 1000:g} s" if info.advance_ms else "about a second"
            how = f"events arrive a generation ({every}) at a time"
        say(err, f"tailing {about(info)}); {how}" + ("" if duration else "; Ctrl-C stops"))
        shown, pipe_closed = await until_done(session, err, partial(print_events, session, fmt, out, limit, kinds)) or (
            0,
            False,
        )
        if pipe_closed:
            silence_stdout()
            return EXIT_OK
        end = session.end
        if end is None:
            return EXIT_INCOMPLETE
        say(
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
                if is_legacy_go(info.go_version)
                else f"; largest generation {session.counters.largest_generation / 1e6:.1f} MB"
            ),
        )
        return EXIT_OK


def is_legacy_go(version: str) -> bool:
    """Whether the runtime that says it is ``version`` writes a legacy trace
    (one we cannot name, such as a development build's, is taken for new)."""
    try:
        return TraceVersion.of_runtime(version).is_legacy
    except (ValueError, TraceFormatError):
        return False


async def print_events(
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
                dicts = (provisional_dict(e) for e in batch)  # type: ignore[arg-type]  # a Provisional's batch holds Events only
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
            await trio.to_thread.run_sync(write_bytes, out, pieces, abandon_on_cancel=True)
        except BrokenPipeError:  # `| head` and the like: the reader has seen enough
            return shown, True
        shown += sum(isinstance(e, Event) for e in batch) if not isinstance(batch, EventBatch) else len(batch)
        if limit is not None and shown >= limit:
            await session.stop()
    return shown, False
