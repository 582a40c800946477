"""Mutations of real streams for the fuzz tests: flipped, cut, inserted and
deleted bytes."""

from __future__ import annotations

from hypothesis import strategies as st


def mutate(data: st.DataObject, original: bytes, keep: int = 0) -> bytes:
    """original with a few random mutations, leaving its first keep bytes alone."""
    buf = bytearray(original)
    for _ in range(data.draw(st.integers(1, 6))):
        pos = data.draw(st.integers(keep, max(keep, len(buf))))
        op = data.draw(st.sampled_from(["flip", "cut", "insert", "delete"]))
        if op == "flip" and pos < len(buf):
            buf[pos] = data.draw(st.integers(0, 255))
        elif op == "cut":
            del buf[pos:]
        elif op == "insert":
            buf[pos:pos] = data.draw(st.binary(min_size=1, max_size=12))
        elif op == "delete":
            del buf[pos : pos + data.draw(st.integers(1, 12))]
    return bytes(buf)
