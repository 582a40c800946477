"""The consumer against hostile or broken helpers: a fake helper written here
(a Python server on a unix socket in tmp, or on loopback TCP, or TLS) speaks
the protocol of docs/protocol.md and then misbehaves: malformed values,
silence, endless streams, huge frames, someone else's socket, escape
sequences. The client must end with a typed error and a clear line, never
a traceback or a hang, and keep what it received."""

from __future__ import annotations

import hashlib
import json
import os
import select
import shutil
import socket
import ssl
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Self

import pytest
import trio

import livetrace
from livetrace._errors import (
    LimitExceededError,
    PeerCredentialsError,
    PeerTimeoutError,
    TLSVerificationError,
)
from livetrace._protocol import frames as proto

from .conftest import cli
from .textform import uvarint

# The protocol and the session's deadlines: no decoding, so the twin's pass would only repeat them.
pytestmark = pytest.mark.once

HANDSHAKE = {
    "protocol": 1,
    "helper": "hostile",
    "go_version": "go1.26.6",
    "goos": "linux",
    "goarch": "amd64",
    "pid": 4242,
    "executable": "/srv/hostile",
    "gomaxprocs": 2,
    "start_unix_ns": 1_700_000_000_000_000_000,
    "queue_bytes": 1 << 20,
    "session": 1,
    "advance_ms": 0,
    "segment_ms": 0,
}
HEADER = b"go 1.26 trace\x00\x00\x00"
END = {"reason": "client-stop", "complete": True, "chunks": 1, "bytes": len(HEADER)}


def batch(gen: int, payload: bytes, m: int = 1, t: int = 1000) -> bytes:
    """A modern trace batch frame (EventBatch): only its header is read
    before its generation ends."""
    return b"\x01" + uvarint(gen) + uvarint(m) + uvarint(t) + uvarint(len(payload)) + payload


