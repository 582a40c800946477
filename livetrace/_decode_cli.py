"""``livetrace decode``: dump a trace file, or standard input as it arrives."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import BinaryIO, TextIO

from ._dump import legacy_lines, parsed_text, wire_lines
from ._errors import TraceFormatError
from ._events import Event
from ._legacy_decoder import LegacyDecoder
from ._modern_decoder import ModernDecoder
from ._modern_wire import FrameReader

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


def dump_parsed(stream: BinaryIO, out: TextIO) -> None:
    decoder = ModernDecoder()

    def write(events: list[Event]) -> None:
        if events:
            out.write("\n".join(map(parsed_text, events)) + "\n")
            out.flush()

    try:
        for data in _pieces(stream):
            write(decoder.feed(data))
        write(decoder.close())
    except TraceFormatError as e:
        write(getattr(e, "partial", []))
        raise


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
