"""Events as JSON objects (``tail --format jsonl``) and as terminal lines.

The JSON fields are documented in docs/events-jsonl.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from livetrace._cli.render.dump import parsed_text
from livetrace._cli.render.parts import GenerationParts, Kept, Maker, stack_content, tables
from livetrace._items import Gap, Notice, SegmentGap, SymbolsResolved, TraceGap, WindowGap
from livetrace._protocol.text import json_safe, shown
from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import (
    GO_STATE_NAMES,
    NO_TASK,
    PROC_STATE_NAMES,
    Event,
    Kind,
    StackFrame,
    format_wall,
    stack_frames,
    transition_parts,
)
from livetrace._trace.model.tables import Tables


def valid_text(text: str) -> str:
    """Text UTF-8 can carry: the API keeps a trace's bytes that are not
    UTF-8 as lone surrogates (``surrogateescape``), output shows each as
    U+FFFD, as Go's tools do."""
    if text.isascii():
        return text
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that did not come from a byte
        return text.encode("utf-8", "replace").decode()
    return raw.decode("utf-8", "replace")


def utf8(text: str) -> bytes:
    """text as UTF-8 for output, see :func:`valid_text`."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return valid_text(text).encode()


def _clean(v: Any) -> Any:
    if isinstance(v, str):
        return valid_text(v)
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


def _frames(frames: list[StackFrame]) -> list[dict[str, Any]]:
    return [{"function": valid_text(f.func), "file": valid_text(f.file), "line": f.line} for f in frames]


def wall_string(e: Event) -> str | None:
    base = None if e.gen is None else e.gen.wall_base
    return None if base is None else format_wall(*divmod(base + e.time, 1_000_000_000))


def event_dict(e: Event, stack: bool = True) -> dict[str, Any]:
    """One event as a JSON-ready dict (without its ``stack`` if not stack)."""
    kind = e.kind
    d: dict[str, Any] = {"kind": e.kind_name, "time_ns": e.time}
    wall = wall_string(e)
    if wall is not None:
        d["wall"] = wall
    d["g"], d["p"], d["m"] = e.g, e.p, e.m
    if kind == Kind.STATE_TRANSITION:
        st = e.state_transition()
        d["resource"] = st.resource.kind.lower()
        d["id"] = st.resource.id
        d["from"], d["to"], d["reason"] = st.old, st.new, st.reason
        if st.stack is not None:
            d["transition_stack"] = _frames(st.stack)
    elif kind == Kind.METRIC:
        d["name"], d["value"] = e.metric()
    elif kind in (Kind.RANGE_BEGIN, Kind.RANGE_ACTIVE, Kind.RANGE_END):
        name, scope = e.range()
        d["name"], d["scope"] = name, str(scope)
        if kind == Kind.RANGE_END:
            d["attributes"] = dict(e.range_attributes())
    elif kind in (Kind.TASK_BEGIN, Kind.TASK_END):
        tid, parent, typ = e.task()
        d["task"], d["parent"], d["type"] = tid, None if parent == NO_TASK else parent, typ
    elif kind in (Kind.REGION_BEGIN, Kind.REGION_END):
        d["task"], d["type"] = e.region()
    elif kind == Kind.LOG:
        d["task"], d["category"], d["message"] = e.log()
    elif kind == Kind.LABEL:
        d["label"] = e.label()[0]
    elif kind == Kind.SYNC:
        n, snap = e.sync()
        d["n"] = n
        if snap is not None:
            d["clock_snapshot"] = {
                "trace_ns": snap.trace_ns,
                "mono_ns": snap.mono_ns,
                "wall": format_wall(snap.wall_sec, snap.wall_nsec),
            }
    elif kind == Kind.EXPERIMENTAL:
        d["name"], args = e.experimental()
        d["args"] = dict(args)
    if kind != Kind.SYNC and stack:
        d["stack"] = _frames(e.stack())
    return {k: _clean(v) for k, v in d.items()}


def gap_dict(g: Notice) -> dict[str, Any]:
    """A gap in the events, or a legacy trace's notice, as a JSON-ready dict."""
    if isinstance(g, SegmentGap):
        return {"kind": "Gap", "why": g.why, "segment": g.segment, "duration_ns": g.duration_ns}
    if isinstance(g, SymbolsResolved):
        return {
            "kind": "SymbolsResolved",
            "segment": g.segment,
            "events": g.events,
            "stacks": g.stacks,
            "ticks_per_sec": g.ticks_per_sec,
            "estimated_ticks_per_sec": g.estimated_ticks_per_sec,
        }
    if isinstance(g, TraceGap):
        return {
            "kind": "TraceGap",
            "trace": g.window,
            "seconds": g.seconds if g.measured else None,
            "measured_from": g.measured_from if g.measured else None,
        }
    if isinstance(g, WindowGap):
        return {"kind": "WindowGap", "window": g.window, "seconds": g.seconds, "measured_from": g.measured_from}
    if isinstance(g, Gap):
        return {
            "kind": "Gap",
            "first_generation": g.first_generation,
            "last_generation": g.last_generation,
            "dropped_chunks": g.chunks,
            "dropped_bytes": g.bytes,
        }
    return {"kind": type(g).__name__, "message": g.message}