class Conn:
    """One client connection, seen from the fake helper."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.hello: dict[str, Any] = {}
        self.client_frames: list[int] = []
        self._seq = 0

    def read_exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            piece = self.sock.recv(n - len(data))
            if not piece:
                raise EOFError
            data += piece
        return data

    def read_frame(self) -> tuple[int, bytes]:
        ftype, n = struct.unpack(">BI", self.read_exact(5))
        return ftype, self.read_exact(n)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def frame(self, ftype: int, payload: bytes = b"") -> None:
        self.send(proto.encode_frame(ftype, payload))

    def json(self, ftype: int, obj: Any) -> None:
        self.frame(ftype, json.dumps(obj).encode())

    def handshake(self, **changes: Any) -> None:
        self.json(proto.HANDSHAKE, {**HANDSHAKE, **changes})

    def chunk(self, data: bytes, gen: int = 0) -> None:
        self._seq += 1
        self.frame(proto.CHUNK, struct.pack(">QqQ", self._seq, time.time_ns(), gen) + data)

    def end(self, **changes: Any) -> None:
        self.json(proto.END, {**END, **changes})

    def wait_for_stop(self, timeout: float = 30, heartbeat: float | None = None) -> bool:
        """Read client frames until a STOP (True) or the client leaves;
        meanwhile a HEARTBEAT every ``heartbeat`` seconds, if given."""
        self.sock.settimeout(timeout)
        deadline = time.monotonic() + timeout
        try:
            while True:
                if heartbeat is not None:
                    ready, _, _ = select.select([self.sock], [], [], heartbeat)
                    if not ready:
                        if time.monotonic() > deadline:
                            return False
                        self.frame(proto.HEARTBEAT)
                        continue
                ftype, _ = self.read_frame()
                self.client_frames.append(ftype)
                if ftype == proto.STOP:
                    return True
        except (EOFError, OSError):
            return False

    def wait_closed(self, timeout: float = 60) -> None:
        """Say nothing until the client hangs up."""
        self.wait_for_stop(timeout)
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(4096):
                pass
        except OSError:
            pass


class Peer:
    """A fake helper in a thread: answers the preamble, reads the HELLO,
    then hands the connection to ``behave``. Connections are served one
    after the other; ``hellos`` records what each client asked for."""

    def __init__(
        self,
        behave: Callable[[Conn], None],
        where: Path,
        *,
        family: str = "unix",
        tls: ssl.SSLContext | None = None,
        preamble: bytes | None = None,
    ) -> None:
        self.behave = behave
        self.preamble = preamble if preamble is not None else b"LIVETRACE" + struct.pack(">HH", 1, 1)
        self.hellos: list[dict[str, Any]] = []
        self.connections = 0
        self.errors: list[BaseException] = []
        self._tls = tls
        if family == "unix":
            path = str(where / "peer.sock")
            self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._listener.bind(path)
            self.address = f"unix:{path}"
        else:
            self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._listener.bind(("127.0.0.1", 0))
            self.address = f"{family}:127.0.0.1:{self._listener.getsockname()[1]}"
        self._listener.listen(4)
        self._listener.settimeout(0.1)
        self._closing = False
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing = True
        self._thread.join(30)
        self._listener.close()

    def _serve(self) -> None:
        while not self._closing:
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            sock.settimeout(30)
            try:
                if self._tls is not None:
                    sock = self._tls.wrap_socket(sock, server_side=True)
                conn = Conn(sock)
                conn.read_exact(13)
                conn.send(self.preamble)
                ftype, body = conn.read_frame()
                assert ftype == proto.HELLO
                conn.hello = json.loads(body)
                self.hellos.append(conn.hello)
                self.behave(conn)
            except (EOFError, OSError, ssl.SSLError):
                pass  # the client left: what the test checks is the client's side
            except BaseException as e:
                self.errors.append(e)
            finally:
                sock.close()


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the client did not end within {timeout:g} s:\n{err}") from None
    return proc.returncode, out, err


def one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if "error:" in line or "INCOMPLETE" in line]
    assert lines, err
    return lines[0]


# ---- malformed messages: a typed ProtocolError naming the field and the frame ----


def handshake_stream(**changes: Any) -> bytes:
    return (
        b"LIVETRACE"
        + struct.pack(">HH", 1, 1)
        + proto.encode_frame(proto.HANDSHAKE, json.dumps({**HANDSHAKE, **changes}).encode())
    )


def after_header(ftype: int, body: Any) -> bytes:
    chunk = proto.encode_frame(proto.CHUNK, struct.pack(">QqQ", 1, 0, 0) + HEADER)
    return handshake_stream() + chunk + proto.encode_frame(ftype, json.dumps(body).encode())


GAP = {"first_generation": 2, "last_generation": 3, "chunks": 1, "bytes": 10, "discard_received": False}


@pytest.mark.parametrize(
    ("stream", "frame", "field"),
    [
        (handshake_stream(segment_ms="500"), "handshake", "segment_ms"),
        (handshake_stream(advance_ms=[1]), "handshake", "advance_ms"),
        (handshake_stream(advance_bytes=-1), "handshake", "advance_bytes"),
        (handshake_stream(go_version=126), "handshake", "go_version"),
        (handshake_stream(pid=True), "handshake", "pid"),
        (handshake_stream(queue_bytes=-1), "handshake", "queue_bytes"),
        (handshake_stream(gomaxprocs=2.5), "handshake", "gomaxprocs"),
        (handshake_stream(executable=None), "handshake", "executable"),
        (after_header(proto.GAP, {**GAP, "first_generation": "2"}), "gap", "first_generation"),
        (after_header(proto.GAP, {**GAP, "discard_received": 1}), "gap", "discard_received"),
        (after_header(proto.GAP, {**GAP, "bytes": 1 << 64}), "gap", "bytes"),
        (after_header(proto.END, {**END, "complete": "no"}), "end", "complete"),
        (after_header(proto.END, {**END, "reason": 7}), "end", "reason"),
        (after_header(proto.END, {k: v for k, v in END.items() if k != "chunks"}), "end", "chunks"),
        (after_header(proto.SEGMENT, {"segment": 1, "stop_unix_ns": 1.5}), "segment", "stop_unix_ns"),
        (
            b"LIVETRACE" + struct.pack(">HH", 1, 1) + proto.encode_frame(proto.ERROR, b'{"code": 5, "message": "x"}'),
            "error",
            "code",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_malformed_values_are_protocol_errors_naming_the_field(stream: bytes, frame: str, field: str) -> None:
    with pytest.raises(livetrace.ProtocolError, match=f'malformed {frame} frame: field "{field}"'):
        proto.ClientConnection().receive_data(stream)


@pytest.mark.parametrize(
    ("stream", "match"),
    [
        (
            handshake_stream() + proto.encode_frame(proto.GAP, json.dumps(GAP).encode()),
            "gap frame before the first chunk",
        ),
        (after_header(proto.GAP, {**GAP, "last_generation": 1}), "last_generation 1 is before first_generation 2"),
        (b"LIVETRACE" + struct.pack(">HH", 1, 1) + proto.encode_frame(proto.CHUNK, bytes(30)), "before the handshake"),
        (handshake_stream() + handshake_stream()[13:], "second handshake"),
        (after_header(proto.END, END) + proto.encode_frame(proto.CHUNK, bytes(30)), "after the end frame"),
        (handshake_stream() + proto.encode_frame(proto.END, b"[" * 100_000 + b"]" * 100_000), "malformed end frame"),
        (handshake_stream() + proto.encode_frame(proto.END, b"\xff\xfe"), "malformed end frame"),
        (handshake_stream() + proto.encode_frame(proto.END, b"[1, 2]"), "expected a JSON object"),
    ],
)
def test_frames_out_of_order_or_absurd_are_protocol_errors(stream: bytes, match: str) -> None:
    with pytest.raises(livetrace.ProtocolError, match=match):
        proto.ClientConnection().receive_data(stream)


def test_heartbeats_are_accepted_and_carry_nothing() -> None:
    rest = after_header(proto.END, END)[len(handshake_stream()) :]  # the header chunk and END
    stream = handshake_stream() + proto.encode_frame(proto.HEARTBEAT) + rest
    events = proto.ClientConnection().receive_data(stream)
    assert [type(e).__name__ for e in events] == ["PeerPreamble", "SessionInfo", "Heartbeat", "Chunk", "End"]


async def test_a_malformed_handshake_is_a_protocol_error_from_connect(tmp_path: Path) -> None:
    def behave(c: Conn) -> None:
        c.handshake(segment_ms="500")
        c.wait_closed()

    with (
        Peer(behave, tmp_path) as peer,
        pytest.raises(livetrace.ProtocolError, match='field "segment_ms" must be an integer'),
    ):
        async with livetrace.connect(peer.address):
            pass


def test_record_of_a_malformed_handshake_is_one_line_and_status_2(tmp_path: Path) -> None:
    def behave(c: Conn) -> None:
        c.handshake(go_version=126)
        c.wait_closed()

    with Peer(behave, tmp_path) as peer:
        code, _, err = finish(cli("record", peer.address, "-o", str(tmp_path / "x.trace"), "--duration", "1"))
    assert code == 2, err
    assert 'error: malformed handshake frame: field "go_version" must be a string, got 126' in one_error_line(err)


@pytest.mark.parametrize(
    ("behaviour", "match"),
    [
        ("gap-first", "gap frame before the first chunk"),
        ("complete-no", 'field "complete" must be true or false, got "no"'),
        ("gap-strings", 'field "chunks" must be an integer'),
    ],
)
def test_record_keeps_what_came_before_a_malformed_frame_as_incomplete(
    tmp_path: Path, behaviour: str, match: str
) -> None:
    def behave(c: Conn) -> None:
        c.handshake()
        if behaviour == "gap-first":
            c.json(proto.GAP, GAP)
        else:
            c.chunk(HEADER)
            c.chunk(batch(1, b"x" * 100), gen=1)
            if behaviour == "complete-no":
                c.end(complete="no")
            else:
                c.json(proto.GAP, {**GAP, "chunks": "9"})
        c.wait_closed()

    out = tmp_path / "hostile.trace"
    with Peer(behave, tmp_path) as peer:
        code, _, err = finish(cli("record", peer.address, "-o", str(out), "--duration", "1"))
    assert match in one_error_line(err)
    assert not out.exists(), "a trace the helper did not end properly must not take the final name"
    if behaviour == "gap-first":
        # (in the same read as the handshake, it is refused before the recording starts: status 2)
        assert code in (1, 2) and not list(tmp_path.glob("hostile*")), err
    else:
        assert code == 1 and "INCOMPLETE recording" in err, err
        assert out.with_name(out.name + ".incomplete").read_bytes().startswith(HEADER)


# ---- silence, heartbeats, endless sessions: the client's own deadlines ----


@pytest.mark.slow  # waits out the real deadlines, seconds long, of a client in another process
def test_a_helper_that_goes_silent_is_given_up_on(tmp_path: Path) -> None:
    def behave(c: Conn) -> None:
        c.handshake()
        c.chunk(HEADER)
        c.wait_closed()  # and nothing else, ever

    out = tmp_path / "silent.trace"
    with Peer(behave, tmp_path) as peer:
        code, _, err = finish(cli("record", peer.address, "-o", str(out), "--duration", "2", "--idle-timeout", "3"))
    assert code == 1, err
    line = one_error_line(err)
    assert "INCOMPLETE recording" in line and "sent nothing for 3 s" in line and "--idle-timeout" in line
    assert out.with_name(out.name + ".incomplete").read_bytes() == HEADER
    hello = peer.hellos[0]
    assert 0 < hello["heartbeat_ms"] <= 1000, "the client asks for heartbeats"


@pytest.mark.slow
def test_a_silent_helper_is_given_up_on_with_the_default_limits(tmp_path: Path) -> None:
    """No option given: `record --duration 2` against a helper that sends its
    handshake and header and goes silent ends by itself, within the default
    idle timeout, instead of hanging forever."""

    def behave(c: Conn) -> None:
        c.handshake()
        c.chunk(HEADER)
        c.wait_closed()

    out = tmp_path / "silent.trace"
    with Peer(behave, tmp_path) as peer:
        code, _, err = finish(cli("record", peer.address, "-o", str(out), "--duration", "2"), timeout=90)
    assert code == 1, err
    assert "sent nothing for 30 s" in err
    assert out.with_name(out.name + ".incomplete").exists()


@pytest.mark.slow  # waits out the real deadlines, seconds long, of a client in another process
def test_heartbeats_keep_a_quiet_session_alive(tmp_path: Path) -> None:
    def behave(c: Conn) -> None:
        c.handshake()
        c.chunk(HEADER)
        interval = c.hello["heartbeat_ms"] / 1000
        for _ in range(int(3 / interval)):  # three seconds of nothing but heartbeats
            c.frame(proto.HEARTBEAT)
            time.sleep(interval)
        c.end()
        c.wait_closed(5)

    out = tmp_path / "quiet.trace"
    with Peer(behave, tmp_path) as peer:
        code, _, err = finish(cli("record", peer.address, "-o", str(out), "--idle-timeout", "1.5"))
    assert code == 0, err
    assert out.read_bytes() == HEADER


@pytest.mark.slow  # waits out the real deadlines, seconds long, of a client in another process
def test_a_helper_that_ignores_the_duration_is_stopped_and_then_given_up_on(tmp_path: Path) -> None:
    stops: list[bool] = []

    def behave(c: Conn) -> None:
        c.handshake()
        c.chunk(HEADER)
        stops.append(c.wait_for_stop(20))
        while True:  # a trickle, forever: never silent long enough for the idle timeout
            c.chunk(batch(1, b"x" * 50), gen=1)
            time.sleep(0.2)

    out = tmp_path / "endless.trace"
    with Peer(behave, tmp_path) as peer:
        code, _, err = finish(cli("record", peer.address, "-o", str(out), "--duration", "1", "--stop-timeout", "4"))
    assert code == 1, err
    assert stops == [True], "past its duration the client stops the helper itself"
    assert "did not end the session within 4 s of the stop" in one_error_line(err)
    assert out.with_name(out.name + ".incomplete").stat().st_size > len(HEADER)


async def test_a_helper_that_floods_after_the_stop_is_given_up_on(tmp_path: Path) -> None:
    def behave(c: Conn) -> None:
        c.handshake(queue_bytes=1 << 20)
        c.chunk(HEADER)
        data = batch(1, bytes(60_000))
        while True:  # as fast as it can, stop or no stop
            c.chunk(data, gen=1)

    with Peer(behave, tmp_path) as peer:
        async with livetrace.connect(peer.address) as session:
            await session.stop()
            with (
                pytest.raises(PeerTimeoutError, match="bytes after the stop without ending the session"),
                trio.fail_after(120),
            ):
                async for _ in session.chunks():
                    pass


# ---- memory: frame size and generation caps ----


def test_a_frame_past_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    def behave(c: Conn) -> None:
        c.handshake()
        c.chunk(HEADER)
        c.send(struct.pack(">BI", proto.CHUNK, 20 << 20))  # 20 MiB announced: more than any real chunk
        c.send(bytes(1 << 20))
        c.wait_closed()

    out = tmp_path / "huge.trace"
    with Peer(behave, tmp_path) as peer:
        code, _, err = finish(cli("record", peer.address, "-o", str(out), "--duration", "5"))
    assert code == 1, err
    assert f"exceeds the {16 << 20}-byte limit" in one_error_line(err)
    assert out.with_name(out.name + ".incomplete").read_bytes() == HEADER


def test_a_generation_that_never_ends_hits_the_cap_with_a_clear_error(tmp_path: Path) -> None:
    def behave(c: Conn) -> None:
        c.handshake()
        c.chunk(HEADER)
        data = batch(1, bytes(60_000))
        for _ in range((64 << 20) // len(data)):  # 64 MiB of generation 1, which never ends
            c.chunk(data, gen=1)
        c.end()
        c.wait_closed()

    with Peer(behave, tmp_path) as peer:
        code, _, err = finish(cli("tail", peer.address, "--format", "jsonl", "--max-generation-mb", "8"))
    assert code == 2, err
    line = one_error_line(err)
    assert "generation 1 passed 8 MiB" in line and "--max-generation-mb" in line


async def test_the_generation_cap_is_an_api_limit_too(tmp_path: Path) -> None:
    def behave(c: Conn) -> None:
        c.handshake()
        c.chunk(HEADER)
        while True:
            c.chunk(batch(7, bytes(60_000)), gen=7)

    with Peer(behave, tmp_path) as peer:
        async with livetrace.connect(peer.address, max_generation_bytes=4 << 20) as session:
            with pytest.raises(LimitExceededError) as exc, trio.fail_after(120):
                async for _ in session.event_batches():
                    pass
    assert exc.value.limit == 4 << 20 and "generation 7" in str(exc.value)


# ---- whose socket: peer credentials before anything is sent ----

PEER_SCRIPT = r"""
import json, socket, struct, sys, time
path, log = sys.argv[1], sys.argv[2]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(1)
print("ready", flush=True)
conn, _ = srv.accept()
conn.settimeout(10)
got = b""
try:
    conn.sendall(b"LIVETRACE" + struct.pack(">HH", 1, 1))
    while True:
        data = conn.recv(65536)
        if not data:
            break
        got += data
        if len(got) >= 13 + 5 and len(got) >= 18 + struct.unpack(">I", got[14:18])[0]:
            hs = {"protocol": 1, "helper": "h", "go_version": "go1.26.6", "goos": "linux", "goarch": "amd64",
                  "pid": 1, "executable": "x", "gomaxprocs": 1, "start_unix_ns": 0, "queue_bytes": 1, "session": 1}
            body = json.dumps(hs).encode()
            conn.sendall(struct.pack(">BI", 0x10, len(body)) + body)
            body = json.dumps({"reason": "client-stop", "complete": True, "chunks": 0, "bytes": 0}).encode()
            conn.sendall(struct.pack(">BI", 0x22, len(body)) + body)
            time.sleep(1)
            break
