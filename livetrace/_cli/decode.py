"""``livetrace decode``: dump a trace file, or standard input as it arrives.

Each layer's dump imports what it reads with: the wire layer's has no use
for the decoder (its generations and ordering) nor for the legacy reader,
so those load in the dumps that need them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TextIO

from livetrace._cli.render.dumptext import utf8_sink, wire_text, wire_utf8
from livetrace._errors import TraceFormatError
from livetrace._files import head, pieces
from livetrace._trace.accel import use_compiled
from livetrace._trace.modern.wire import FrameReader

if TYPE_CHECKING:
    pass


def dump_wire(stream: BinaryIO, out: TextIO) -> None:
    from livetrace._trace.stream import NextTrace, split_traces

    reader: FrameReader | None = None
    sink = utf8_sink(out) if use_compiled() else None
    traces = 1
    for data in split_traces(pieces(stream)):
        if isinstance(data, NextTrace):
            assert reader is not None
            reader.close()
            reader = None
            traces += 1
            out.write(gap_line(traces - 1))
            continue
        if reader is None:
            _no_legacy_wire(data)
            reader = FrameReader()
        frames = reader.feed(data)
        if frames:
            assert reader.minor is not None
            if sink is not None:
                sink(wire_utf8(frames, reader.minor))
            else:
                out.write(wire_text(frames, reader.minor, compiled=False))
            out.flush()
    (reader or FrameReader()).close()


def _no_legacy_wire(head: bytes) -> None:
    """A legacy trace has no wire layer of Go's to dump: say which dumps it has."""
    from livetrace._errors import UnsupportedTraceVersionError
    from livetrace._trace.version import header_size, sniff

    try:
        version = sniff(head[: header_size(head)])
    except TraceFormatError:
        return  # the reader says what is wrong
    if version.is_legacy:
        raise UnsupportedTraceVersionError(
            f"this is a {version.header_name} file, the legacy format of Go 1.5 to 1.21, which --dump wire "
            "does not read: use --dump legacy (what Go 1.21's `go tool trace -d` prints) or --dump parsed",
            offset=0,
        )


def gap_line(before: int) -> str:
    """The line between two traces of a stream, in a dump that has no times."""
    from livetrace._items import TraceGap

    return f"--- {TraceGap(0, 0, 0, 0, False, window=before).message} ---\n"


def dump_parsed(stream: BinaryIO, out: TextIO, binary: Path | None = None, jobs: int = 1) -> None:
    """``binary``: the program that wrote a Go 1.5/1.6 trace, to name its PCs;
    ``jobs``: a Go 1.22+ trace's generations ordered that many at once."""
    from livetrace._cli.render.dumptext import ParsedText
    from livetrace._files import decode_pieces, is_trace_gap
    from livetrace._trace.decoder import open_decoder
    from livetrace._trace.model.batch import EventBatch

    first, rest = head(stream)
    if binary is not None and open_decoder(first).legacy:
        _dump_symbolized(rest, out, binary)
        return

    dumper, sink = ParsedText(), utf8_sink(out)
    try:
        for item in decode_pieces(rest, jobs=jobs):
            if isinstance(item, EventBatch):
                dumper.write(item, out, sink)
            elif is_trace_gap(item):  # a stream of several traces: the next is its own
                out.write(f"--- {item.message} ---\n")
                dumper = ParsedText()
            # a legacy trace's footer notice is not printed
    except TraceFormatError as e:
        dumper.write(e.partial or [], out, sink)
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
    then print (its strings as they are: bytes). Each trace of a stream of
    several, one after another."""
    from livetrace._cli.render.legacy_dump import legacy_dump
    from livetrace._trace.stream import NextTrace, split_traces

    def dump(data: bytes) -> None:
        legacy_dump(data, utf8_sink(out))

    trace: list[bytes] = []
    traces = 1
    for data in split_traces(pieces(stream)):
        if isinstance(data, NextTrace):
            dump(b"".join(trace))
            trace.clear()
            traces += 1
            out.write(gap_line(traces - 1))
            out.flush()
        else:
            trace.append(data)
    dump(b"".join(trace))