def provisional_dict(e: Event) -> dict[str, Any]:
    """A legacy trace's event before its footer: estimated time, stack id."""
    d = event_dict(e, stack=False)
    d.pop("transition_stack", None)
    d["provisional"] = True
    d["stack_id"] = e.stack_id()
    return d


def text_line(item: Event | Notice, t0: int, provisional: bool = False) -> str:
    """One readable line for a terminal (provisional events marked ~)."""
    if isinstance(item, Notice):
        return f"--- {item.message} ---"
    e = item
    if provisional:
        sid = e.stack_id()
        return "~" + _event_line(e, t0) + (f"  stack {sid}" if sid else "")
    return _event_line(e, t0)


def _event_line(e: Event, t0: int) -> str:
    wall = wall_string(e)
    clock = wall[11:-1].ljust(18, "0")[:15] if wall else f"+{(e.time - t0) / 1e9:.6f}s"
    head = parsed_text(e).split("\n", 1)[0]
    details = head.split(f" Time={e.time}", 1)[1].strip()
    ctx = " ".join(f"{k}{v}" for k, v in (("P", e.p), ("M", e.m), ("G", e.g)) if v != -1)
    line = f"{clock} {e.kind_name:<15} {ctx:<22} {details}"
    stack = e.stack() if e.kind != Kind.SYNC else []
    return line + frame_text(stack)


def frame_text(stack: list[StackFrame]) -> str:
    """Where a text line says the event happened: its stack's innermost frame."""
    if not stack:
        return ""
    f = stack[0]
    return f"  @ {shown(_replaced(f.func))} {shown(_replaced(f.file.rsplit('/', 1)[-1]))}:{f.line}"


def _replaced(name: str) -> str:
    """A name whose bytes were not all UTF-8 (kept as lone surrogates) with
    U+FFFD for each such byte, as its JSON shows it."""
    if name.isascii():
        return name
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no decoded name holds (a frame made through the API)
        raw = name.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "replace")


PIECE_LINES = 512


def stack_json(gen: Tables | None, sid: int) -> str:
    """A stack's frames as JSON."""
    return json_safe(json.dumps(_frames(stack_frames(gen, sid)), ensure_ascii=False))


def string_json(gen: Tables | None, sid: int) -> str:
    """A string of the tables as JSON."""
    return json_safe(json.dumps(tables(gen).strings[sid].decode("utf-8", "replace"), ensure_ascii=False))


def extra_json(gen: Tables | None, index: int) -> str:
    """A string the decoder derived (a task end's type), as JSON."""
    return json_safe(json.dumps(tables(gen).extra_strings[index].decode("utf-8", "replace"), ensure_ascii=False))


# The pieces of the JSON lines: the compiled core asks for these kinds.
JSON_PARTS: dict[str, Maker] = {"stack": stack_json, "string": string_json, "extra": extra_json}


class PartsAcross:
    """The JSON of stacks and strings by what they hold (:class:`Kept`),
    for the makers of each generation's pieces: it was made with the GIL
    held by every thread of the pool at once as a generation begins. A
    stack is what its JSON shows: its frames' functions, files and lines
    (as bytes); a string, its bytes."""

    def __init__(self, most: int = 1 << 16) -> None:
        self._stacks = Kept[str](most)
        self._strings = Kept[str](most)
        self.parts: dict[str, Maker] = {"stack": self.stack, "string": self.string, "extra": extra_json}

    def stack(self, gen: Tables | None, sid: int) -> str:
        return self._stacks.get(stack_content(tables(gen), sid), lambda: stack_json(gen, sid))

    def string(self, gen: Tables | None, sid: int) -> str:
        return self._strings.get(tables(gen).strings[sid], lambda: string_json(gen, sid))


