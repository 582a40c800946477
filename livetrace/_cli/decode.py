"""``livetrace decode``: dump a trace file, or standard input as it arrives.

Each layer's dump imports what it reads with: the wire layer's has no use
for the decoder (its generations and ordering) nor for the legacy reader,
so those load in the dumps that need them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TextIO

from livetrace._cli.render.dumptext import utf8_sink, wire_text, wire_utf8
from livetrace._files import head, pieces
from livetrace._trace.accel import use_compiled
from livetrace._trace.modern.wire import FrameReader

if TYPE_CHECKING:
    from livetrace._trace.decoder import Item
    from livetrace._trace.model.events import Event


def dump_wire(stream: BinaryIO, out: TextIO) -> None:
    reader = FrameReader()
    sink = utf8_sink(out) if use_compiled() else None
    for data in pieces(stream):
        frames = reader.feed(data)
        if frames:
            assert reader.minor is not None
            if sink is not None:
                sink(wire_utf8(frames, reader.minor))
            else:
                out.write(wire_text(frames, reader.minor, compiled=False))
            out.flush()
    reader.close()


def dump_parsed(stream: BinaryIO, out: TextIO, binary: Path | None = None) -> None:
    """``binary``: the program that wrote a Go 1.5/1.6 trace, to name its PCs."""
    from livetrace._cli.render.dumptext import ParsedText
    from livetrace._errors import TraceFormatError
    from livetrace._trace.decoder import open_decoder
    from livetrace._trace.model.batch import EventBatch

    first, rest = head(stream)
    decoder = open_decoder(first)
    if binary is not None and decoder.legacy:
        _dump_symbolized(rest, out, binary)
        return

    dumper, sink = ParsedText(), utf8_sink(out)

    def write(events: Iterable[Event]) -> None:
        dumper.write(events, out, sink)

    def write_all(items: Iterator[Item]) -> None:
        for item in items:
            if isinstance(item, EventBatch):  # a legacy trace's footer notice is not printed
                write(item)

    try:
        for data in rest:
            write_all(decoder.feed_iter(data))
        write_all(decoder.close_iter())
    except TraceFormatError as e:
        write(e.partial or [])
        raise


def _dump_symbolized(pieces: Iterator[bytes], out: TextIO, binary: Path) -> None:
    """A legacy trace whose PCs the program binary names, then converted
    into the modern event model as Go converts it."""
    from livetrace._cli.render.dump import parsed_text
    from livetrace._go.symbols import symbolize  # runs go tool addr2line: imported for --binary only
    from livetrace._trace.legacy.convert import legacy_events
    from livetrace._trace.legacy.read import LegacyDecoder

    decoder = LegacyDecoder()
    for data in pieces:
        decoder.feed(data)
    trace = decoder.close()
    symbolize(trace, binary)
    lines: list[str] = []
    for e in legacy_events(trace):
        lines.append(parsed_text(e))
        if len(lines) == 4096:
            out.write("\n".join(lines) + "\n")
            lines.clear()
    out.write("".join(line + "\n" for line in lines))
    out.flush()


def dump_legacy(stream: BinaryIO, out: TextIO) -> None:
    """A legacy trace can only be ordered once it is complete: read it all,
    then print (its strings as they are: bytes)."""
    from livetrace._cli.render.legacy_dump import legacy_dump

    legacy_dump(b"".join(pieces(stream)), utf8_sink(out))