except OSError:
    pass
open(log, "wb").write(got)
"""


def _open_to_others(path: str) -> bool:
    """Whether a user with no rights of its own can run the file at path:
    every directory above it searchable by others, the file executable."""
    p = Path(path).resolve()
    return all(d.stat().st_mode & stat.S_IXOTH for d in p.parents) and bool(p.stat().st_mode & stat.S_IXOTH)


def _interpreter_for_others() -> str | None:
    """A Python another user may run (the peer's script needs only the
    standard library): this one, unless a directory above it is closed to
    others (a clone under /root, or in a private temporary directory), then
    the system's."""
    for candidate in (sys.executable, shutil.which("python3"), "/usr/bin/python3", "/usr/local/bin/python3"):
        if candidate and Path(candidate).exists() and _open_to_others(candidate):
            return candidate
    return None


@pytest.fixture
def foreign_socket() -> Iterator[tuple[str, Path, int]]:
    """A unix socket served by a process of another user (nobody)."""
    if os.getuid() != 0:
        pytest.skip("serving a socket as another user needs root")
    python = _interpreter_for_others()
    if python is None:
        pytest.skip("no Python here that another user may run (every one sits below a private directory)")
    tmp = Path(tempfile.mkdtemp(prefix="livetrace-foreign-"))
    tmp.chmod(0o777)
    uid = 65534
    path, log = tmp / "foreign.sock", tmp / "received"
    proc = subprocess.Popen(
        [python, "-c", PEER_SCRIPT, str(path), str(log)], user=uid, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield f"unix:{path}", log, uid
    finally:
        proc.kill()
        proc.wait()
        for p in tmp.iterdir():
            p.unlink()
        tmp.rmdir()


async def test_a_socket_of_another_user_gets_nothing(foreign_socket: tuple[str, Path, int]) -> None:
    address, log, uid = foreign_socket
    with pytest.raises(PeerCredentialsError) as exc:
        async with livetrace.connect(address, token="secret-token"):
            pass
    assert exc.value.uid == uid
    assert f"uid {uid} (nobody)" in str(exc.value) and f"--allow-uid {uid}" in str(exc.value)
    with trio.fail_after(30):
        while not log.exists():
            await trio.sleep(0.05)
    assert log.read_bytes() == b"", "not even the preamble, let alone the token, goes to someone else's socket"


async def test_another_user_can_be_allowed(foreign_socket: tuple[str, Path, int]) -> None:
    address, _, uid = foreign_socket
    async with livetrace.connect(address, token="t", allow_uid=uid) as session:
        assert session.info.helper == "h"
        assert [f async for f in session.chunks()] == []


def test_the_cli_names_whose_socket_it_is(foreign_socket: tuple[str, Path, int], tmp_path: Path) -> None:
    address, _, uid = foreign_socket
    code, _, err = finish(cli("record", address, "-o", str(tmp_path / "x.trace")))
    assert code == 2
    assert err.count("\n") == 1 and f"--allow-uid {uid}" in err and "Traceback" not in err


async def test_an_expected_pid_is_checked(tmp_path: Path) -> None:
    with Peer(lambda c: None, tmp_path) as peer:
        with pytest.raises(PeerCredentialsError, match=f"served by pid {os.getpid()}, not by pid 1 as expected"):
            async with livetrace.connect(peer.address, expected_pid=1):
                pass
        with trio.fail_after(10):
            while not peer.connections:
                await trio.sleep(0.01)
    assert peer.hellos == [], "refused before the preamble"


# ---- peer strings are escaped before they are shown ----


def test_a_refusal_cannot_write_escape_sequences_to_the_terminal(tmp_path: Path) -> None:
    evil = "\x1b[2J\x1b]0;owned\x07 client \u202eevil\nlivetrace: recorded everything; trace complete"

    def behave(c: Conn) -> None:
        c.json(proto.ERROR, {"code": "busy", "message": evil})

    with Peer(behave, tmp_path) as peer:
        code, _, err = finish(cli("record", peer.address, "-o", str(tmp_path / "x.trace")))
    assert code == 2
    assert "\x1b" not in err and "\u202e" not in err and "\x07" not in err
    assert err.count("\n") == 1, err
    assert "\\x1b[2J\\x1b]0;owned\\x07 client \\u202eevil\\nlivetrace: recorded" in err


def test_handshake_strings_are_escaped_too(tmp_path: Path) -> None:
    def behave(c: Conn) -> None:
        c.handshake(executable="/srv/x\x1b[31m\r", go_version="go1.26\x1b]2;t\x07")
        c.chunk(HEADER)
        c.end(detail="\x1b[1A")
        c.wait_closed(5)

    with Peer(behave, tmp_path) as peer:
        code, _, err = finish(cli("record", peer.address, "-o", str(tmp_path / "x.trace")))
    assert code == 0, err
    assert "\x1b" not in err and "\r" not in err and "/srv/x\\x1b[31m\\r" in err


# ---- TLS ----


def make_cert(where: Path, name: str) -> tuple[Path, Path, str]:
    cert, key = where / f"{name}.pem", where / f"{name}.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            f"/CN={name}",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )
    der = ssl.PEM_cert_to_DER_cert(cert.read_text())
    return cert, key, "sha256:" + hashlib.sha256(der).hexdigest()


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path, str]]:
    where = tmp_path_factory.mktemp("certs")
    return {name: make_cert(where, name) for name in ("helper", "other")}


