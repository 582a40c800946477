"""A modern trace cut as the Go helper sends it, for the fake helpers that
replay one: the tests' (test_pool_identity.py, test_pool_bound.py) and
bench/live_scale.py's; and cut into its generations, for the carry step's
test and bench (test_carry.py, bench/carry.py)."""

from __future__ import annotations

from livetrace._trace.modern.generation import Generation, GenerationAssembler
from livetrace._trace.modern.wire import Batch, FrameReader
from livetrace._trace.version import HEADER_SIZE


def modern_chunks(data: bytes) -> list[tuple[int, bytes]]:
    """(generation, bytes) of each chunk a helper sends: the header, then each
    batch and end-of-generation byte."""
    out = [(0, data[:HEADER_SIZE])]
    gen, pos = 0, HEADER_SIZE
    reader = FrameReader()
    for f in reader.feed(data):
        if isinstance(f, Batch):
            gen = f.gen
        end = f.offset + 1 if not isinstance(f, Batch) else f.payload_offset + len(f.payload)
        out.append((gen, data[pos:end]))
        pos = end
    reader.close()
    return out


def generations(data: bytes, compiled: bool = False) -> list[Generation]:
    """A whole modern trace's generations, each complete (their tables read
    by the compiled core if ``compiled``)."""
    frames = FrameReader(None)
    got = frames.feed(data)
    assert frames.minor is not None
    asm = GenerationAssembler(frames.minor, compiled)
    gens = asm.push(got)
    frames.close()
    return gens + asm.close(frames.offset)
