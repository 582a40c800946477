"""What the command line says, word for word where it was wrong (issue 26,
point 8): an HTTP server given as a helper's address, counts and their
plurals, advice a command-line user can follow, a truncated or missing
file, a trace file given where a live address goes, a bad number, a name
cut to fit top's column; and the record summary's duration, against Go
services built in the test."""

from __future__ import annotations

import argparse
import http.server
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from io import StringIO
from pathlib import Path

import pytest
import trio
from rich.console import Console

import livetrace
from livetrace._cli.exits import EXIT_ERROR, EXIT_INCOMPLETE
from livetrace._cli.main import main
from livetrace._cli.record import record_command, report
from livetrace._items import SubscriberGap
from livetrace._plural import plural
from livetrace._protocol.frames import SessionInfo
from livetrace._session.recording import Recording
from livetrace._views.top import Group
from livetrace._views.top_screen import View, goroutines_table

from . import textform
from .conftest import demo
from .plainsvc import plain_service

LEGACY = textform.CORPUS.parent / "legacy" / "go-testdata"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def http_server() -> Iterator[int]:
    """A real HTTP server on loopback (Python's, as silent as Go's until a request line ends)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def eager_http_server() -> Iterator[int]:
    """A server that answers every connection with an HTTP error at once, as some do for a bad request."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        listener.close()


@pytest.mark.once
@pytest.mark.parametrize("server", [http_server, eager_http_server])
def test_an_http_port_without_http_is_named_at_once(server: object, capsys: pytest.CaptureFixture[str]) -> None:
    with server() as port:  # type: ignore[operator]  # one of the two context managers above
        began = time.monotonic()
        code, out, err = run(capsys, "tail", f"127.0.0.1:{port}", "--duration", "1")
        took = time.monotonic() - began
    assert code == EXIT_ERROR and out == ""
    assert err == (
        f"livetrace: error: an HTTP server answered at tcp:127.0.0.1:{port}, not a livetrace helper: for a "
        f"service that serves net/http/pprof there, try http://127.0.0.1:{port}\n"
    )
    assert took < 10, "at once, not after the handshake's 15 s timeout"


def test_plural() -> None:
    assert [plural(n, "gap") for n in (0, 1, 2, 1200)] == ["0 gaps", "1 gap", "2 gaps", "1,200 gaps"]
    assert plural(1, "process", "processes") == "1 process" and plural(3, "batch", "batches") == "3 batches"


def test_counts_of_one_are_singular() -> None:
    info = SessionInfo(1, "h", "go1.26.6", "linux", "amd64", 7, "svc", 4, 0, 1 << 20, 1)
    rec = Recording(info, paths=[Path("x.trace")], generations=1)
    rec.counters.chunks, rec.counters.bytes = 1, 100
    rec.counters.dropped_chunks, rec.counters.dropped_generations = 1, 1
    err = StringIO()
    report(rec, err, 1.0)
    text = err.getvalue()
    assert "fell behind: 1 chunk (0 B) dropped, 1 generation shed" in text
    assert "100 B in 1 chunk over 1.0 s (100 B/s), 1 generation" in text
    assert "1 chunks" not in text and "1 generations" not in text
    assert "lost 1 batch, 1 event" in SubscriberGap(1, 1, None, None).message


def test_decode_dump_wire_of_a_legacy_trace_names_the_dumps_that_read_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "decode", "--dump", "wire", str(LEGACY / "http_1_21_good"))
    assert code == EXIT_INCOMPLETE and out == ""
    assert "--dump legacy" in err and "--dump parsed" in err and "LegacyDecoder" not in err