def tls_peer(tmp_path: Path, certs: dict[str, tuple[Path, Path, str]], tokens: list[str]) -> Peer:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(*certs["helper"][:2])

    def behave(c: Conn) -> None:
        tokens.append(c.hello.get("token", ""))
        c.handshake()
        c.chunk(HEADER)
        c.end()
        c.wait_closed(5)

    return Peer(behave, tmp_path, family="tls", tls=ctx)


def test_tls_verified_against_the_helpers_certificate(tmp_path: Path, certs: dict[str, tuple[Path, Path, str]]) -> None:
    tokens: list[str] = []
    out = tmp_path / "tls.trace"
    with tls_peer(tmp_path, certs, tokens) as peer:
        proc = cli("record", peer.address, "-o", str(out), "--tls-ca", str(certs["helper"][0]), "--token", "s3cret")
        code, _, err = finish(proc)
    assert code == 0, err
    assert out.read_bytes() == HEADER and tokens == ["s3cret"]


def test_tls_with_a_pinned_certificate(tmp_path: Path, certs: dict[str, tuple[Path, Path, str]]) -> None:
    tokens: list[str] = []
    with tls_peer(tmp_path, certs, tokens) as peer:
        pin = certs["helper"][2].upper().replace("SHA256:", "sha256:")
        code, _, err = finish(cli("record", peer.address, "-o", str(tmp_path / "t.trace"), "--tls-pin", pin))
    assert code == 0, err


