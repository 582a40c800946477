"""Soak: hostile clients hammer the Go helper while a legitimate recording
runs beside them. The recording must complete, no hostile client may get a
session, the service's goroutines and memory must come back to about where
they were, and the next consumer must be served as if nothing happened.

Bounded: each hostile kind stops by itself at its count or when the
hostile phase ends, each connection is bounded on its own, and the whole
test fails after SOAK_BOUND seconds. Traffic goes only to 127.0.0.1 and to
a unix socket in the test's tmp_path.
"""

from __future__ import annotations

import json
import random
import re
import socket
import struct
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest
import trio

import livetrace
from livetrace._protocol import frames as proto
from livetrace._protocol.address import Address, parse_address

from .conftest import demo, demo_exe, go_tool_trace

pytestmark = pytest.mark.slow

TOKEN = "soak-s3cret"
SOAK_BOUND = 60.0  # the whole test, once the demo is built, up to and including go tool trace
HOSTILE_SECONDS = 8.0  # no hostile connection starts after this (every kind gets its turn by then)
CONNECTION_BOUND = 8.0  # no hostile connection lasts longer (the helper's handshake deadline is 5 s)
HELPER_HANDSHAKE_TIMEOUT = 5.0  # docs/protocol.md
SETTLE_BOUND = 20.0  # from the last hostile connection, the longest wait for goroutines and RSS to come back
SAMPLE_EVERY = 1.0

# "About the baseline": a leak of one goroutine per hostile connection, or
# of memory per connection, is far beyond these; the demo's own HTTP client
# and GC cycles are not.
GOROUTINE_SLACK = 5
RSS_SLACK_BYTES = 32 << 20
RSS_SLACK_RATIO = 0.25

# The helper summarises refusals (tokens, malformed handshakes, the cap) in
# at most one line each per 10 s, plus two lines per session: a line per
# hostile connection would be hundreds.
LOG_LINE_BUDGET = 30

MAX_CLIENT_FRAME = 64 << 10  # docs/protocol.md: the helper refuses client frames over 64 KiB
PREAMBLE = proto.client_preamble()
HELPER_MAGIC = b"LIVETRACE"

# What may happen to a hostile connection, whatever the timing: the helper
# closes it at once (over the handshake cap), sends its preamble and then
# closes it (handshake deadline, unreadable preamble, token check not reached
# in time), or refuses it with an error; or we hang up first. TCP turns a
# close with unread data into a reset. Never a HANDSHAKE, and never an error
# code the kind cannot earn.
CLOSES = {
    "closed unanswered",
    "reset unanswered",
    "preamble, then closed",
    "preamble, then reset",
    "preamble, then we hung up",
    "nothing, then we hung up",
    "connect failed",
    "still open at the connection bound",
}


def frame(frame_type: int, payload: bytes) -> bytes:
    return struct.pack(">BI", frame_type, len(payload)) + payload


def hello(body: dict[str, object]) -> bytes:
    return frame(proto.HELLO, json.dumps(body).encode())


