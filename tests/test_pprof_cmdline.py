"""The /debug/pprof/cmdline lookup of every http:// session against a hostile
server (issue 24, finding 5): an endless body, or a small body that inflates
(`Content-Encoding: gzip, gzip`), must cost a few KiB, not the answer's size."""

from __future__ import annotations

import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import pytest

import livetrace

HEADER = b"go 1.26 trace\0\0\0"
INFLATED = 64 << 20
# Far below what either server would make the old lookup hold (the whole body).
MAX_PEAK = 1 << 20


def _gzip(data: bytes) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    return z.compress(data) + z.flush()


def _bomb() -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    inner = b"".join(z.compress(chunk) for _ in range(INFLATED >> 20)) + z.flush()
    return _gzip(inner)


def _answer(conn: socket.socket, kind: str, bomb: bytes) -> None:
    request = conn.recv(65536)
    if b"/debug/pprof/trace" in request:
        body = HEADER + bytes(64)
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
        )
        return
    if kind == "none":
        conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        return
    if kind == "gzip":
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Encoding: gzip, gzip\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(bomb), bomb)
        )
        return
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n")
    block = b"/srv/" + b"A" * 65531
    while True:  # until the client hangs up
        conn.sendall(block)


@contextmanager
def hostile(kind: str) -> Iterator[str]:
    """A server whose /debug/pprof/trace gives a trace's first bytes and whose
    /debug/pprof/cmdline is hostile: "endless" or "gzip" (or "none": 404)."""
    bomb = _bomb() if kind == "gzip" else b""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=_one, args=(conn,), daemon=True).start()

    def _one(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            with suppress(OSError):
                _answer(conn, kind, bomb)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        listener.close()


@pytest.mark.slow
@pytest.mark.once
@pytest.mark.parametrize("kind", ["endless", "gzip"])
async def test_cmdline_lookup_is_small_and_raw(kind: str) -> None:
    with hostile("none") as url:
        # What a first session imports is not what is measured.
        async with livetrace.connect(url, window=0.1):
            pass
    with hostile(kind) as url:
        tracemalloc.start()
        try:
            start = time.monotonic()
            async with livetrace.connect(url, window=0.1) as session:
                executable = session.info.executable
            took = time.monotonic() - start
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < MAX_PEAK, f"the session held {peak / 2**20:.0f} MiB"
    # Endless: the first few KiB, no more. Compressed: not decoded, so nothing.
    assert executable == ("" if kind == "gzip" else "/srv/" + "A" * 4091)
    assert took < 5, took  # generous: a loaded machine