def compiled_pieces(
    batch: EventBatch,
    wall: int | None,
    strings: dict[int, bytes],
    stacks: dict[int, bytes] | None,
    extras: dict[int, bytes],
    miss: Callable[[str, int], bytes],
    line_of: Callable[[Event], str],
) -> list[bytes]:
    """A batch's JSON lines from the compiled core, in pieces of PIECE_LINES:
    ``strings``, ``stacks`` and ``extras`` (the decoder's derived strings)
    cache the JSON text of the ids (``miss`` makes one the first time),
    ``line_of`` the line of an event the core does not write. Without
    ``stacks``, :func:`provisional_dict`'s lines (each stack as its id; a
    task end's line is ``line_of``'s, ``extras`` unread)."""
    if wall is not None and not -(1 << 63) <= wall < 1 << 63:
        # A clock base past int64 (a hostile or far-off clock): the core's arithmetic is 64-bit.
        return [utf8("".join(line_of(e) + "\n" for e in batch))]

    def other(k: int) -> str:
        return line_of(batch[k])

    # One call for the batch, its lines in pieces of PIECE_LINES.
    code, time, m, p, g, args, extra = batch.columns()
    if stacks is None:
        return ccore.jsonl_provisional(code, time, m, p, g, args, extra, wall, strings, miss, other, PIECE_LINES)
    return ccore.jsonl(code, time, m, p, g, args, extra, wall, strings, stacks, miss, other, extras, PIECE_LINES)


class JsonlEncoder:
    """``jsonl`` fast enough for a live pipe: per generation it remembers the
    JSON of every stack and string it has written, and it writes the common
    kinds' lines directly (a whole batch's state transitions in the compiled
    core, when there is one). Same objects as :func:`event_dict`."""

    def __init__(self, across: PartsAcross | None = None) -> None:
        self._fast = use_compiled()
        self._gen: Tables | None = None
        self._parts = JSON_PARTS if across is None else across.parts
        self._json = GenerationParts(None, self._parts, str.encode)
        self._wall_base = 0
        self._has_wall = False
        self._sec = (-1, "")  # a second of wall time, as text: one object, read whole by any thread

    def _start(self, gen: Tables | None) -> None:
        base = None if gen is None else gen.wall_base
        self._json = GenerationParts(gen, self._parts, str.encode)
        self._has_wall = base is not None
        self._wall_base = base or 0
        # Last: a thread that sees the generation set sees the rest (the pool writes a
        # generation's batches in several threads, with one encoder).
        self._gen = gen

    def _stack(self, sid: int) -> str:
        return self._json.text("stack", sid)

    def _string(self, sid: int) -> str:
        return self._json.text("string", sid)

    def encode_many(self, items: Iterable[Event | Notice]) -> str:
        """Lines for all the items, each ending in a newline."""
        encode = self.encode
        return "".join([encode(i) + "\n" for i in items])

    def encode_batch(self, batch: EventBatch) -> list[bytes]:
        """Lines (UTF-8) for a batch's events, each ending in a newline, in
        pieces of a few hundred lines (small pieces are written in warm
        memory: much faster than one big one). The compiled core writes the
        common kinds straight from the columns."""
        if not self._fast or not len(batch):
            return [self.encode_many(batch).encode()]
        if batch.gen is not self._gen:
            self._start(batch.gen)
        wall = self._wall_base if self._has_wall else None
        parts = self._json  # this batch's generation, whatever self._json becomes during the calls
        pieces = parts.pieces
        return compiled_pieces(batch, wall, pieces["string"], pieces["stack"], pieces["extra"], parts.miss, self.encode)

    def encode(self, item: Event | Notice) -> str:
        if isinstance(item, Notice):
            return json.dumps(gap_dict(item))
        e = item
        if e.gen is not self._gen:
            self._start(e.gen)
        kind = e.kind
        if kind != Kind.STATE_TRANSITION:
            if kind == Kind.SYNC:
                return json_safe(json.dumps(event_dict(e), ensure_ascii=False))
            # The stack comes last: splice in its JSON, made once per generation.
            sid = e.stack_id()
            return (
                json_safe(json.dumps(event_dict(e, stack=False), ensure_ascii=False))[:-1]
                + f', "stack": {self._stack(sid) if sid else "[]"}}}'
            )
        head = f'{{"kind": "StateTransition", "time_ns": {e.time}, '
        if self._has_wall:
            sec, nsec = divmod(self._wall_base + e.time, 1_000_000_000)
            cached = self._sec
            if sec != cached[0]:
                cached = self._sec = (sec, format_wall(sec, 0)[:-1])
            frac = f".{nsec:09d}".rstrip("0") if nsec else ""
            head += f'"wall": "{cached[1]}{frac}Z", '
        res, rid, old, new, reason, tstack = transition_parts(e)
        names = GO_STATE_NAMES if res == "Goroutine" else PROC_STATE_NAMES
        reason_json = self._string(e.args[0]) if reason else '""'
        line = (
            f'{head}"g": {e.g}, "p": {e.p}, "m": {e.m}, "resource": "{res.lower()}", "id": {rid}, '
            f'"from": "{names[old]}", "to": "{names[new]}", "reason": {reason_json}'
        )
        if tstack is not None:
            line += f', "transition_stack": {self._stack(tstack) if tstack else "[]"}'
        sid = e.stack_id()
        return f'{line}, "stack": {self._stack(sid) if sid else "[]"}}}'
