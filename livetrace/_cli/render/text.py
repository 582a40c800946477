"""`tail`'s text lines, a batch at a time.

The twin makes each line in Python (:func:`event_text`: ``text_line``, and
``paint_line`` for colour). On the compiled core, text.c writes a whole
batch's lines straight from its columns, the same bytes; Python makes
only what needs the generation's tables, once per id (a string's quoted
text, a stack's first frame), and the lines of the rare events text.c
leaves to it (Syncs, experimental events).
"""

from __future__ import annotations

from collections.abc import Sequence

from livetrace._cli.render.color import paint_line
from livetrace._cli.render.gostr import go_quote
from livetrace._cli.render.jsonl import frame_text, text_line, utf8
from livetrace._cli.render.parts import GenerationParts, Kept, Maker, tables
from livetrace._errors import TraceFormatError
from livetrace._items import Notice
from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import KIND_NAMES, KIND_OF_CODE, Event, StackFrame, stack_frames
from livetrace._trace.model.tables import Tables

KIND_WIDTH = 15  # the kind column of text_line


def event_text(item: Event | Notice, t0: int, provisional: bool, color: bool) -> str:
    """One event's (or notice's) line, coloured if asked: the twin."""
    line = text_line(item, t0, provisional)
    if not color:
        return line
    if isinstance(item, Notice):
        return paint_line(line, None, 0, 0)
    return paint_line(line, item.kind_name, line.index(" ") + 1, KIND_WIDTH)


def kind_columns(color: bool) -> tuple[bytes, ...]:
    """Per event code, its line's kind column, painted as paint_line
    paints it in the line."""
    cols = []
    for code in range(256):
        name = KIND_NAMES[KIND_OF_CODE[code]]
        col = f"{name:<{KIND_WIDTH}}"
        cols.append((paint_line(col, name, 0, KIND_WIDTH) if color else col).encode())
    return tuple(cols)


# What text.c asks of a generation's tables: a string's quoted text, a
# stack's first frame, a derived string's quoted text.
_PARTS: dict[str, Maker] = {
    "quote": lambda g, i: go_quote(tables(g).strings[i]),
    "frame": lambda g, i: frame_text(stack_frames(tables(g), i)),
    "xquote": lambda g, i: go_quote(tables(g).extra_strings[i]),
}


class TextAcross:
    """What text.c asks of each generation's tables, kept across generations
    by what it shows (:class:`Kept`: a string's bytes; a stack's first
    frame, its function, file and line), as :class:`~livetrace._cli.render.jsonl.PartsAcross`
    keeps JSON. A frame reads its stack's first pc only (a text line shows
    no other)."""

    def __init__(self, most: int = 1 << 16) -> None:
        self._quotes = Kept[str](most)
        self._frames = Kept[str](most)
        self.parts: dict[str, Maker] = {"quote": self.quote, "frame": self.frame, "xquote": self.xquote}

    def quote(self, gen: Tables | None, sid: int) -> str:
        raw = tables(gen).strings[sid]
        return self._quotes.get(raw, lambda: go_quote(raw))

    def xquote(self, gen: Tables | None, index: int) -> str:
        raw = tables(gen).extra_strings[index]
        return self._quotes.get(raw, lambda: go_quote(raw))

    def frame(self, gen: Tables | None, sid: int) -> str:
        if not sid:
            return ""
        g = tables(gen)
        pcs = g.stacks[sid]
        if not pcs:
            return ""
        func, file, line = g.frames[pcs[0]]
        key = (g.strings[func], g.strings[file], line)
        return self._frames.get(key, lambda: frame_text([StackFrame(_text(key[0]), _text(key[1]), line, pcs[0])]))


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")  # as the frames of stack_frames hold it


class TextEncoder:
    """Lines for whole batches, each ending in a newline, as UTF-8: on the
    compiled core, text.c writes an :class:`EventBatch`'s; anything else
    (a list of events or notices) is the twin's, line by line."""

    def __init__(self, color: bool, compiled: bool | None = None, across: TextAcross | None = None) -> None:
        self._fast = use_compiled(compiled)
        self._color = color
        self._columns = kind_columns(color)
        self._makers = _PARTS if across is None else across.parts
        self._parts = GenerationParts(None, self._makers, utf8)

    def encode(self, events: Sequence[Event | Notice], t0: int, provisional: bool = False) -> bytes:
        if not self._fast or not isinstance(events, EventBatch) or not len(events) or events.gen is None:
            return self.encode_twin(events, t0, provisional)
        gen = events.gen
        try:
            wall = gen.wall_base
        except TraceFormatError:  # a clock snapshot out of range: the twin says so
            return self.encode_twin(events, t0, provisional)
        if provisional:
            # A legacy trace's tables before its footer grow as its strings
            # arrive: nothing made from them is kept past the batch.
            parts = GenerationParts(gen, _PARTS, utf8)
        elif self._parts.gen is not gen:
            parts = self._parts = GenerationParts(gen, self._makers, utf8)
        else:
            parts = self._parts
        color = self._color

        def other(i: int) -> bytes:  # a line the core leaves to the twin
            return utf8(event_text(events[i], t0, provisional, color))

        code, time, m, p, g, args, extra = events.columns()
        return ccore.text_lines(
            code,
            time,
            m,
            p,
            g,
            args,
            extra,
            t0,
            wall,
            provisional,
            self._columns,
            parts.pieces["quote"],
            parts.pieces["frame"],
            parts.pieces["xquote"],
            parts.miss,
            other,
        )

    def encode_twin(self, events: Sequence[Event | Notice], t0: int, provisional: bool = False) -> bytes:
        """The same lines, made in Python."""
        color = self._color
        return utf8("".join([event_text(e, t0, provisional, color) + "\n" for e in events]))