# Each garbage payload is unreadable at a different step of the handshake.
GARBAGE: list[tuple[str, Callable[[random.Random], bytes]]] = [
    ("random bytes", lambda rng: rng.randbytes(rng.randint(1, 4096))),
    ("an HTTP request", lambda rng: b"GET /debug/pprof/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
    ("a wrong magic", lambda rng: b"LIVETRACF" + PREAMBLE[len(HELPER_MAGIC) :]),
    ("no common version", lambda rng: HELPER_MAGIC + struct.pack(">HH", 7, 9)),
    ("a 4 GiB frame length", lambda rng: PREAMBLE + struct.pack(">BI", proto.HELLO, 0xFFFFFFFF)),
    ("a frame just over the limit", lambda rng: PREAMBLE + struct.pack(">BI", proto.HELLO, MAX_CLIENT_FRAME + 1)),
    (
        "a full-size frame cut short",
        lambda rng: PREAMBLE + struct.pack(">BI", proto.HELLO, MAX_CLIENT_FRAME) + b"{" * 999,
    ),
    ("a STOP before the HELLO", lambda rng: PREAMBLE + frame(proto.STOP, b"")),
    ("a HELLO that is not JSON", lambda rng: PREAMBLE + frame(proto.HELLO, b"\xff\xfe{not json")),
    ("a HELLO that is a JSON array", lambda rng: PREAMBLE + frame(proto.HELLO, b"[1, 2]")),
    ("a HELLO with a numeric token", lambda rng: PREAMBLE + hello({"token": 5})),
    ("a HELLO with advance_ms out of range", lambda rng: PREAMBLE + hello({"advance_ms": 5})),
    ("a HELLO with advance_bytes out of range", lambda rng: PREAMBLE + hello({"advance_bytes": 1 << 40})),
    ("a HELLO with an oversize client name", lambda rng: PREAMBLE + hello({"client": "x" * 300})),
]


@dataclass
class Kind:
    name: str
    workers: int  # connections of this kind open at once
    count: int  # connections of this kind at most
    pause: float  # between two connections of one worker
    allowed: frozenset[str]
    start_after: float = 0.0  # into the hostile phase
    tried: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    first: dict[str, int] = field(default_factory=dict)  # outcome -> the first connection that had it

    def unexpected(self) -> list[str]:
        """Outcomes the kind cannot earn, each with the connection that had it first."""
        return [
            f"{outcome} (connection {self.first[outcome]}{variant(self.name, self.first[outcome])})"
            for outcome in self.outcomes
            if outcome not in self.allowed
        ]


def variant(kind: str, i: int) -> str:
    return f": {GARBAGE[i % len(GARBAGE)][0]}" if kind == "garbage" else ""


def kinds() -> dict[str, Kind]:
    """The mix keeps about as many connections in their handshake as the
    helper's cap (16) allows, so that most are answered; the burst overruns
    the cap for a while in the middle."""
    k = [
        Kind("idle", 7, 150, 0.05, frozenset(CLOSES)),
        Kind("idle burst", 24, 48, 0.0, frozenset(CLOSES), start_after=HOSTILE_SECONDS / 2),
        Kind("slow hello", 3, 40, 0.05, frozenset(CLOSES | {"refused: unauthorized", "refused: bad-request"})),
        Kind("garbage", 2, 400, 0.03, frozenset(CLOSES | {"refused: bad-request", "refused: version"})),
        Kind("wrong token", 3, 200, 0.05, frozenset(CLOSES | {"refused: unauthorized"})),
        Kind("connect/close flood", 2, 1500, 0.005, frozenset({"closed at once", "reset at once", "connect failed"})),
        # Not hostile: a second client with the right token, who should be
        # told the session is busy (the helper serves one consumer here), and is measured to see how often the
        # others keep it from being answered at all. Its token is checked at
        # once, never behind the guessers', so the helper either answers it
        # or closes it over the handshake cap without a word.
        Kind(
            "right token, busy",
            1,
            20,
            0.5,
            frozenset({"refused: busy", "closed unanswered", "reset unanswered", "connect failed"}),
        ),
    ]
    return {x.name: x for x in k}


# ---- one hostile connection ------------------------------------------------


async def open_stream(addr: Address) -> trio.SocketStream:
    if addr.family == "unix":
        return await trio.open_unix_socket(addr.path)
    assert addr.host == "127.0.0.1", addr
    return await trio.open_tcp_stream(addr.host, addr.port)


def reset_on_close(stream: trio.SocketStream) -> None:
    """Close with RST rather than FIN (TCP only): an abortive client, and no
    TIME_WAIT left behind by the flood."""
    if stream.socket.family != socket.AF_UNIX:
        stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def send_quietly(stream: trio.SocketStream, data: bytes) -> bool:
    """Send; False once the helper has closed (the reply says why)."""
    try:
        await stream.send_all(data)
        return True
    except (trio.BrokenResourceError, OSError):
        return False


async def read_reply(stream: trio.SocketStream, patience: float) -> str:
    """Read what the helper says until it closes or patience runs out, and
    name it."""
    data = bytearray()
    how = "we hung up"
    with trio.move_on_after(patience):
        try:
            while chunk := await stream.receive_some(1 << 16):
                data += chunk
            how = "closed"
        except (trio.BrokenResourceError, OSError):
            how = "reset"
    if not data:
        return "nothing, then we hung up" if how == "we hung up" else f"{how} unanswered"
    if not data.startswith(HELPER_MAGIC) or len(data) < len(PREAMBLE):
        return f"unexpected reply {bytes(data[:16])!r}"
    rest = bytes(data[len(PREAMBLE) :])
    if not rest:
        return f"preamble, then {how}"
    typ, n = struct.unpack(">BI", rest[:5])
    if typ == proto.ERROR:
        code: str = json.loads(rest[5 : 5 + n])["code"]
        return "refused: " + code
    return "HANDSHAKE" if typ == proto.HANDSHAKE else f"unexpected frame {typ:#x}"


async def idle(stream: trio.SocketStream, rng: random.Random, i: int) -> str:
    # Some hang up before the helper's handshake deadline, some after.
    return await read_reply(stream, rng.uniform(0.2, 7.0))


async def idle_burst(stream: trio.SocketStream, rng: random.Random, i: int) -> str:
    return await read_reply(stream, rng.uniform(1.0, 3.0))


async def slow_hello(stream: trio.SocketStream, rng: random.Random, i: int) -> str:
    """The preamble byte by byte, then a HELLO three bytes at a time: too
    slow (22 pieces 0.3 s apart) for the helper's handshake deadline, or
    fast enough to be read, either without a token (waiting at the token
    gate with the guessers) or with a field out of range."""
    step = 0.3 if i % 3 == 0 else 0.05
    body = hello({"client": f"slow {i}"} if i % 3 != 2 else {"client": f"slow {i}", "advance_ms": 5})
    pieces = [PREAMBLE[j : j + 1] for j in range(len(PREAMBLE))]
    pieces += [body[j : j + 3] for j in range(0, len(body), 3)]
    for piece in pieces:
        if not await send_quietly(stream, piece):
            break
        await trio.sleep(step)
    return await read_reply(stream, 7.0)


async def garbage(stream: trio.SocketStream, rng: random.Random, i: int) -> str:
    _, make = GARBAGE[i % len(GARBAGE)]
    await send_quietly(stream, make(rng))
    return await read_reply(stream, 6.5)


async def wrong_token(stream: trio.SocketStream, rng: random.Random, i: int) -> str:
    """A guess, then waiting for the verdict; the impatient hang up while
    the helper still holds them at its token gate."""
    await send_quietly(stream, PREAMBLE + hello({"token": f"guess-{i}", "client": "guesser"}))
    return await read_reply(stream, rng.uniform(0.5, 7.0))


async def right_token(stream: trio.SocketStream, rng: random.Random, i: int) -> str:
    await send_quietly(stream, PREAMBLE + hello({"token": TOKEN, "client": f"second {i}"}))
    return await read_reply(stream, 7.0)


async def flood(stream: trio.SocketStream, rng: random.Random, i: int) -> str:
    if i % 2:
        reset_on_close(stream)
        return "reset at once"
    return "closed at once"


CONVERSATIONS: dict[str, Callable[[trio.SocketStream, random.Random, int], Awaitable[str]]] = {
    "idle": idle,
    "idle burst": idle_burst,
    "slow hello": slow_hello,
    "garbage": garbage,
    "wrong token": wrong_token,
    "connect/close flood": flood,
    "right token, busy": right_token,
}


async def one_connection(addr: Address, kind: Kind, rng: random.Random, i: int) -> str:
    outcome = "still open at the connection bound"
    with trio.move_on_after(CONNECTION_BOUND):
        try:
            stream = await open_stream(addr)
        except OSError:
            return "connect failed"
        try:
            outcome = await CONVERSATIONS[kind.name](stream, rng, i)
        finally:
            with trio.CancelScope(shield=True):
                await stream.aclose()
    return outcome


async def hostile(addr: Address, kind: Kind, stop_at: float) -> None:
    """Connections of one kind, a few at a time, until its count is reached
    or the hostile phase is over."""
    rng = random.Random(f"soak {kind.name}")

    async def worker() -> None:
        while kind.tried < kind.count and trio.current_time() < stop_at:
            i = kind.tried
            kind.tried += 1
            outcome = await one_connection(addr, kind, rng, i)
            kind.outcomes[outcome] += 1
            kind.first.setdefault(outcome, i)
            await trio.sleep(kind.pause)

    await trio.sleep(kind.start_after)

    async with trio.open_nursery() as nursery:
        for _ in range(kind.workers):
            nursery.start_soon(worker)


# ---- the service's health ----------------------------------------------------


@dataclass
class Health:
    goroutines: int
    rss: int


def goroutine_count(http: str) -> int:
    assert http.startswith("http://127.0.0.1:"), http
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only, never a proxy
    with opener.open(f"{http}/debug/pprof/goroutine?debug=1", timeout=10) as r:
        first = r.readline().decode()
    m = re.match(r"goroutine profile: total (\d+)", first)
    assert m, first
    return int(m[1])


async def health(http: str, service: psutil.Process) -> Health:
    n = await trio.to_thread.run_sync(goroutine_count, http)
    return Health(n, service.memory_info().rss)


def within(now: Health, base: Health) -> bool:
    rss_slack = max(RSS_SLACK_BYTES, int(base.rss * RSS_SLACK_RATIO))
    return now.goroutines <= base.goroutines + GOROUTINE_SLACK and now.rss <= base.rss + rss_slack


def mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


# ---- the soak ---------------------------------------------------------------


@pytest.mark.once  # the helper and the recorder: no decoding
@pytest.mark.parametrize("transport", ["tcp", "unix"])
async def test_hostile_clients_leave_the_recording_and_the_service_whole(
    transport: str, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    demo_exe("1.26")  # built (or found) before the clock starts
    listen = "tcp:127.0.0.1:0" if transport == "tcp" else f"unix:{tmp_path}/trace.sock"
    by_name = kinds()
    peak = Health(0, 0)
    deadline = trio.current_time() + SOAK_BOUND
    with trio.fail_at(deadline):
        # One consumer at a time, so that the second client with the right token is refused as busy.
        args = ["-workers", "1", "-max-consumers", "1"]
        async with demo("1.26", args=args, env={"LIVETRACE_TOKEN": TOKEN}, listen=listen) as d:
            addr = parse_address(d.trace_address)
            service = psutil.Process(d.pid)
            # The service's steady state: the highest of a few samples once
            # its load generators are running.
            samples = []
            for _ in range(3):
                await trio.sleep(0.7)
                samples.append(await health(d.http, service))
            before = Health(max(s.goroutines for s in samples), max(s.rss for s in samples))
            log_lines_before = len(d.log_path.read_text(errors="replace").splitlines())

            async with livetrace.connect(d.trace_address, token=TOKEN, client_name="soak recorder") as session:
                recorder = livetrace.Recorder(session, tmp_path / "soak.trace")
                async with trio.open_nursery() as outer:
                    outer.start_soon(recorder.run)
                    stop_at = trio.current_time() + HOSTILE_SECONDS
                    async with trio.open_nursery() as soak:
                        for kind in by_name.values():
                            soak.start_soon(hostile, addr, kind, stop_at)
                        # Sample while the hostile phase lasts.
                        while trio.current_time() < stop_at:
                            h = await health(d.http, service)
                            peak = Health(max(peak.goroutines, h.goroutines), max(peak.rss, h.rss))
                            await trio.sleep(SAMPLE_EVERY)
                    hostile_end = trio.current_time()
                    await session.stop()
            rec = recorder.result

            # Back to about the baseline. Every hostile handshake ends by the
            # helper's deadline, so the service is measured once that has
            # passed for the last one, and given a while longer if need be.
            await trio.sleep_until(hostile_end + HELPER_HANDSHAKE_TIMEOUT + 1.0)
            after = await health(d.http, service)
            while not within(after, before) and trio.current_time() - hostile_end < SETTLE_BOUND:
                await trio.sleep(0.5)
                after = await health(d.http, service)
            measured_at = trio.current_time() - hostile_end

            async with livetrace.connect(d.trace_address, token=TOKEN, duration=1.0) as fresh_session:
                fresh = await livetrace.record(fresh_session, tmp_path / "fresh.trace")
            soak_log = d.log_path.read_text(errors="replace").splitlines()[log_lines_before:]

    report: dict[str, object] = {
        "transport": transport,
        **{f"tried {k.name}": k.tried for k in by_name.values()},
        **{f"outcomes {k.name}": dict(k.outcomes.most_common()) for k in by_name.values()},
        "recorded bytes": rec.counters.bytes,
        "recorded files": len(rec.paths),
        "recorded gaps": len(rec.gaps),
        "fresh recorded bytes": fresh.counters.bytes,
        "goroutines before": before.goroutines,
        "goroutines peak": peak.goroutines,
        "goroutines after": after.goroutines,
        "rss before": before.rss,
        "rss peak": peak.rss,
        "rss after": after.rss,
        "seconds from the last hostile connection to after": round(measured_at, 1),
        "helper log lines during the soak": len(soak_log),
    }
    for name, value in report.items():
        record_property(re.sub(r"\W+", "_", name), value)
    print(f"\nsoak over {transport}, {HOSTILE_SECONDS:.0f} s of hostile clients beside a recording:")
    for k in by_name.values():
        outcomes = "; ".join(f"{n} {what}" for what, n in k.outcomes.most_common())
        print(f"  {k.name:20} {k.tried:5} tried: {outcomes}")
    print(
        f"  recorded {mib(rec.counters.bytes)} in {len(rec.paths)} file(s), {len(rec.gaps)} gap(s), "
        f"ended {rec.end.reason if rec.end else 'without an end frame'}; fresh record {mib(fresh.counters.bytes)}"
    )
    print(f"  goroutines {before.goroutines} before, {peak.goroutines} at the peak, {after.goroutines} after")
    print(
        f"  RSS {mib(before.rss)} before, {mib(peak.rss)} at the peak, {mib(after.rss)} after "
        f"(measured {measured_at:.1f} s after the last hostile connection)"
    )
    print(f"  helper log: {len(soak_log)} lines during the soak")
    print("".join(f"    {line}\n" for line in soak_log), end="")

    assert rec.complete and rec.end is not None and rec.end.reason == "client-stop", rec
    assert rec.counters.bytes > 0 and rec.paths
    for k in by_name.values():
        assert k.tried > 0, k.name
        assert not k.unexpected(), f"{k.name}: {k.unexpected()}"
    assert within(after, before), (
        f"the service did not come back to about its baseline within {SETTLE_BOUND:.0f} s: "
        f"{before} before, {after} after\n" + "\n".join(soak_log[-40:])
    )
    assert fresh.complete and fresh.end is not None and fresh.end.reason == "duration", fresh
    assert not any("panic" in line for line in soak_log), "\n".join(soak_log)
    assert len(soak_log) <= LOG_LINE_BUDGET, "hostile clients flooded the service's log:\n" + "\n".join(soak_log)
    with trio.fail_at(deadline):
        for path in [*rec.paths, *fresh.paths]:
            await trio.to_thread.run_sync(go_tool_trace, "1.26", path)
