"""write_bytes puts a batch's pieces out in one writev (IOV_MAX at a time):
into a small non-blocking pipe read slowly, where each call takes part of
a piece, every byte still comes out once, in order."""

from __future__ import annotations

import fcntl
import os
import threading
import time

import pytest

from livetrace._cli.output import IOV_MAX, write_bytes

pytestmark = pytest.mark.once


def test_pieces_cut_anywhere_come_out_whole_and_in_order() -> None:
    pieces = [bytes([i % 251]) * (i * 37 % 1500) for i in range(IOV_MAX + 300)]  # some empty, more than one writev
    r, w = os.pipe()
    fcntl.fcntl(w, getattr(fcntl, "F_SETPIPE_SZ", 1031), 4096)
    os.set_blocking(w, False)
    got = bytearray()

    def read() -> None:
        while chunk := os.read(r, 3000):
            got.extend(chunk)
            time.sleep(0.0001)

    reader = threading.Thread(target=read)
    reader.start()
    with os.fdopen(w, "w") as out:
        write_bytes(out, pieces)
    reader.join(timeout=30)
    os.close(r)
    assert bytes(got) == b"".join(pieces)
