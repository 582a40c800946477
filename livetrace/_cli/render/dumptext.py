"""The dumps a batch at a time: the text of ``-d=parsed`` for an
:class:`EventBatch`, of ``-d=wire`` for a run of frames, in one piece
(UTF-8 bytes from the compiled core, written out as they are).

On the compiled core the lines are written from the columns (_ccore/render/dump.c);
what is rare or needs Unicode tables comes from the reference formatters
(dump.py's parsed_text and go_quote): a generation's quoted strings and
stack texts, made once per id, and the lines of rare kinds. On the twin
the reference formatters make every line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TextIO

from livetrace._cli.render.dump import parsed_text, stack_text, wire_lines
from livetrace._cli.render.gostr import go_quote
from livetrace._cli.render.parts import GenerationParts, Maker, tables
from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import KIND_NAMES, KIND_OF_CODE, SYNC_CODE, Event
from livetrace._trace.modern.wire import Batch, EndOfGeneration, Frame, record_columns
from livetrace._trace.spec.modern import EV_EVENT_BATCH, EV_EXPERIMENTAL_BATCH, LAST_CODE, SPECS, EventSpec, specs_for

# Per code, what follows "M=.. P=.. G=.." up to the time, for the compiled core.
_HEADS = tuple(
    f" {KIND_NAMES[KIND_OF_CODE[c]]} Time=".encode() if c == SYNC_CODE or (c < len(SPECS) and SPECS[c]) else None
    for c in range(256)
)


def _encode(text: str) -> bytes:
    # A trace's bytes that are not UTF-8 come back out as they went in.
    return text.encode("utf-8", "surrogateescape")


# What dump.c asks of a generation's tables: quoted strings, stack texts,
# and the quoted derived strings (a task's type at its end).
_PARTS: dict[str, Maker] = {
    "string": lambda g, i: go_quote(tables(g).strings[i]),
    "stack": lambda g, i: stack_text(tables(g), i),
    "extra": lambda g, i: go_quote(tables(g).extra_strings[i]),
}


def utf8_sink(out: TextIO) -> Callable[[bytes], None]:
    """Where text encoded as UTF-8 goes: straight to standard output's
    descriptor where it takes UTF-8 (WholeWriter), else decoded into out."""
    write_utf8: Callable[[bytes], None] | None = getattr(out, "write_utf8", None)
    if write_utf8 is not None:
        return write_utf8

    def decoded(data: bytes) -> None:
        out.write(data.decode("utf-8", "surrogateescape"))

    return decoded


class ParsedText:
    """``-d=parsed`` text, a batch at a time; remembers the current
    generation's strings and stacks."""

    def __init__(self, compiled: bool | None = None) -> None:
        self._fast = use_compiled(compiled)
        self._parts = GenerationParts(None, _PARTS, _encode)

    def write(self, events: Iterable[Event], out: TextIO, sink: Callable[[bytes], None]) -> None:
        """Print the events' lines: into sink (from utf8_sink(out)) as the
        core writes them, into out as the twin does."""
        if isinstance(events, EventBatch) and self._fast:
            data = self.compiled(events)
            if data:
                sink(data)
        else:
            text = self.text(events)
            if text:
                out.write(text)
        out.flush()

    def text(self, events: Iterable[Event]) -> str:
        """The lines of the events, each ending in a newline."""
        if not isinstance(events, EventBatch) or not self._fast:
            return "".join([parsed_text(e) + "\n" for e in events])
        return self.compiled(events).decode("utf-8", "surrogateescape")

    def compiled(self, batch: EventBatch) -> bytes:
        if batch.gen is not self._parts.gen:
            self._parts = GenerationParts(batch.gen, _PARTS, _encode)
        parts = self._parts

        def other(i: int) -> bytes:  # the line of an event the core leaves to Python
            return _encode(parsed_text(batch[i]))

        code, time, m, p, g, args, extra = batch.columns()
        pieces = (parts.pieces["string"], parts.pieces["stack"], parts.pieces["extra"])
        return ccore.dump_parsed(code, time, m, p, g, args, extra, _HEADS, *pieces, parts.miss, other)


def _wire_tables(specs: list[EventSpec | None]) -> tuple[bytes, tuple[tuple[bytes, ...] | None, ...]]:
    """Per code, for the compiled core: how its record reads (0 if invalid
    in a batch, else 0x80 | argument count | 0x20 if a Stack | 0x40 if it
    has data) and its line's pieces (name, then " arg=" per argument)."""
    row = [0] * 256
    names: list[tuple[bytes, ...] | None] = [None] * 256
    for s in specs:
        if s is not None and s.code not in (EV_EVENT_BATCH, EV_EXPERIMENTAL_BATCH):
            row[s.code] = 0x80 | len(s.args) | (0x20 if s.is_stack else 0) | (0x40 if s.has_data else 0)
            names[s.code] = (s.name.encode(), *(f" {a}=".encode() for a in s.args))
    return bytes(row), tuple(names)


_WIRE = {v.minor: _wire_tables(specs_for(v)) for v in LAST_CODE}


def wire_text(frames: list[Frame], minor: int, compiled: bool | None = None) -> str:
    """``-d=wire`` lines of the frames, each ending in a newline."""
    if not use_compiled(compiled):
        return "".join([line + "\n" for line in wire_lines(frames, minor)])
    return wire_utf8(frames, minor).decode()


def wire_utf8(frames: list[Frame], minor: int) -> bytes:
    """The same on the compiled core, as UTF-8: the records of event
    batches written there, the rest by the twin."""
    table, names = _WIRE[minor]
    pieces: list[bytes] = []
    for f in frames:
        if isinstance(f, Batch) and f.exp < 0:
            pieces.extend(line.encode() + b"\n" for line in wire_lines([f], minor, records=False))
            cols = record_columns(f.payload, minor, f.payload_offset, f.gen)
            pieces.append(ccore.dump_wire(f.payload, cols.codes, cols.starts, cols.args, table, names, go_quote))
        else:
            assert isinstance(f, Batch | EndOfGeneration)
            pieces.extend(line.encode() + b"\n" for line in wire_lines([f], minor))
    return b"".join(pieces)
