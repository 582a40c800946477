"""http://HOST:PORT sessions: a service with net/http/pprof and no helper,
traced in /debug/pprof/trace windows back to back (issue 13, section 3)."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import trio

import livetrace
from livetrace._cli.render.dump import parsed_text
from livetrace._errors import HTTPAuthError, HTTPRedirectError, HTTPTLSError, NotPprofEndpointError
from livetrace._items import WindowEnd, WindowGap
from livetrace._session.pprof_http import parse_pprof_address

from .conftest import cli, demo, go_dump, go_tool_trace
from .plainsvc import plain_service

HEADER = b"go 1.26 trace\0\0\0"
GAP_LINE = re.compile(r"no trace for (\d+\.\d) ms between pprof windows 1 and 2")
# record does not decode: its gaps are the time between the windows' bytes.
BYTES_GAP_LINE = re.compile(r"no trace between pprof windows 1 and 2, whose bytes came (\d+\.\d) ms apart")


class _Handler(BaseHTTPRequestHandler):
    """Answers /debug/pprof/trace the ways a server that is not (quite)
    net/http/pprof does, chosen by the address's path prefix."""

    server: _Server

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        kind = self.path.split("/")[1]
        if self.path.split("?")[0].endswith("/cmdline") or kind == "nf":
            self._answer(404, b"404 page not found\n")
        elif kind == "slow":
            self.server.release.wait(30)
        elif kind == "redirect":
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.1:1/debug/pprof/trace")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif kind == "auth":
            self._answer(401, b"Unauthorized\n")
        elif kind == "html":
            self._answer(200, b"<html><body>welcome</body></html>\n", "text/html")
        elif kind == "busy":
            self._answer(500, b"Could not enable tracing: execution tracer already enabled\n")
        elif kind == "tls":
            self._answer(400, b"Client sent an HTTP request to an HTTPS server.\n")
        elif kind == "drop":  # a window cut short: less than the length announced
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(HEADER)
            self.wfile.flush()

    def _answer(self, status: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    release: threading.Event


@contextmanager
def odd_server() -> Iterator[str]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.release = threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()


def test_addresses_take_a_prefix_and_refuse_https() -> None:
    assert str(parse_pprof_address("http://127.0.0.1:6060")) == "http://127.0.0.1:6060"
    assert str(parse_pprof_address("http://h:1/admin/debug/pprof/")) == "http://h:1/admin"
    assert parse_pprof_address("HTTP://h:1/debug/pprof/trace").trace_url == "http://h:1/debug/pprof/trace"
    with pytest.raises(HTTPTLSError, match="https:// is not supported"):
        parse_pprof_address("https://h:1")
    with pytest.raises(ValueError, match="expected http://HOST:PORT"):
        parse_pprof_address("http://h:1/debug/pprof/trace?seconds=5")


async def _error(url: str, **kw: object) -> livetrace.LivetraceError:
    with pytest.raises(livetrace.LivetraceError) as e:
        async with livetrace.connect(url, **kw):  # type: ignore[arg-type]  # the keywords are connect's
            pass
    assert "\n" not in str(e.value)
    return e.value


@pytest.mark.once
async def test_each_failure_is_one_typed_line(tmp_path: Path) -> None:
    with odd_server() as base:
        e = await _error(base + "/nf")
        assert isinstance(e, NotPprofEndpointError) and str(e).startswith("not a net/http/pprof endpoint: ")
        assert isinstance(await _error(base + "/html"), NotPprofEndpointError)
        e = await _error(base + "/redirect")
        assert isinstance(e, HTTPRedirectError) and e.location == "http://127.0.0.1:1/debug/pprof/trace"
        assert isinstance(await _error(base + "/auth"), HTTPAuthError)
        e = await _error(base + "/busy")
        assert isinstance(e, livetrace.AlreadyTracingError) and "another /debug/pprof/trace client" in str(e)
        assert isinstance(await _error(base + "/tls"), HTTPTLSError)
        e = await _error(base + "/slow", window=0.1, idle_timeout=0.3)
        assert isinstance(e, livetrace.PeerTimeoutError) and "no trace came" in str(e)
        # A window cut short: what came is kept, marked incomplete.
        async with livetrace.connect(base + "/drop") as session:
            rec = await livetrace.record(session, tmp_path / "cut.trace")
        assert isinstance(rec.error, livetrace.ConnectionLostError) and "that window is incomplete" in str(rec.error)
        assert rec.paths == [tmp_path / "cut.trace.incomplete"] and not rec.complete
        # And as a user sees one: a line, status 2.
        proc = await trio.to_thread.run_sync(lambda: cli("tail", base + "/nf").communicate(timeout=60))
    assert proc[1].startswith("livetrace: error: not a net/http/pprof endpoint: ") and proc[1].count("\n") == 1
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nobody listens there
    e = await _error(f"http://127.0.0.1:{port}")
    assert type(e) is livetrace.ConnectError and "could not connect" in str(e)
    with pytest.raises(ValueError, match="http:// addresses"):
        async with livetrace.connect("unix:/nonexistent", window=1.0):
            pass


@pytest.mark.slow
@pytest.mark.once
@pytest.mark.parametrize("version", ["1.26", "1.21"])
async def test_record_and_tail_through_pprof(version: str, tmp_path: Path) -> None:
    """record --duration 5 --window 2 writes three windows that the same
    toolchain's tool opens, with the gaps measured between them; tail on
    the demo's pprof port prints events; a held tracer is AlreadyTracingError."""
    out = tmp_path / "w.trace"
    async with plain_service(version) as svc, demo(version, args=["-workers", "1"]) as d:
        record = cli("record", f"http://{svc.pprof}", "-o", str(out), "--duration", "5", "--window", "2")
        tail = cli("tail", d.http, "--duration", "2.5", "-k", "Sync")
        _, rec_err = await trio.to_thread.run_sync(lambda: record.communicate(timeout=120))
        tail_out, tail_err = await trio.to_thread.run_sync(lambda: tail.communicate(timeout=120))
    assert record.returncode == 0, rec_err
    paths = [out, tmp_path / "w.2.trace", tmp_path / "w.3.trace"]
    assert sorted(tmp_path.iterdir()) == sorted(paths), rec_err
    for path in paths:
        go_tool_trace(version, path)
    gap = BYTES_GAP_LINE.search(rec_err)
    assert gap and float(gap.group(1)) > 0, rec_err
    assert tail.returncode == 0, tail_err
    assert " Sync " in tail_out and GAP_LINE.search(tail_out), tail_err
    if version == "1.26":
        async with plain_service(version, hold_tracer=True) as held:
            with pytest.raises(livetrace.AlreadyTracingError, match="Could not enable tracing"):
                async with livetrace.connect(f"http://{held.pprof}"):
                    pass


@pytest.mark.slow
@pytest.mark.once
async def test_live_window_events_are_the_window_file_s(tmp_path: Path) -> None:
    """The events a session decodes live from a window are those Go's own
    tool reads in that window's recorded file."""
    async with demo("1.26", args=["-workers", "1"]) as d:
        async with livetrace.connect(d.http, window=0.5, duration=1.0) as session:
            assert session.info.helper == "net/http/pprof" and session.info.go_version.startswith("go1.2")
            live: list[list[str]] = [[]]
            frames: list[object] = []
            batches = session.event_batches()  # subscribed before the first frame is read
            raw = session.subscribe(what="frames", lossless=True)

            async def collect() -> None:
                async for item in batches:
                    if isinstance(item, WindowGap):
                        live.append([])
                    elif isinstance(item, livetrace.EventBatch):
                        live[-1] += map(parsed_text, item)

            async def watch() -> None:
                frames.extend([f async for f in raw if not isinstance(f, livetrace.Chunk)])

            async with trio.open_nursery() as nursery:
                nursery.start_soon(collect)
                nursery.start_soon(watch)
                rec = await livetrace.record(session, tmp_path / "w.trace")
    assert rec.complete and len(rec.paths) == 2 and len(live) == 2
    assert [type(f) for f in frames] == [WindowEnd, WindowGap]
    assert frames[1].seconds > 0  # type: ignore[attr-defined]  # a WindowGap
    status, expected, err = go_dump(rec.paths[1], "parsed")
    assert status == 0, err
    assert "\n".join(live[1]) + "\n" == expected


@pytest.mark.slow
@pytest.mark.once
async def test_a_reader_that_holds_the_session_up_is_not_a_silent_server() -> None:
    """While the reader lags, the window's bytes wait in the server: the
    idle timeout counts the server's silence, not ours. A reader away for
    six idle timeouts in the middle of a window still gets it whole."""
    async with plain_service("1.26") as svc:
        async with livetrace.connect(f"http://{svc.pprof}", window=2, duration=2, idle_timeout=0.5) as session:
            first = await session.chunks().__anext__()
            await trio.sleep(3)  # the frames buffer fills, and the window waits on us
            rest = [f async for f in session.chunks()]
    assert session.end is not None and session.end.complete, session.end
    assert isinstance(first, livetrace.Chunk) and len(rest) > 16
