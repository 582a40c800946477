"""Text dumps of a trace, line for line what Go's ``go tool trace -d=...`` prints."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from livetrace._cli.render.gostr import go_quote
from livetrace._trace.model.events import (
    GO_STATE_NAMES,
    KIND_NAMES,
    PROC_STATE_NAMES,
    Event,
    Kind,
    format_wall,
    transition_parts,
)
from livetrace._trace.model.tables import Tables
from livetrace._trace.modern.wire import Batch, EndOfGeneration, Frame, decode_records
from livetrace._trace.spec.legacy import GLOBAL_G0
from livetrace._trace.spec.legacy import SPECS as LEGACY_SPECS
from livetrace._trace.spec.modern import (
    EV_EVENT_BATCH,
    EV_EXPERIMENTAL_BATCH,
    EV_STW_BEGIN,
    EV_STW_END,
    EV_USER_TASK_BEGIN,
    SPECS,
    EventSpec,
)

if TYPE_CHECKING:
    from livetrace._trace.legacy.trace import LegacyEvent
    from livetrace._trace.modern.raw import RawEvent


def legacy_lines(events: Iterable[LegacyEvent]) -> Iterator[bytes]:
    """``go tool trace -d`` of Go 1.21: one line per event of a legacy trace
    (strings as the trace has them, bytes)."""
    for e in events:
        spec = LEGACY_SPECS[e.typ]
        g = 0 if e.typ in GLOBAL_G0 else e.g
        line = f"{e.ts} {spec.name} p={e.p} g={g} off={e.off}".encode()
        line += b"".join(f" {name}={v}".encode() for name, v in zip(spec.args, e.args, strict=False))
        line += b"".join(b" " + name.encode() + b"=" + v for name, v in zip(spec.sargs, e.sargs, strict=False))
        yield line


def _arg_format(spec: EventSpec) -> str:
    return spec.name + "".join(f" {a}=%d" for a in spec.args)


_FORMATS = {s.code: _arg_format(s) for s in SPECS if s is not None}


def wire_lines(frames: Iterable[Frame], minor: int, records: bool = True) -> Iterator[str]:
    """``go tool trace -d=wire``: one line per record (Stack frames and
    string data on tab-indented continuation lines); without records, only
    an event batch's first line."""
    batch_fmt, exp_fmt = _FORMATS[EV_EVENT_BATCH], _FORMATS[EV_EXPERIMENTAL_BATCH]
    for f in frames:
        if isinstance(f, EndOfGeneration):
            yield "EndOfGeneration"
            continue
        if f.exp >= 0:
            line = exp_fmt % (f.exp, f.gen, f.m, f.time)
            yield line + "\n\tdata=" + go_quote(f.payload) if f.payload else line
            continue
        yield batch_fmt % (f.gen, f.m, f.time, len(f.payload))
        if records:
            yield from _record_lines(f, minor)


def _record_lines(batch: Batch, minor: int) -> Iterator[str]:
    for rec in decode_records(batch.payload, minor, batch.payload_offset, batch.gen):
        yield _record_line(rec.spec, rec.args, rec.data)


def raw_lines(events: Iterable[RawEvent]) -> Iterator[str]:
    """``-d=wire`` lines of events as Go's raw reader reads them (an event
    batch's header one of them; a code its table has no event for, an empty
    name)."""
    for ev in events:
        yield "" if ev.spec is None else _record_line(ev.spec, ev.args, ev.data)


def _record_line(spec: EventSpec, args: tuple[int, ...], data: bytes | None) -> str:
    n = len(spec.args)
    line = _FORMATS[spec.code] % args[:n] if n else spec.name
    if spec.is_stack:
        frames = args[n:]
        line += "".join(
            f"\n\tpc={frames[k]} func={frames[k + 1]} file={frames[k + 2]} line={frames[k + 3]}"
            for k in range(0, len(frames), 4)
        )
    if data is not None:
        line += "\n\tdata=" + go_quote(data)
    return line


def _stack_block(e: Event, title: str, stack_id: int) -> str:
    assert e.gen is not None
    return f"\n{title}=\n" + stack_text(e.gen, stack_id)


def stack_text(g: Tables, stack_id: int) -> str:
    """A stack's frames in a parsed event's text, a line each for the
    function and for the file."""
    parts = []
    for pc in g.stacks[stack_id]:
        func, file, line = g.frames[pc]
        parts.append(f"\t{_raw(g.strings[func])} @ 0x{pc:x}\n\t\t{_raw(g.strings[file])}:{line}\n")
    return "".join(parts)


def _raw(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def parsed_text(e: Event) -> str:
    """What Go's ``Event.String()`` gives for the event."""
    kind = e.kind
    s = f"M={e.m} P={e.p} G={e.g} {KIND_NAMES[kind]} Time={e.time}"
    if kind == Kind.STATE_TRANSITION:
        res, rid, old, new, reason, stack = transition_parts(e)
        names = GO_STATE_NAMES if res == "Goroutine" else PROC_STATE_NAMES
        s += f" {'GoID' if res == 'Goroutine' else 'ProcID'}={rid} {names[old]}->{names[new]} Reason={go_quote(reason)}"
        if stack is not None:
            s += _stack_block(e, "TransitionStack", stack)
    elif kind == Kind.METRIC:
        name, value = e.metric()
        s += f' Name="{name}" Value=Value{{Uint64({value})}}'
    elif kind in (Kind.RANGE_BEGIN, Kind.RANGE_ACTIVE, Kind.RANGE_END):
        if e.code in (EV_STW_BEGIN, EV_STW_END):
            name = "stop-the-world (" + _raw(e.string(e.args[0])) + ")"
            s += f" Name={go_quote(name.encode('utf-8', 'surrogateescape'))} Scope=Goroutine({e.g})"
        else:
            rname, scope = e.range()
            s += f' Name="{rname}" Scope={scope}'
        if kind == Kind.RANGE_END:
            s += " Attributes=[" + " ".join(f'"{n}"=Value{{Uint64({v})}}' for n, v in e.range_attributes()) + "]"
    elif kind == Kind.SYNC:
        n, snap = e.sync()
        s += f" N={n}"
        if snap is not None:
            s += f" Trace={snap.trace_ns} Mono={snap.mono_ns} Wall={format_wall(snap.wall_sec, snap.wall_nsec)}"
    elif kind == Kind.LABEL:
        s += f" Label={go_quote(e.string(e.args[0]))} Resource=Goroutine({e.g})"
    elif kind in (Kind.TASK_BEGIN, Kind.TASK_END):
        if e.code == EV_USER_TASK_BEGIN:
            s += f" ID={e.args[0]} Parent={e.args[1]} Type={go_quote(e.string(e.args[2]))}"
        else:
            assert e.gen is not None
            s += f" ID={e.args[0]} Parent={e.extra[0]} Type={go_quote(e.gen.extra_strings[e.extra[1]])}"
    elif kind in (Kind.REGION_BEGIN, Kind.REGION_END):
        s += f" Task={e.args[0]} Type={go_quote(e.string(e.args[1]))}"
    elif kind == Kind.LOG:
        s += f" Task={e.args[0]} Category={go_quote(e.string(e.args[1]))} Message={go_quote(e.string(e.args[2]))}"
    elif kind == Kind.EXPERIMENTAL:
        name, args = e.experimental()
        s += f" Name={name} Args=[" + ", ".join(f"{a}=Value{{Uint64({v})}}" for a, v in args) + "]"
    if kind != Kind.SYNC:
        sid = e.stack_id()
        if sid:
            s += _stack_block(e, "Stack", sid)
    return s
