"""Sessions against the real demo service: one at a time, every way to end
one, refusals, and the service staying healthy throughout."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import struct
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import trio

import livetrace
from livetrace._go.demo import DemoProcess
from livetrace._protocol import frames as proto

from .conftest import cli, demo, demo_exe, go_tool_trace

# Session plumbing: no decoding, so the twin's pass would only repeat it.
pytestmark = [pytest.mark.slow, pytest.mark.once]


def http_get(url: str, timeout: float = 30) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        body: bytes = r.read()
    return body


async def fetch(url: str) -> bytes:
    """``http_get`` in a worker thread, so trio keeps running meanwhile."""
    return await trio.to_thread.run_sync(http_get, url)


async def status(d: DemoProcess) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(await fetch(d.http + "/debug/livetrace"))
    return result


async def ops(d: DemoProcess) -> int:
    count: int = json.loads(await fetch(d.http + "/stats"))["ops"]
    return count


async def wait_idle(d: DemoProcess) -> None:
    """Wait until the helper has released its session and tracing is off."""
    with trio.fail_after(30):
        while (s := await status(d))["session"] is not None or s["tracing"]:
            await trio.sleep(0.1)


async def record_briefly(address: str, path: Path, seconds: float = 1.0) -> livetrace.Recording:
    async with livetrace.connect(address, duration=seconds) as session:
        return await livetrace.record(session, path)


async def test_a_client_past_the_consumer_limit_is_refused_as_busy_and_a_new_session_works_after(
    tmp_path: Path,
) -> None:
    async with demo("1.26", args=["-max-consumers", "1"]) as d:
        async with livetrace.connect(d.trace_address, client_name="first-consumer") as first:
            with pytest.raises(livetrace.BusyError) as exc:
                async with livetrace.connect(d.trace_address):
                    pass
            msg = str(exc.value)
            assert (
                "busy" in msg and "first-consumer" in msg and "since" in msg and "1 consumer is already attached" in msg
            )
            await first.stop()
            frames = [f async for f in first.chunks()]
            assert frames and first.end is not None and first.end.reason == "client-stop" and first.end.complete
        await wait_idle(d)
        rec = await record_briefly(d.trace_address, tmp_path / "again.trace")
        assert rec.complete and rec.counters.chunks > 1
        go_tool_trace("1.26", rec.paths[0])


@pytest.mark.parametrize("version", ["1.26", "1.21"])
async def test_killed_consumer_leaves_service_healthy_and_ready(version: str, tmp_path: Path) -> None:
    async with demo(version) as d:
        out = tmp_path / "killed.trace"
        proc = cli("record", d.trace_address, "-o", str(out))
        with trio.fail_after(30):  # the recording goes to a fresh out.name.XXXXXXXX.part first
            while not any(p.stat().st_size > 0 for p in tmp_path.glob(f"{out.name}.*.part")):
                await trio.sleep(0.05)
        assert (await status(d))["tracing"]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        await wait_idle(d)
        before = await ops(d)
        rec = await record_briefly(d.trace_address, tmp_path / "next.trace")
        assert rec.complete and rec.end is not None and rec.end.reason == "duration"
        assert await ops(d) > before
        go_tool_trace(version, rec.paths[0])


async def test_client_disconnect_mid_stream_stops_the_tracer() -> None:
    async with demo("1.26") as d:
        async with livetrace.connect(d.trace_address) as session:
            async for _ in session.chunks():
                break  # leave with the session still running
        await wait_idle(d)


async def test_service_close_ends_the_session_with_a_complete_trace(tmp_path: Path) -> None:
    async with demo("1.26") as d:
        async with livetrace.connect(d.trace_address) as session:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_terminate_after_first_chunk, d, session)
                rec = await livetrace.record(session, tmp_path / "closing.trace")
        assert rec.complete and rec.end is not None and rec.end.reason == "service-closing"
        go_tool_trace("1.26", rec.paths[0])
        with trio.fail_after(15):
            assert await d.process.wait() == 0


async def _terminate_after_first_chunk(d: DemoProcess, session: livetrace.Session) -> None:
    while session.counters.chunks < 2:
        await trio.sleep(0.05)
    d.process.send_signal(signal.SIGTERM)


async def test_service_dying_mid_stream_raises_connection_lost_with_counts() -> None:
    async with demo("1.26") as d:
        async with livetrace.connect(d.trace_address) as session:

            async def read_until_killed() -> None:
                async for _ in session.chunks():
                    if session.counters.chunks == 3:
                        d.process.kill()

            with pytest.raises(livetrace.ConnectionLostError) as exc:
                await read_until_killed()
    err = exc.value
    assert err.chunks_received >= 3 and err.bytes_received > 0 and err.complete is False
    assert "incomplete" in str(err)


async def test_already_traced_process_is_refused_clearly_and_nothing_changes(tmp_path: Path) -> None:
    async with demo("1.26") as d:
        async with trio.open_nursery() as nursery:
            # runtime/trace straight into a file: something other than livetrace tracing the process
            # (the demo's /debug/pprof/trace shares livetrace's trace instead).
            nursery.start_soon(fetch, d.http + "/debug/trace-to-file?seconds=3")
            with trio.fail_after(10):
                while not (await status(d))["tracing"]:
                    await trio.sleep(0.05)
            with pytest.raises(livetrace.AlreadyTracingError, match="already being traced"):
                async with livetrace.connect(d.trace_address):
                    pass
        await wait_idle(d)
        rec = await record_briefly(d.trace_address, tmp_path / "after.trace")
        assert rec.complete


async def test_token_is_required_when_the_service_sets_one(tmp_path: Path) -> None:
    async with demo("1.26", env={"LIVETRACE_TOKEN": "s3cret"}) as d:
        with pytest.raises(livetrace.AuthenticationError, match="requires a token"):
            async with livetrace.connect(d.trace_address):
                pass
        with pytest.raises(livetrace.AuthenticationError, match="wrong token"):
            async with livetrace.connect(d.trace_address, token="guess"):
                pass
        async with livetrace.connect(d.trace_address, token="s3cret", duration=0.5) as session:
            assert [f async for f in session.chunks()]
            assert session.end is not None and session.end.complete


async def test_unix_socket_is_private_to_the_owner() -> None:
    async with demo("1.26") as d:
        mode = os.stat(d.trace_address.removeprefix("unix:")).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600


async def test_loopback_tcp_and_metadata(tmp_path: Path) -> None:
    async with demo("1.26", listen="tcp:0") as d:
        assert d.trace_address.startswith("tcp:127.0.0.1:")
        hostport = d.trace_address.removeprefix("tcp:")
        async with livetrace.connect(hostport, duration=0.5) as session:
            info = session.info
            assert info.pid == d.pid and info.go_version == d.go_version
            assert info.goos == "linux" and info.gomaxprocs >= 1 and info.queue_bytes == 64 << 20
            assert Path(info.executable).name.startswith("livetrace-demo")
            assert abs(info.start_unix_ns / 1e9 - time.time()) < 60
            frames = [f async for f in session.chunks()]
        first = frames[0]
        assert isinstance(first, livetrace.Chunk) and first.data.startswith(b"go 1.26 trace")
        assert [f.seq for f in frames if isinstance(f, livetrace.Chunk)] == list(range(1, len(frames) + 1))


async def test_incompatible_protocol_version_is_refused_naming_both_ranges() -> None:
    async with demo("1.26") as d:
        path = d.trace_address.removeprefix("unix:")

        def talk() -> list[proto.Event]:
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(10)
                s.connect(path)
                s.sendall(b"LIVETRACE" + struct.pack(">HH", 7, 9))
                data = b""
                while chunk := s.recv(4096):
                    data += chunk
            return proto.ClientConnection().receive_data(data)

        events = await trio.to_thread.run_sync(talk)
        assert isinstance(events[0], proto.PeerPreamble)
        refusal = events[1]
        assert isinstance(refusal, proto.Refusal) and refusal.code == "version"
        assert "versions 1 to 1 and the client 7 to 9" in refusal.message


async def test_connect_errors_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(livetrace.ConnectError, match=r"no socket at .*LIVETRACE_LISTEN"):
        async with livetrace.connect(f"unix:{tmp_path}/missing.sock"):
            pass
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(livetrace.ConnectError, match="is the service listening there"):
        async with livetrace.connect(f"127.0.0.1:{port}"):
            pass


def test_helper_refuses_to_listen_on_a_live_or_foreign_path(tmp_path: Path) -> None:
    regular = tmp_path / "not-a-socket"
    regular.write_text("x")
    out = subprocess.run(
        [str(demo_exe("1.26")), "-listen", f"unix:{regular}"], capture_output=True, text=True, timeout=30
    )
    assert out.returncode != 0 and "is not a socket" in out.stderr


async def test_coexists_with_the_runtime_flight_recorder(tmp_path: Path) -> None:
    async with demo("1.26", args=["-flight-recorder"]) as d:
        rec = await record_briefly(d.trace_address, tmp_path / "live.trace")
        assert rec.complete
        go_tool_trace("1.26", rec.paths[0])
        snapshot = tmp_path / "flight.trace"
        snapshot.write_bytes(await fetch(d.http + "/debug/flight"))
        go_tool_trace("1.26", snapshot)
        rec = await record_briefly(d.trace_address, tmp_path / "again.trace")
        assert rec.complete


async def test_hostile_clients_do_not_hurt_the_service(tmp_path: Path) -> None:
    async with demo("1.26") as d:
        path = d.trace_address.removeprefix("unix:")
        junk = [
            b"GET / HTTP/1.1\r\n\r\n",  # not a livetrace client at all
            b"LIVETRACE\x00\x01\x00\x01" + b"\x01\xff\xff\xff\xff",  # a hello claiming 4 GiB
            b"LIVETRACE\x00\x01\x00\x01" + b"\x01\x00\x00\x00\x05{nope",  # a hello that is not JSON
            b"LIVETRACE\x00\x01\x00\x01" + b"\x02\x00\x00\x00\x00",  # a stop before any hello
            b"LIVETRACE",  # a preamble cut short, then silence
        ]

        def send(blob: bytes) -> bytes:
            """What the helper answers before it hangs up (closing on unread
            junk resets the connection, which is a fine way to hang up)."""
            reply = b""
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(20)
                s.connect(path)
                try:
                    s.sendall(blob)
                    s.shutdown(socket.SHUT_WR)
                    while chunk := s.recv(4096):
                        reply += chunk
                except ConnectionResetError:
                    pass
            return reply

        for blob in junk:
            reply = await trio.to_thread.run_sync(send, blob)
            events = proto.ClientConnection().receive_data(reply) if reply else []
            assert not any(isinstance(e, proto.SessionInfo) for e in events), "no session for junk"
        bad_hello = proto.ClientConnection().receive_data(await trio.to_thread.run_sync(send, junk[2]))
        assert isinstance(bad_hello[-1], proto.Refusal) and bad_hello[-1].code == "bad-request"
        assert not (await status(d))["tracing"]
        rec = await record_briefly(d.trace_address, tmp_path / "after-junk.trace")
        assert rec.complete