def test_a_truncated_legacy_trace_ends_early(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cut.trace"
    path.write_bytes((LEGACY / "http_1_10_good").read_bytes()[:40])  # whole events, then nothing: no footer
    code, out, err = run(capsys, "decode", str(path))
    assert code == EXIT_INCOMPLETE and out == ""
    assert err.startswith("livetrace: error: trace ends early: its footer") and "EvFrequency" in err


def test_an_empty_file_prints_nothing_on_standard_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.trace"
    path.write_bytes(b"")
    assert run(capsys, "decode", str(path)) == (
        EXIT_INCOMPLETE,
        "",
        "livetrace: error: empty trace: no header (offset 0)\n",
    )
    path.write_bytes(b"go 1.2")
    assert run(capsys, "decode", str(path))[:2] == (EXIT_INCOMPLETE, "")


def test_a_missing_file_or_a_directory_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nonexistent.trace"
    assert run(capsys, "decode", str(missing)) == (EXIT_ERROR, "", f"livetrace: error: no such file: {missing}\n")
    code, out, err = run(capsys, "decode", str(tmp_path))
    assert (code, out) == (EXIT_ERROR, "")
    assert err == f"livetrace: error: {tmp_path} is a directory: give a trace file, or - for standard input\n"


@pytest.mark.once
@pytest.mark.parametrize("command", ["tail", "top", "record", "flight"])
def test_a_trace_file_given_as_an_address_is_named_for_what_it_is(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bare path is a helper's unix socket; connecting to a regular file
    is refused by Linux like a socket nobody serves, which is no help."""
    recorded = tmp_path / "service.trace"
    recorded.write_bytes(b"go 1.26 trace\x00\x00\x00")
    stale = tmp_path / "stale.sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(stale))  # bound, never listening: a service that died
    extra = {"record": ["-o", str(tmp_path / "out.trace")], "flight": ["-t", "gc>1s", "-o", str(tmp_path)]}
    for path, what in [(recorded, "a file"), (tmp_path, "a directory"), (Path("/dev/null"), "a device or a pipe")]:
        code, out, err = run(capsys, command, str(path), "--duration", "1", *extra.get(command, []))
        assert (code, out) == (EXIT_ERROR, ""), "at once: flight does not wait for a file to become a socket"
        first = err.splitlines()[0]  # (flight's summary follows)
        assert first.startswith(f"livetrace: error: {path} is {what}, not a socket: this command attaches to a live")
        assert first.endswith("a recorded trace is read by `livetrace decode`, `profile`, `export` or `sql`")
    if command == "flight":
        return  # which tries again there, as the service may come back: that waits in real time
    code, out, err = run(capsys, command, str(stale), "--duration", "1", *extra.get(command, []))
    assert (code, out) == (EXIT_ERROR, "")
    assert "Connection refused; is the service listening there?" in err and "not a socket" not in err


@pytest.mark.parametrize("option", ["--duration", "--window", "--stop-timeout"])
def test_a_bad_number_of_seconds_says_what_one_looks_like(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["record", "http://127.0.0.1:1", "-o", "x.trace", option, "abc"])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert "'abc' is not a number of seconds, such as 5 or 0.5" in err and "invalid" not in err


def test_top_keeps_the_end_of_a_start_function_in_80_columns() -> None:
    snap = argparse.Namespace(
        groups=[
            Group("main.main.func1.gowrap2", 1, 5, 1, 0, {"sync": 1}),
            Group("net/http.(*conn).serve", 12, 5_000_000, 1000, 3000, {"network": 9_000_000_000}),
            Group("main.worker", 3, 1_234_567_890, 2_000_000, 0, {"chan receive": 1_500_000_000}),
        ]
    )
    console = Console(width=80, record=True, force_terminal=False)
    console.print(goroutines_table(snap, View()))  # type: ignore[arg-type]  # the groups are all it reads
    lines = console.export_text().splitlines()
    rows = {name: next((line for line in lines if name[-5:] in line), "") for name in ("gowrap2", "serve", "worker")}
    for name, line in rows.items():
        assert "…" in line and line.split()[0].endswith(name), (name, lines)
    assert not any(line.strip().startswith(("main.mai", "net/http.")) for line in lines), lines


async def _recorded(version: str, pprof: bool, tmp: Path) -> tuple[str, list[int]]:
    err = StringIO()
    out = tmp / f"{version}.trace"
    if pprof:
        async with plain_service(version) as svc:
            await record_command(f"http://{svc.pprof}", out, duration=2, token=None, progress=False, err=err)
    else:
        async with demo(version) as d:
            await record_command(d.trace_address, out, duration=2, token=None, progress=False, err=err)
    times = [e.time for e in livetrace.decode(out)]
    return err.getvalue().splitlines()[-1], times


@pytest.mark.slow
@pytest.mark.once
@pytest.mark.parametrize("version", ["1.26", "1.21"])
@pytest.mark.parametrize("pprof", [True, False], ids=["pprof", "helper"])
def test_record_reports_how_long_it_traced(version: str, pprof: bool, tmp_path: Path) -> None:
    """ "over 0.0 s" for a 5 s window: a quiet service's window comes all at
    its end. The summary says how long the trace ran, as the trace's own
    events do (a pprof window: the seconds it asked for)."""
    summary, times = trio.run(_recorded, version, pprof, tmp_path)
    seconds = float(summary.split(" over ")[1].split(" s ")[0])
    assert summary.startswith("livetrace: recorded ") and "trace complete" in summary
    assert seconds == pytest.approx(2.0, abs=0.25)
    assert seconds == pytest.approx((max(times) - min(times)) / 1e9, abs=0.3)
