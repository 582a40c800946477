"""The Go helper against hostile or unlucky conditions, with the real demo
service: running out of file descriptors, token guessing, client names made
to forge log lines, and addresses that are wrong or too exposed."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest
import trio

import livetrace
from livetrace._go.demo import run_demo
from livetrace._protocol.address import parse_address
from livetrace._protocol.text import shown

from .conftest import demo, demo_exe, stop_and_read_log

# The helper's defences: no decoding, so the twin's pass would only repeat them.
pytestmark = pytest.mark.once

# A descriptor budget the storm below overruns several times: the demo
# itself (HTTP listener and keep-alive clients, /dev/null writers, the
# runtime's poller) holds a few dozen.
STORM_RETRIES = 5  # consumers tried after a storm before the helper must have served one
FD_LIMIT = 64
STORM_CONNECTIONS = 80
WRONG_GUESSES = 8


def _env_without_livetrace() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("LIVETRACE_")}


async def _record(address: str, path: Path, token: str | None = None) -> livetrace.Recording:
    async with livetrace.connect(address, duration=0.5, token=token) as session:
        return await livetrace.record(session, path)


@pytest.mark.go
def test_unknown_listen_scheme_is_named_once_with_the_accepted_forms() -> None:
    env = {**_env_without_livetrace(), "LIVETRACE_LISTEN": "bogus:foo"}
    out = subprocess.run([str(demo_exe("1.26"))], check=False, capture_output=True, text=True, env=env, timeout=30)
    assert out.returncode != 0
    line = out.stderr.splitlines()[0]
    assert line.startswith(
        'livetrace: not listening (LIVETRACE_LISTEN=bogus:foo): cannot listen on "bogus:foo": unknown scheme "bogus:"'
    ), line
    assert line.count("livetrace:") == 1
    assert all(form in line for form in ("unix:/path", "tcp:HOST:PORT", "tcp:PORT", "tls:HOST:PORT")), line


@pytest.mark.go
def test_beyond_loopback_without_a_token_is_refused() -> None:
    out = subprocess.run(
        [str(demo_exe("1.26")), "-listen", "tcp:0.0.0.0:0"],
        check=False,
        capture_output=True,
        text=True,
        env=_env_without_livetrace(),
        timeout=30,
    )
    assert out.returncode != 0
    assert "refusing to serve traces on tcp:" in out.stderr and "without a token" in out.stderr


@pytest.mark.slow
async def test_beyond_loopback_with_a_token_serves_and_warns(tmp_path: Path) -> None:
    async with demo("1.26", listen="tcp:0.0.0.0:0", env={"LIVETRACE_TOKEN": "s3cret"}) as d:
        port = parse_address(d.trace_address).port
        rec = await _record(f"tcp:127.0.0.1:{port}", tmp_path / "t.trace", token="s3cret")
        assert rec.complete
        log = await stop_and_read_log(d)
    assert "beyond loopback" in log and "unencrypted" in log


async def _record_when_served(address: str, path: Path) -> livetrace.Recording:
    """A consumer arriving while the storm's connections still fill the
    handshake cap is closed at once, as any beyond the cap: like a user, try
    again a few times (the helper must serve one of them)."""
    for _ in range(STORM_RETRIES - 1):
        try:
            return await _record(address, path)
        except livetrace.ConnectError:
            await trio.sleep(0.5)
    return await _record(address, path)


@pytest.mark.slow
@pytest.mark.parametrize("capped", [True, False], ids=["handshake-cap", "no-cap"])
async def test_a_descriptor_storm_leaves_the_helper_serving(capped: bool, tmp_path: Path) -> None:
    """More idle connections than the process has file descriptors. With
    its handshake cap, the helper closes those beyond it at once and never
    runs out; without (a cap above the limit), accept fails with EMFILE and
    the helper backs off and retries. Either way the next consumer is served
    without a restart."""
    limited = tmp_path / "limited-demo"
    limited.write_text(f'#!/bin/sh\nulimit -n {FD_LIMIT} || exit 97\nexec "{demo_exe("1.26")}" "$@"\n')
    limited.chmod(0o755)
    args = [] if capped else ["-max-handshakes", str(10 * STORM_CONNECTIONS)]
    async with run_demo(limited, listen="tcp:0", args=args) as d:
        assert _open_fds(d.pid) < FD_LIMIT
        addr = parse_address(d.trace_address)

        def storm() -> int:
            # The stack closes every connection opened so far, even if one fails.
            with contextlib.ExitStack() as stack:
                opened = [
                    stack.enter_context(socket.create_connection((addr.host, addr.port), timeout=10))
                    for _ in range(STORM_CONNECTIONS)
                ]
                time.sleep(2)
                return len(opened)

        assert await trio.to_thread.run_sync(storm) == STORM_CONNECTIONS
        rec = await _record_when_served(d.trace_address, tmp_path / "after-storm.trace")
        assert rec.complete and rec.end is not None and rec.end.reason == "duration"
        log = await stop_and_read_log(d)
    closed = sum(int(m) for m in re.findall(r"(\d+) connections? since \S+ closed unanswered", log))
    if capped:
        assert 0 < closed <= STORM_CONNECTIONS, log
    else:
        assert closed == 0 and "too many open files; retrying with backoff" in log, log
        assert re.search(r"accepting consumers again after \d+ failed attempts?", log), log


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.mark.slow
async def test_a_client_name_cannot_forge_log_lines_or_messages() -> None:
    name = "evil\nlivetrace: session 99 started for root"
    escaped = r'"evil\nlivetrace: session 99 started for root"'
    async with demo("1.26", args=["-max-consumers", "1"]) as d:
        async with livetrace.connect(d.trace_address, client_name=name) as first:
            with pytest.raises(livetrace.BusyError) as exc:
                async with livetrace.connect(d.trace_address):
                    pass
            await first.stop()
            assert [f async for f in first.chunks()]
        log = await stop_and_read_log(d)
    # The helper quotes the name; the client escapes whatever a helper sends once more before showing it.
    assert shown(escaped) in str(exc.value) and "\n" not in str(exc.value)
    assert f"session 1 started for {escaped} at unix socket" in log
    assert not any(line.startswith("livetrace: session 99") for line in log.splitlines()), log


@pytest.mark.slow
async def test_token_guesses_are_slowed_and_summarised(tmp_path: Path) -> None:
    async with demo("1.26", env={"LIVETRACE_TOKEN": "s3cret"}) as d:
        for _ in range(WRONG_GUESSES):
            with pytest.raises(livetrace.AuthenticationError, match="wrong token"):
                async with livetrace.connect(d.trace_address, token="guess"):
                    pass
        rec = await _record(d.trace_address, tmp_path / "t.trace", token="s3cret")
        assert rec.complete
        log = await stop_and_read_log(d)
    counts = [int(n) for n in re.findall(r"(\d+) refused token attempts? since", log)]
    assert sum(counts) == WRONG_GUESSES and len(counts) < WRONG_GUESSES, log
    assert "wrong token" not in log
