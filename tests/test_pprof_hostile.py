"""`record http://...` against a hostile net/http/pprof server written here
(issue 24, finding 4): one that streams a valid trace on past its window's
end, one that announces an endless HTTP chunk, one whose trace turns to
random bytes after a valid header. Each must end within bounded time and
bytes, with a typed error and an ``.incomplete`` file, never "trace
complete"."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from livetrace._errors import TraceFormatError, TruncatedTraceError
from livetrace._session.limits import STOP_DRAIN_MARGIN
from livetrace._trace.framing import Framing

from .conftest import cli
from .test_hostile_peer import finish, one_error_line
from .textform import CORPUS, load

MODERN = load(CORPUS / "go122-gc-stress.test").data
LEGACY = (Path(__file__).parent / "corpus" / "legacy" / "go-testdata" / "stress_1_21_good").read_bytes()
HEADER_SIZE = 16
WINDOW = 1.0  # seconds: `record --duration 1` asks for one window of a second
# Past the window's end the client takes the runtime's last buffers, at most
# STOP_DRAIN_MARGIN; the bytes of the window itself are few here.
MOST_KEPT = STOP_DRAIN_MARGIN + (8 << 20)

Behaviour = Callable[[socket.socket], None]


def _head(sock: socket.socket, extra: str = "") -> None:
    sock.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n" + extra.encode() + b"Connection: close\r\n\r\n"
    )


def _serve_one(conn: socket.socket, behave: Behaviour) -> None:
    with conn:
        conn.settimeout(60)
        request = b""
        while b"\r\n\r\n" not in request:
            piece = conn.recv(4096)
            if not piece:
                return
            request += piece
        if b"/cmdline" in request.split(b"\r\n", 1)[0]:
            conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        with contextlib.suppress(OSError):  # the client gave up: what the test checks is the client's side
            behave(conn)


@contextmanager
def hostile_pprof(behave: Behaviour) -> Iterator[str]:
    """A plain socket server on 127.0.0.1 answering /debug/pprof/trace with ``behave``."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    closing = threading.Event()

    def serve() -> None:
        while not closing.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=_serve_one, args=(conn, behave), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        closing.set()
        thread.join(30)
        listener.close()


