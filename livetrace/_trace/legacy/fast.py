"""A complete legacy trace, straight to its exact events in the modern
model: through the compiled core where it can (Go 1.11 to 1.21, the traces
the helper's Go can write, and valid), else through the pure-Python
decoder and converter, its twin, which also reports every error."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from livetrace._errors import TraceFormatError
from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.legacy.convert import BLOCK_REASONS, STOP_REASONS, STW_REASONS, legacy_events, legacy_table
from livetrace._trace.legacy.read import LegacyDecoder, add_frames
from livetrace._trace.legacy.trace import LegacyTrace
from livetrace._trace.model.batch import EventBatch, kind_mask
from livetrace._trace.model.events import SYNC_CODE, Kind
from livetrace._trace.model.tables import Tables
from livetrace._trace.spec.legacy import (
    EV_GO_BLOCK,
    EV_GO_BLOCK_COND,
    EV_GO_BLOCK_GC,
    EV_GO_BLOCK_NET,
    EV_GO_BLOCK_RECV,
    EV_GO_BLOCK_SELECT,
    EV_GO_BLOCK_SEND,
    EV_GO_BLOCK_SYNC,
    EV_GO_PREEMPT,
    EV_GO_SCHED,
    EV_GO_SLEEP,
    EV_GO_STOP,
    layout,
)
from livetrace._trace.spec.modern import EV_USER_TASK_END as TASK_END
from livetrace._trace.version import FORMATS, HEADER_SIZE, TraceVersion, sniff

BATCH_EVENTS = 4096
COMPILED_VERSIONS = frozenset(v for v in FORMATS if v.go_converts)
# Ids of the strings the conversion adds (reasons, stop-the-world kinds,
# user log messages), clear of the trace's own.
BUILTIN_BASE = 1 << 62
MESSAGE_BASE = BUILTIN_BASE + 64
# The strings the conversion adds, in the order the core's builtin table has
# them: each of these events' reason, then Go 1.21's stop-the-world reasons.
# spec/cheader.py names their places in C after the events (B_GO_STOP, ...,
# B_STW0, B_COUNT).
BUILTIN_EVENTS = (
    EV_GO_STOP,
    EV_GO_SLEEP,
    EV_GO_BLOCK,
    EV_GO_BLOCK_SEND,
    EV_GO_BLOCK_RECV,
    EV_GO_BLOCK_SELECT,
    EV_GO_BLOCK_SYNC,
    EV_GO_BLOCK_COND,
    EV_GO_BLOCK_NET,
    EV_GO_BLOCK_GC,
    EV_GO_SCHED,
    EV_GO_PREEMPT,
)
BUILTIN = [{**BLOCK_REASONS, **STOP_REASONS}[t] for t in BUILTIN_EVENTS] + list(STW_REASONS)
_TASK_END = bytes([TASK_END])
# The core's stream, and the trace's strings, stacks, frequency, user log messages and event count.
CoreStream = tuple[
    "ccore.LegacyStream", list[tuple[int, bytes]], list[tuple[int, tuple[int, ...]]], int, list[bytes], int
]
_BUILTIN_IDS = b"".join((BUILTIN_BASE + k).to_bytes(8, "little") for k in range(len(BUILTIN)))


@dataclass
class ExactTrace:
    """A complete legacy trace's events in the modern model, in batches."""

    table: Tables | None
    batches: list[EventBatch]
    events: int
    stacks: int
    ticks_per_sec: int


@dataclass
class ExactStream:
    """A complete legacy trace's events in the modern model, counted, in
    batches made as they are taken (the compiled core converts a batch at a
    time: a live segment never holds all its events as columns)."""

    table: Tables | None
    batches: Iterator[EventBatch]
    events: int
    stacks: int
    ticks_per_sec: int


def exact_events(
    data: bytes, kinds: frozenset[Kind] | None = None, compiled: bool | None = None, *, offset: int = 0, syncs: int = 0
) -> ExactTrace:
    """The exact events of a complete legacy trace (the same as
    ``legacy_events``), of the given kinds, with ``offset`` added to their
    times and their Syncs counting on from ``syncs`` (for segments stitched
    into one stream). ``compiled``: None uses the compiled core where there
    is one, True insists, False never does."""
    s = exact_stream(data, kinds, compiled, offset=offset, syncs=syncs)
    return ExactTrace(s.table, list(s.batches), s.events, s.stacks, s.ticks_per_sec)


