"""Spans as `tail --spans` prints them: a text line, or a JSON object
(docs/events-jsonl.md, "Spans").

:class:`SpanLines` writes a whole :class:`SpanBatch`'s lines from its
columns: on the compiled core, span_lines.c; else its twin,
:meth:`SpanLines.twin_line`, a row at a time, also from the columns. Both
take what needs the tables from the same pieces, made once per name or
stack id. :func:`span_dict` and :func:`span_text` give the same for one
:class:`Span` object (the reference the tests compare with)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache, partial
from typing import Any

from livetrace._cli.render.color import paint_line
from livetrace._cli.render.jsonl import PIECE_LINES, _clean, _frames, frame_text, utf8
from livetrace._cli.render.parts import Kept, stack_content
from livetrace._protocol.text import json_safe, shown
from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.model.events import stack_frames
from livetrace._trace.model.tables import Tables
from livetrace._trace.spans.batch import SpanBatch
from livetrace._trace.spans.model import (
    RES_PROC,
    RESOURCE_KINDS,
    SPAN_CLIPPED_END,
    SPAN_CLIPPED_START,
    SPAN_KIND_NAMES,
    Span,
)


def span_dict(s: Span) -> dict[str, Any]:
    """One span as a JSON-ready dict."""
    d: dict[str, Any] = {
        "kind": "Span",
        "span": str(s.kind),
        "resource": s.resource.kind.lower(),
        "id": s.resource.id,
        "start_ns": s.start,
        "end_ns": s.end,
        "duration_ns": s.duration,
    }
    if s.proc >= 0 and s.resource.kind != "Proc":
        d["proc"] = s.proc
    if s.reason:
        d["reason"] = s.reason
    if s.name:
        d["name"] = s.name
    if s.task:
        d["task"] = s.task
    if s.task_name:
        d["task_name"] = s.task_name
    if s.clipped_start:
        d["clipped_start"] = True
    if s.clipped_end:
        d["clipped_end"] = True
    if s.start_stack is not None:
        d["start_stack"] = _frames(s.start_stack)
    if s.end_stack is not None:
        d["end_stack"] = _frames(s.end_stack)
    if s.logs:
        d["logs"] = [{"category": c, "message": m} for c, m in s.logs]
    return {k: _clean(v) for k, v in d.items()}


def duration_text(ns: int) -> str:
    """A duration the way a person reads it: 850ns, 12.3µs, 4.56ms, 1.23s."""
    if ns < 1_000:
        return f"{ns}ns"
    if ns < 1_000_000:
        return f"{ns / 1e3:.1f}µs"
    if ns < 1_000_000_000:
        return f"{ns / 1e6:.2f}ms"
    return f"{ns / 1e9:.2f}s"


SPAN_KIND_WIDTH = 11  # "mark-assist"


def span_text(s: Span, t0: int) -> str:
    """One readable line: start (seconds since t0, signed: spans come in
    the order they end, so one may have begun before the first shown),
    kind, resource, duration, and what else the span knows."""
    parts = [f"{(s.start - t0) / 1e9:+.6f}s", f"{s.kind!s:<{SPAN_KIND_WIDTH}}", f"{s.resource!s:<16}"]
    parts.append(f"{duration_text(s.duration):>9}")
    if s.proc >= 0 and s.resource.kind != "Proc":
        parts.append(f"on P {s.proc}")
    # Names and reasons are the traced service's words: escaped, as tail's event lines quote them.
    if s.name:
        parts.append(shown(s.name))
    if s.reason:
        parts.append(f"({shown(s.reason)})")
    if s.task:
        parts.append(f"task {s.task}")
    return " ".join(parts) + frame_text(s.start_stack or s.end_stack or [])


# The pieces kept per name id and per (tables, stack id) key: when there are
# more, they are made afresh (a long session names many stacks).
MAX_PIECES = 1 << 16
_RESOURCE_JSON = tuple(k.lower() for k in RESOURCE_KINDS)


def kind_columns(color: bool) -> tuple[bytes, ...]:
    """Per span kind, its text line's kind column, painted as span_text's
    line is when coloured."""
    cols = []
    for name in SPAN_KIND_NAMES:
        col = f"{name:<{SPAN_KIND_WIDTH}}"
        cols.append((paint_line(col, name, 0, SPAN_KIND_WIDTH) if color else col).encode())
    return tuple(cols)


def logs_json(logs: Sequence[tuple[bytes, bytes]]) -> bytes:
    """A span's logs (category, message) as a JSON line has them: the JSON
    of their list, ``json.dumps``'s separators (json_safe escapes a
    character at a time, so the list's is its entries' joined)."""
    return b"[" + b", ".join([_log_json(c, m) for c, m in logs]) + b"]"


@lru_cache(maxsize=1 << 12)
def _log_json(category: bytes, message: bytes) -> bytes:
    """One log's JSON object, kept: a service logs the same few
    categories and messages over and over (a request's status), and making
    their JSON again for every span was most of the GIL the logs of a span
    view held."""
    entry = {"category": category.decode("utf-8", "replace"), "message": message.decode("utf-8", "replace")}
    return json_safe(json.dumps(entry, ensure_ascii=False)).encode()


def _name_json(raw: bytes) -> bytes:
    return json_safe(json.dumps(raw.decode("utf-8", "replace"), ensure_ascii=False)).encode() if raw else b""


def _name_text(raw: bytes) -> bytes:
    return utf8(shown(raw.decode("utf-8", "surrogateescape"))) if raw else b""


def _stack_json(t: Tables, sid: int) -> bytes:
    return json_safe(json.dumps(_frames(stack_frames(t, sid)), ensure_ascii=False)).encode()


def _stack_text(t: Tables, sid: int) -> bytes:
    return utf8(frame_text(stack_frames(t, sid)))


class _Pieces:
    """What the lines take from the tables, once per id, as bytes (b"": an
    empty name, a stack with nothing to show): ``pieces[kind]`` is the
    compiled core's cache (see parts.py; replaced, never cleared), read
    through the names table and the tables of the batch being written
    (given with each call: batches are written in several threads)."""

    __slots__ = ("kept", "name_maker", "names_table", "pieces", "stack_maker")

    def __init__(
        self,
        names_table: Sequence[bytes],
        name_maker: Callable[[bytes], bytes],
        stack_maker: Callable[[Tables, int], bytes],
        kept: Kept[bytes],
    ) -> None:
        self.names_table = names_table
        self.name_maker = name_maker
        self.stack_maker = stack_maker
        self.kept = kept
        self.pieces: dict[str, dict[int, bytes]] = {"name": {}, "stack": {}}

    def name(self, nid: int) -> bytes:
        got = self.pieces["name"].get(nid)
        if got is None:  # (setdefault: the core may point into a piece another thread put in meanwhile)
            got = self.pieces["name"].setdefault(nid, self._make_name(nid))
        return got

    def _make_name(self, nid: int) -> bytes:
        raw = self.names_table[nid]
        return self.kept.get(raw, partial(self.name_maker, raw))

    def stack(self, tables: Mapping[int, Tables], tok: int, sid: int) -> bytes:
        if not sid:
            return b""
        if sid >> 32:  # no key of 64 bits holds it: made each time
            return self._make_stack(tables, tok, sid)
        key = tok << 32 | sid
        got = self.pieces["stack"].get(key)
        if got is None:
            got = self.pieces["stack"].setdefault(key, self._make_stack(tables, tok, sid))
        return got

    def _make_stack(self, tables: Mapping[int, Tables], tok: int, sid: int) -> bytes:
        t = tables.get(tok)
        if t is None or sid not in t.stacks:
            return b""
        return self.kept.get(stack_content(t, sid), partial(self.stack_maker, t, sid))

    def miss(self, tables: Mapping[int, Tables], kind: str, key: int) -> bytes:
        """A piece the compiled core has not met yet (it keeps it in
        ``pieces[kind]``), from a batch with ``tables``."""
        if kind == "name":
            return self._make_name(key)
        return self._make_stack(tables, key >> 32, key & 0xFFFFFFFF)


class SpanLines:
    """`tail --spans`'s lines (``fmt`` "jsonl" or "text", coloured if
    asked) for whole span batches, as UTF-8, each ending in a newline: the
    bytes of :func:`span_dict` and :func:`span_text` (text starts are
    seconds since ``t0``, signed), from the columns; no :class:`Span` is
    made. On the compiled core span_lines.c writes them; :meth:`encode_twin`
    is its twin."""

    def __init__(
        self, fmt: str, color: bool = False, compiled: bool | None = None, kept: Kept[bytes] | None = None
    ) -> None:
        self._fast = use_compiled(compiled)
        self._json = fmt == "jsonl"
        self._kinds = tuple(n.encode() for n in SPAN_KIND_NAMES) if self._json else kind_columns(color)
        self._makers = (_name_json, _stack_json) if self._json else (_name_text, _stack_text)
        # Each generation's stacks have ids of their own (and, built in the
        # pool, a names table of their own): the pieces are kept by what
        # they show (a stack's frames, a name's bytes), or every generation
        # made its stacks' and names' JSON again. ``kept``: shared with the
        # SpanLines of the same format for other generations (a live tail
        # makes one for each).
        self._kept = Kept[bytes](MAX_PIECES) if kept is None else kept
        self._pieces = _Pieces((), *self._makers, self._kept)

    def _pieces_for(self, spans: SpanBatch) -> _Pieces:
        p = self._pieces
        # A name id means a name of its builder's table, a key a stack of its tables.
        if (
            p.names_table is not spans.names_table
            or len(p.pieces["stack"]) > MAX_PIECES
            or len(p.pieces["name"]) > MAX_PIECES
        ):
            p = self._pieces = _Pieces(spans.names_table, *self._makers, self._kept)
        return p

    def encode(self, spans: SpanBatch, t0: int) -> bytes:
        return b"".join(self.pieces(spans, t0))

    def pieces(self, spans: SpanBatch, t0: int) -> list[bytes]:
        """The lines in pieces of PIECE_LINES (written in warm memory: a
        batch's JSON lines, stacks and all, are megabytes, and a buffer that
        big is fresh pages from the system each time)."""
        if not self._fast or not len(spans) or not -(1 << 63) <= t0 < 1 << 63:  # the core's arithmetic is 64-bit
            return [self.encode_twin(spans, t0)]
        p = self._pieces_for(spans)
        cols = [c.cast("B") for c in spans.columns()]

        def other(i: int) -> bytes:  # a line the core leaves to the twin
            return self.twin_line(spans, i, t0, p)

        def log_json(i: int) -> bytes:  # a JSON line's logs (the core writes the rest of it)
            return logs_json(logs[i])

        names, stacks, logs, n = p.pieces["name"], p.pieces["stack"], spans.logs, len(spans)
        miss = partial(p.miss, spans.tables)
        # One call for the batch, its lines in pieces of PIECE_LINES.
        return ccore.span_lines(
            cols, 0, n, self._json, t0, self._kinds, names, stacks, miss, logs, other, log_json, PIECE_LINES
        )

    def encode_twin(self, spans: SpanBatch, t0: int) -> bytes:
        """The same lines, a row at a time in Python."""
        p = self._pieces_for(spans)
        return b"".join([self.twin_line(spans, i, t0, p) + b"\n" for i in range(len(spans))])

    def twin_line(self, spans: SpanBatch, i: int, t0: int, p: _Pieces) -> bytes:
        """Span i's line, without its newline."""
        kind, rk, rid, start, end, ss, es, st, et, reason, name, tname, task, flags, proc = (
            c[i] for c in spans.columns()
        )
        rkind = RESOURCE_KINDS[rk]
        kind_piece = self._kinds[kind]
        on_p = proc >= 0 and rk != RES_PROC
        tables = spans.tables
        reason_p, name_p, start_p, end_p = (
            p.name(reason),
            p.name(name),
            p.stack(tables, st, ss),
            p.stack(tables, et, es),
        )
        if not self._json:
            res = rkind if rk == 0 else f"{rkind}({rid})"
            out = [f"{(start - t0) / 1e9:+.6f}s ".encode(), kind_piece]
            tail = f" {res:<16} {duration_text(end - start):>9}" + (f" on P {proc}" if on_p else "")
            out.append(tail.encode())
            if name_p:
                out += [b" ", name_p]
            if reason_p:
                out += [b" (", reason_p, b")"]
            if task:
                out.append(f" task {task}".encode())
            out.append(start_p or end_p)
            return b"".join(out)
        out = [
            b'{"kind": "Span", "span": "',
            kind_piece,
            f'", "resource": "{_RESOURCE_JSON[rk]}", "id": {rid}, "start_ns": {start}, "end_ns": {end}, '
            f'"duration_ns": {end - start}'.encode(),
        ]
        if on_p:
            out.append(f', "proc": {proc}'.encode())
        if reason_p:
            out += [b', "reason": ', reason_p]
        if name_p:
            out += [b', "name": ', name_p]
        if task:
            out.append(f', "task": {task}'.encode())
        tname_p = p.name(tname)
        if tname_p:
            out += [b', "task_name": ', tname_p]
        if flags & SPAN_CLIPPED_START:
            out.append(b', "clipped_start": true')
        if flags & SPAN_CLIPPED_END:
            out.append(b', "clipped_end": true')
        if start_p:
            out += [b', "start_stack": ', start_p]
        if end_p:
            out += [b', "end_stack": ', end_p]
        logs = spans.logs.get(i)
        if logs:
            out += [b', "logs": ', logs_json(logs)]
        out.append(b"}")
        return b"".join(out)


def first_spans(spans: SpanBatch, n: int) -> SpanBatch:
    """The batch's first n spans, as a batch."""
    if n >= len(spans):
        return spans
    cols = [c.cast("B")[: n * c.itemsize] for c in spans.columns()]
    logs = {i: v for i, v in spans.logs.items() if i < n}
    return SpanBatch(cols, spans.tables, spans.names_table, logs)  # type: ignore[arg-type]  # memoryviews of bytes