@pytest.mark.parametrize("check", ["wrong-ca", "wrong-pin", "system-cas"])
def test_tls_refuses_a_certificate_it_cannot_trust_before_sending_the_token(
    tmp_path: Path, certs: dict[str, tuple[Path, Path, str]], check: str
) -> None:
    tokens: list[str] = []
    args = {
        "wrong-ca": ["--tls-ca", str(certs["other"][0])],
        "wrong-pin": ["--tls-pin", certs["other"][2]],
        "system-cas": [],
    }[check]
    with tls_peer(tmp_path, certs, tokens) as peer:
        code, _, err = finish(cli("record", peer.address, "-o", str(tmp_path / "t.trace"), "--token", "s3cret", *args))
    assert code == 2
    line = one_error_line(err)
    if check == "wrong-pin":
        assert f"is {certs['helper'][2]}, not the pinned {certs['other'][2]}" in line
    else:
        assert "failed verification" in line and "--tls-ca" in line
    assert tokens == []


async def test_tls_api_raises_typed_errors(tmp_path: Path, certs: dict[str, tuple[Path, Path, str]]) -> None:
    tokens: list[str] = []
    with tls_peer(tmp_path, certs, tokens) as peer:
        with pytest.raises(TLSVerificationError):
            async with livetrace.connect(peer.address, tls_pin=certs["other"][2]):
                pass
        async with livetrace.connect(peer.address, tls_ca=certs["helper"][0]) as session:
            frames = [c async for c in session.chunks()]
            assert [c.data if isinstance(c, proto.Chunk) else c for c in frames] == [HEADER]


def test_tls_addresses_parse() -> None:
    assert str(livetrace.parse_address("tls:example.org:7443")) == "tls:example.org:7443"
    assert str(livetrace.parse_address("tls:7443")) == "tls:127.0.0.1:7443"
    assert str(livetrace.parse_address("tcp:7070")) == "tcp:127.0.0.1:7070"


async def test_tls_options_need_a_tls_address(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="for tls: addresses"):
        async with livetrace.connect(f"unix:{tmp_path}/x.sock", tls_pin="sha256:" + "0" * 64):
            pass
    with pytest.raises(ValueError, match="bad certificate pin"):
        async with livetrace.connect("tls:1", tls_pin="md5:00"):
            pass