def exact_stream(
    data: bytes,
    kinds: frozenset[Kind] | None = None,
    compiled: bool | None = None,
    *,
    offset: int = 0,
    syncs: int = 0,
    version: TraceVersion | None = None,
) -> ExactStream:
    """``exact_events``, its batches made as they are taken. Any error is
    raised here, before the first batch. ``version``: the format the
    header names, where the caller read it already."""
    if use_compiled(compiled) and len(data) >= HEADER_SIZE:
        ver = version or _version(data)
        if ver in COMPILED_VERSIONS:
            res = core_stream(data, ver, kinds, offset, syncs)
            # (A trace naming its own strings where the conversion puts its
            # own is left to the twin, which interns them elsewhere.)
            if res is not None and all(sid < BUILTIN_BASE for sid, _ in res[1]):
                core, strings, stack_list, ticks, messages, n = res
                del res
                gen = _table(strings, stack_list, ticks, messages, ver)
                return ExactStream(gen, _batches(core, gen), n, len(stack_list), ticks)
    d = LegacyDecoder()
    d.feed(data)
    trace = d.close()
    events = []
    for e in legacy_events(trace):
        e.time += offset
        if e.code == SYNC_CODE:
            e.args[0] += syncs
        if kinds is None or e.kind in kinds:
            events.append(e)
    table = events[0].gen if events else None
    batches = [EventBatch.from_events(table, events[i : i + BATCH_EVENTS]) for i in range(0, len(events), BATCH_EVENTS)]
    return ExactStream(table, iter(batches), len(events), len(trace.stacks), trace.ticks_per_sec)


def core_stream(
    data: bytes, ver: TraceVersion, kinds: frozenset[Kind] | None = None, offset: int = 0, syncs: int = 0
) -> CoreStream | None:
    """The compiled core's stream of a 1.11-1.21 trace and its tables
    (``ccore.legacy_stream``), or None: the twin must decode it."""
    counts, stacks = layout(ver)
    return ccore.legacy_stream(
        data, ver.legacy_number, counts, stacks, kind_mask(kinds), _BUILTIN_IDS, MESSAGE_BASE, offset, syncs
    )


def _version(data: bytes) -> TraceVersion | None:
    try:
        return sniff(data[:HEADER_SIZE])
    except TraceFormatError:  # the twin reports it
        return None


def _table(
    strings: list[tuple[int, bytes]],
    stacks: list[tuple[int, tuple[int, ...]]],
    ticks: int,
    messages: list[bytes],
    ver: TraceVersion,
) -> Tables:
    """The generation table of the core's strings and stacks, with the
    strings the conversion adds."""
    trace = LegacyTrace(ver, [], {}, dict(strings), ticks)
    for sid, vals in stacks:
        trace.stacks[sid] = vals
        add_frames(trace.frames, vals)
    table = legacy_table(trace)
    for k, s in enumerate(BUILTIN):
        table.strings[BUILTIN_BASE + k] = s.encode()
    for k, msg in enumerate(messages):
        table.strings[MESSAGE_BASE + k] = msg
    return table


def _batches(core: ccore.LegacyStream, table: Tables) -> Iterator[EventBatch]:
    """The core's events, a batch at a time. A task's end names its type as
    an extra string, made here (visiting only the task ends: a trace has
    few, among millions of events)."""
    while (columns := core.next(BATCH_EVENTS)) is not None:
        code = columns[0]
        i = code.find(_TASK_END)
        if i >= 0:
            extra = bytearray(columns[6])
            xs = memoryview(extra).cast("Q")
            while i >= 0:
                xs[2 * i + 1] = table.add_extra_string(table.strings.get(xs[2 * i + 1], b""))
                i = code.find(_TASK_END, i + 1)
            xs.release()
            columns = (*columns[:6], bytes(extra))
        yield EventBatch(table, len(code), columns)
