"""``livetrace decode``: dump a trace file, or standard input as it arrives.

Each layer's dump imports what it reads with: the wire layer's has no use
for the decoder (its generations and ordering) nor for the legacy reader,
so those load in the dumps that need them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TextIO

from livetrace._cli.render.dumptext import utf8_sink, wire_text, wire_utf8
from livetrace._errors import TraceFormatError
from livetrace._files import head, pieces
from livetrace._trace.accel import use_compiled
from livetrace._trace.modern.wire import Frame, FrameReader

if TYPE_CHECKING:
    pass


def dump_wire(stream: BinaryIO, out: TextIO) -> None:
    """Go 1.22+ traces' frames, a line per record; where the framing breaks
    (a size that does not match the events, a cut, a record past its
    batch's end), the rest of that trace as Go's raw reader reads it, which
    never looks at a batch's size (``modern/raw.py``)."""
    from livetrace._trace.stream import NextTrace, split_traces

    reader: FrameReader | None = None
    sink = utf8_sink(out) if use_compiled() else None
    traces = 1
    parts = iter(split_traces(pieces(stream)))
    for data in parts:
        if isinstance(data, NextTrace):
            assert reader is not None
            _close_wire(reader, out)
            reader = None
            traces += 1
            out.write(gap_line(traces - 1))
            continue
        if reader is None:
            _no_legacy_wire(data)
            reader = FrameReader()
        at, held = reader.unread_bytes()
        frames, failed = reader.feed_until_error(data)
        if reader.minor is None:
            if failed is not None:
                raise failed
            continue
        minor = reader.minor
        stop = _write_frames(frames, minor, out, sink)
        if stop is None and failed is not None:
            stop = failed.offset
        if stop is None:
            continue
        # The framing broke at stop: the rest of this trace, read whole, as Go's raw reader reads it.
        rest = [(held + data)[stop - at :]]
        for more in parts:
            if isinstance(more, NextTrace):
                _write_raw(b"".join(rest), minor, stop, out)
                reader = None
                traces += 1
                out.write(gap_line(traces - 1))
                break
            rest.append(more)
        else:
            _write_raw(b"".join(rest), minor, stop, out)
            return
    if reader is None:
        FrameReader().close()  # an empty stream: the reader says so
        return
    _close_wire(reader, out)


def _write_frames(frames: list[Frame], minor: int, out: TextIO, sink: Callable[[bytes], None] | None) -> int | None:
    """Write the frames' lines; where a frame's records break, those before
    it, and its offset (None: all were written)."""

    def text(some: list[Frame]) -> bytes:
        return (
            wire_utf8(some, minor)
            if sink is not None
            else wire_text(some, minor, compiled=False).encode("utf-8", "surrogateescape")
        )

    try:
        pieces = [text(frames)] if frames else []
    except TraceFormatError:  # one at a time, to write those before it
        pieces = []
        for f in frames:
            try:
                pieces.append(text([f]))
            except TraceFormatError:
                _write_utf8(pieces, out, sink)
                return f.offset
    _write_utf8(pieces, out, sink)
    return None


def _write_utf8(pieces: list[bytes], out: TextIO, sink: Callable[[bytes], None] | None) -> None:
    for piece in pieces:
        if sink is not None:
            sink(piece)
        else:
            out.write(piece.decode("utf-8", "surrogateescape"))
    out.flush()


def _close_wire(reader: FrameReader, out: TextIO) -> None:
    """The trace's end: a batch cut short is read on as Go's raw reader does."""
    try:
        reader.close()
    except TraceFormatError:
        if reader.minor is None:
            raise
        at, rest = reader.unread_bytes()
        _write_raw(rest, reader.minor, at, out)


def _write_raw(data: bytes, minor: int, offset: int, out: TextIO) -> None:
    """Lines of Go's raw reader for data (at ``offset`` in the stream); its
    error, if it had one, raised after them."""
    from livetrace._cli.render.dump import raw_lines
    from livetrace._trace.modern.raw import read_raw

    events, error = read_raw(data, 0, minor, offset)
    out.write("".join(line + "\n" for line in raw_lines(events)))
    out.flush()
    if error is not None:
        raise error


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