def _flood_after_the_window(sock: socket.socket, trace: bytes, send: Callable[[bytes], None]) -> None:
    """The header and a little of the trace, then, once the window is
    over, its batches again and again, without end."""
    send(trace)
    time.sleep(WINDOW + 0.3)
    body = trace[HEADER_SIZE:] * max(1, (1 << 20) // len(trace))
    while True:
        send(body)


def endless_valid_trace(sock: socket.socket) -> None:
    _head(sock)
    _flood_after_the_window(sock, MODERN, sock.sendall)


def one_endless_chunk(sock: socket.socket) -> None:
    _head(sock, "Transfer-Encoding: chunked\r\n")
    sock.sendall(b"ffffffffffffffff\r\n")  # 2**64 - 1 bytes to come, in one chunk
    _flood_after_the_window(sock, MODERN, sock.sendall)


def header_then_random(trace: bytes) -> Behaviour:
    def behave(sock: socket.socket) -> None:
        body = trace[:HEADER_SIZE] + os.urandom(1 << 20)
        _head(sock, f"Content-Length: {len(body)}\r\n")
        sock.sendall(body)

    return behave


def _record(base: str, out: Path) -> tuple[int, str]:
    start = time.monotonic()
    code, _, err = finish(cli("record", base, "-o", str(out), "--duration", "1"), timeout=120)
    assert time.monotonic() - start < 90, err
    return code, err


def _kept(out: Path) -> Path:
    assert not out.exists(), "an unfinished window must not take the final name"
    kept = out.with_name(out.name + ".incomplete")
    assert kept.exists()
    return kept


@pytest.mark.slow
@pytest.mark.once
@pytest.mark.parametrize("behave", [endless_valid_trace, one_endless_chunk], ids=["endless-trace", "endless-chunk"])
def test_a_window_that_never_ends_is_cut_off(tmp_path: Path, behave: Behaviour) -> None:
    out = tmp_path / "flood.trace"
    with hostile_pprof(behave) as base:
        code, err = _record(base, out)
    assert code == 1 and "trace complete" not in err, err
    line = one_error_line(err)
    assert "bytes past the end of pprof window 1 without ending it" in line, line
    size = _kept(out).stat().st_size
    # About the cap: the piece in hand when it tripped (at most a read's
    # worth) may not be written.
    assert STOP_DRAIN_MARGIN - (1 << 20) < size < MOST_KEPT, size


@pytest.mark.once
@pytest.mark.parametrize("trace", [MODERN, LEGACY], ids=["modern", "legacy"])
def test_random_bytes_after_a_valid_header_are_not_a_complete_trace(tmp_path: Path, trace: bytes) -> None:
    out = tmp_path / "garbage.trace"
    with hostile_pprof(header_then_random(trace)) as base:
        code, err = _record(base, out)
    assert code == 1 and "trace complete" not in err, err
    line = one_error_line(err)
    assert "sent bytes that are not a Go execution trace in pprof window 1" in line, line
    assert _kept(out).read_bytes().startswith(trace[:HEADER_SIZE])


@pytest.mark.once
def test_a_valid_window_is_still_complete(tmp_path: Path) -> None:
    """The checks pass a real trace: the corpus's bytes as a window."""

    def behave(sock: socket.socket) -> None:
        _head(sock, f"Content-Length: {len(MODERN)}\r\n")
        sock.sendall(MODERN)

    out = tmp_path / "fine.trace"
    with hostile_pprof(behave) as base:
        code, err = _record(base, out)
    assert code == 0 and "trace complete" in err, err
    assert out.read_bytes() == MODERN


@pytest.mark.once
def test_export_of_a_malformed_live_trace_is_one_line(tmp_path: Path) -> None:
    """Issue 24, finding 11: export's two subscribers both end with the
    session's error; the user sees it once, as one line, not as a group."""
    out = tmp_path / "x.pftrace"
    with hostile_pprof(header_then_random(MODERN)) as base:
        code, _, err = finish(cli("export", base, "-o", str(out), "--duration", "1"), timeout=120)
    assert code != 0, err
    assert "Traceback" not in err and "ExceptionGroup" not in err, err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and len(err.splitlines()) <= 3, err
    assert "where a batch should start" in errors[0] or "not a Go execution trace" in errors[0], err


LEGACY_CORPUS = sorted((Path(__file__).parent / "corpus" / "legacy" / "go-testdata").glob("*_good"))


# The framing check is plain Python, whichever core decodes: once. The
# stress traces (300 KB and more, a second and more each in 997-byte
# pieces) are slow.
@pytest.mark.once
@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=[pytest.mark.slow] if p.stat().st_size > 100_000 else []) for p in LEGACY_CORPUS],
    ids=[p.name for p in LEGACY_CORPUS],
)
def test_the_framing_check_takes_every_legacy_trace_in_any_pieces(path: Path) -> None:
    data = path.read_bytes()
    for step in (997, 1 << 16):
        framing = Framing(data[:HEADER_SIZE])
        for i in range(HEADER_SIZE, len(data), step):
            framing.feed(data[i : i + step])
        framing.close()
    cut = Framing(data[: len(data) - 1])
    with pytest.raises(TruncatedTraceError):
        cut.close()


def test_the_framing_check_takes_a_modern_trace_and_refuses_it_cut() -> None:
    framing = Framing(MODERN)
    framing.close()
    with pytest.raises(TruncatedTraceError):
        Framing(MODERN[:-1]).close()
    with pytest.raises(TraceFormatError):
        Framing(MODERN[:HEADER_SIZE] + b"\xff")
