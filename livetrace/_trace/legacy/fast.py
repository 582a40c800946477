"""A complete legacy trace, straight to its exact events in the modern
model: through the compiled core where it can (Go 1.11 to 1.21, the traces
the helper's Go can write, and valid), else through the pure-Python
decoder and converter, its twin, which also reports every error."""

from __future__ import annotations

from dataclasses import dataclass

from livetrace._errors import TraceFormatError
from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.legacy.convert import BLOCK_REASONS, STOP_REASONS, STW_REASONS, legacy_events, legacy_table
from livetrace._trace.legacy.read import LegacyDecoder, add_frames
from livetrace._trace.legacy.trace import LegacyTrace
from livetrace._trace.model.batch import NARGS, NEXTRA, EventBatch, kind_mask
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
# The strings the conversion adds, in the order the core's builtin table has them.
BUILTIN = (
    [
        BLOCK_REASONS[t]
        for t in (
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
        )
    ]
    + [STOP_REASONS[EV_GO_SCHED], STOP_REASONS[EV_GO_PREEMPT]]
    + list(STW_REASONS)
)
_TASK_END = bytes([TASK_END])
_WIDTHS = (1, 8, 8, 8, 8, 8 * NARGS, 8 * NEXTRA)  # bytes per event in each column
_BUILTIN_IDS = b"".join((BUILTIN_BASE + k).to_bytes(8, "little") for k in range(len(BUILTIN)))


@dataclass
class ExactTrace:
    """A complete legacy trace's events in the modern model, in batches."""

    table: Tables | None
    batches: list[EventBatch]
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
    if use_compiled(compiled) and len(data) >= HEADER_SIZE:
        ver = _version(data)
        if ver in COMPILED_VERSIONS:
            counts, stacks = layout(ver)
            res = ccore.legacy_exact(
                data, ver.legacy_number, counts, stacks, kind_mask(kinds), _BUILTIN_IDS, MESSAGE_BASE, offset, syncs
            )
            # (A trace naming its own strings where the conversion puts its
            # own is left to the twin, which interns them elsewhere.)
            if res is not None and all(sid < BUILTIN_BASE for sid, _ in res.strings):
                columns: list[bytes | bytearray | None] = list(res.columns)
                tables = (res.strings, res.stacks, res.ticks_per_sec, res.messages)
                del res  # the columns go, one by one, as they are cut into batches
                return _from_columns(columns, *tables, ver)
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
    return ExactTrace(table, batches, len(events), len(trace.stacks), trace.ticks_per_sec)


def _version(data: bytes) -> TraceVersion | None:
    try:
        return sniff(data[:HEADER_SIZE])
    except TraceFormatError:  # the twin reports it
        return None


def _from_columns(
    columns: list[bytes | bytearray | None],
    strings: list[tuple[int, bytes]],
    stacks: list[tuple[int, tuple[int, ...]]],
    ticks: int,
    messages: list[bytes],
    ver: TraceVersion,
) -> ExactTrace:
    """The batches of the core's columns. A segment's columns are the largest
    thing a live legacy session holds: each is dropped once cut into the
    batches' copies (columns holds the only references)."""
    trace = LegacyTrace(ver, [], {}, dict(strings), ticks)
    for sid, vals in stacks:
        trace.stacks[sid] = vals
        add_frames(trace.frames, vals)
    table = legacy_table(trace)
    for k, s in enumerate(BUILTIN):
        table.strings[BUILTIN_BASE + k] = s.encode()
    for k, msg in enumerate(messages):
        table.strings[MESSAGE_BASE + k] = msg
    code = columns[0]
    assert code is not None
    n = len(code)
    # A task's end names its type as an extra string, made here (visiting
    # only the task ends: a trace has few, among millions of events).
    i = code.find(_TASK_END)
    if i >= 0:
        assert columns[6] is not None
        extra = columns[6] = bytearray(columns[6])
        xs = memoryview(extra).cast("Q")
        while i >= 0:
            xs[2 * i + 1] = table.add_extra_string(table.strings.get(xs[2 * i + 1], b""))
            i = code.find(_TASK_END, i + 1)
        del xs, extra
    del code
    pieces: list[list[bytes]] = []
    for k, width in enumerate(_WIDTHS):
        col, columns[k] = columns[k], None
        assert col is not None
        pieces.append([bytes(col[width * i : width * min(n, i + BATCH_EVENTS)]) for i in range(0, n, BATCH_EVENTS)])
        del col
    batches = [
        EventBatch(table, min(BATCH_EVENTS, n - i), tuple(p[b] for p in pieces))
        for b, i in enumerate(range(0, n, BATCH_EVENTS))
    ]
    return ExactTrace(table, batches, n, len(trace.stacks), ticks)
