"""``livetrace decode``: dump a trace file, or standard input as it arrives."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import BinaryIO, TextIO

from ._dump import wire_lines
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


def open_input(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    return open(path, "rb")  # noqa: SIM115 - the caller closes it
