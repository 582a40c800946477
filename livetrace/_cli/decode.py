"""``livetrace decode``: dump a trace file, or standard input as it arrives."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from collections.abc import Iterable, Iterator
from typing import BinaryIO, TextIO

from livetrace._cli.render.dump import legacy_lines, parsed_text, wire_lines
from livetrace._errors import TraceFormatError
from livetrace._trace.model.events import Event
from livetrace._trace.legacy.read import LegacyDecoder
from livetrace._trace.legacy.fast import exact_events
from livetrace._trace.legacy.convert import legacy_events
from livetrace._go.symbols import symbolize
from livetrace._trace.modern.decoder import ModernDecoder
from livetrace._trace.modern.wire import FrameReader
from livetrace._trace.version import HEADER_SIZE, header_size, sniff

READ_SIZE = 1 << 20


def _pieces(stream: BinaryIO) -> Iterator[bytes]:
    # read1 returns what is available instead of waiting for a full buffer,
    # so a pipe is decoded as it arrives.
    read = getattr(stream, "read1", stream.read)
    while data := read(READ_SIZE):
        yield data


def dump_wire(stream: BinaryIO, out: TextIO) -> None:
    reader = FrameReader()
    for data in _pieces(stream):
        frames = reader.feed(data)
        if frames:
            assert reader.minor is not None
            out.write("\n".join(wire_lines(frames, reader.minor)) + "\n")
            out.flush()
    reader.close()


def _head(stream: BinaryIO) -> tuple[bytes, Iterator[bytes]]:
    """The stream's first 16 bytes (fewer if it is shorter), and all its pieces."""
    pieces = _pieces(stream)
    head = b""
    for data in pieces:
        head += data
        if len(head) >= HEADER_SIZE:
            break
    return head, itertools.chain([head], pieces)


def dump_parsed(stream: BinaryIO, out: TextIO, binary: Path | None = None) -> None:
    """``binary``: the program that wrote a Go 1.5/1.6 trace, to name its PCs."""
    head, pieces = _head(stream)
    size = header_size(head)
    # (Too short for a header: the modern decoder says how.)
    if len(head) >= size and sniff(head[:size]).is_legacy:
        _dump_legacy_parsed(pieces, out, binary)
        return
    decoder = ModernDecoder()

    def write(events: list[Event]) -> None:
        if events:
            out.write("\n".join(map(parsed_text, events)) + "\n")
            out.flush()

    try:
        for data in pieces:
            write(decoder.feed(data))
        write(decoder.close())
    except TraceFormatError as e:
        write(getattr(e, "partial", []))
        raise


def _dump_legacy_parsed(pieces: Iterator[bytes], out: TextIO, binary: Path | None) -> None:
    """Go's conversion of a legacy trace into the modern event model, which
    can only begin once the trace is complete."""
    if binary is None:
        events: Iterable[Event] = (e for b in exact_events(b"".join(pieces)).batches for e in b)
    else:
        decoder = LegacyDecoder()
        for data in pieces:
            decoder.feed(data)
        trace = decoder.close()
        symbolize(trace, binary)
        events = legacy_events(trace)
    lines: list[str] = []
    for e in events:
        lines.append(parsed_text(e))
        if len(lines) == 4096:
            out.write("\n".join(lines) + "\n")
            lines.clear()
    out.write("".join(line + "\n" for line in lines))
    out.flush()


def dump_legacy(stream: BinaryIO, out: TextIO) -> None:
    """A legacy trace can only be ordered once it is complete: read it all,
    then print (its strings as they are: bytes)."""
    decoder = LegacyDecoder()
    for data in _pieces(stream):
        decoder.feed(data)
    trace = decoder.close()
    out.flush()
    buffer = out.buffer if hasattr(out, "buffer") else None
    for i in range(0, len(trace.events), 4096):
        text = b"".join(line + b"\n" for line in legacy_lines(trace.events[i : i + 4096]))
        if buffer is not None:
            buffer.write(text)
        else:
            out.write(text.decode("utf-8", "surrogateescape"))
    if buffer is not None:
        buffer.flush()


def open_input(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    return open(path, "rb")  # noqa: SIM115 - the caller closes it
