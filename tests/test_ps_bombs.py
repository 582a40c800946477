"""`livetrace ps` as root against what another user runs (issue 24, finding 3).

root's `ps` reads every process's executable and asks every Go process's
ports for /debug/pprof/, so each of these is a real executable or listener
that the second, unprivileged user runs: a copy of /bin/sleep with hostile
section headers or Go build information appended (the loader never looks at
either, so it still runs), listeners that never answer, and a server whose
answer is a gzip bomb. `ps` runs as a user runs it, in its own process; it
must finish within a few seconds and 100 MB whatever they do, and say what
it skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from livetrace._attach.buildinfo import read_build_info
from livetrace._attach.elf import MAX_HEADERS, parse_elf
from livetrace._attach.probe import PROBE_DEADLINE, PROBE_TIMEOUT, PortAnswer, probe_pprof
from livetrace._errors import BuildInfoTooLargeError
from tests.elfbuild import MAGIC, SENTINEL_END, SENTINEL_START, wrap_modinfo
from tests.otheruser import other_user, world_traversable
from tests.textform import uvarint

pytestmark = [pytest.mark.once]

ROOT = Path(__file__).resolve().parent.parent
# Generous for a loaded 2-core machine: alone, `ps` takes 1 to 3 s and
# 35-40 MB, but 5 to 7 s when six test runs share the two cores. Each bomb
# took far more before its fix (4 GB, 2 GB, 550 MB; the 900 ports 60 s).
MAX_SECONDS = 20.0
MAX_RSS_MB = 100.0
# A `ps` that runs away fails the test here rather than hang it.
KILL_AFTER = 90.0
SLEEP = Path("/bin/sleep")

SHT_PROGBITS, SHT_STRTAB = 1, 3
_SHDR = struct.Struct("<IIQQQQIIQQ")
_E_SHOFF, _E_SHENTSIZE, _E_SHNUM, _E_SHSTRNDX = 0x28, 0x3A, 0x3C, 0x3E


def _shdr(name: int, type_: int, addr: int = 0, offset: int = 0, size: int = 0) -> bytes:
    return _SHDR.pack(name, type_, 0, addr, offset, size, 0, 0, 1, 0)


class Patched:
    """A copy of /bin/sleep with things appended and a new section header
    table; program headers untouched, so it still runs."""

    def __init__(self) -> None:
        self.body = bytearray(SLEEP.read_bytes())
        assert self.body[4:6] == b"\x02\x01", "/bin/sleep is not a 64-bit little-endian ELF"

    def append(self, blob: bytes, align: int = 16) -> int:
        self.body += bytes(-len(self.body) % align)
        at = len(self.body)
        self.body += blob
        return at

    def sections(self, headers: list[bytes], shstrndx: int, shnum: int | None = None) -> int:
        at = self.append(b"".join(headers), 8)
        struct.pack_into("<Q", self.body, _E_SHOFF, at)
        struct.pack_into(
            "<HHH", self.body, _E_SHENTSIZE, _SHDR.size, len(headers) if shnum is None else shnum, shstrndx
        )
        return at

    def write(self, path: Path, size: int | None = None) -> Path:
        path.write_bytes(self.body)
        if size is not None:
            os.truncate(path, size)  # sparse: the rest reads as zeros
        path.chmod(0o755)
        return path


def _go_buildinfo(p: Patched, modinfo: bytes) -> None:
    """Give p a .go.buildinfo section holding a Go 1.18+ header, the version and modinfo."""
    names = b"\0.go.buildinfo\0.shstrtab\0"
    blob = MAGIC + bytes([8, 2]) + bytes(16)
    for s in (b"go1.26.6", modinfo):
        blob += uvarint(len(s)) + s
    at = p.append(blob)
    names_at = p.append(names)
    p.sections(
        [
            _shdr(0, 0),
            _shdr(1, SHT_PROGBITS, 0x7000_0000, at, len(blob)),
            _shdr(15, SHT_STRTAB, 0, names_at, len(names)),
        ],
        shstrndx=2,
    )


def long_names() -> Patched:
    """250 section headers that all name one 8 MiB string."""
    p = Patched()
    names_at = p.append(b"\0" + b"A" * (8 << 20) + b"\0")
    headers = [_shdr(0, 0)] + [_shdr(1, SHT_PROGBITS) for _ in range(248)]
    headers.append(_shdr(1, SHT_STRTAB, 0, names_at, (8 << 20) + 2))
    p.sections(headers, shstrndx=249)
    return p


MILLION = 1_000_000


def million_sections(path: Path) -> Path:
    """A million (zero) section headers, counted in section 0 (ELF extended numbering); sparse."""
    p = Patched()
    at = p.sections([_shdr(0, 0, size=MILLION)], shstrndx=0, shnum=0)
    return p.write(path, at + MILLION * _SHDR.size)


HUGE = 4 << 30


def huge_buildinfo(path: Path) -> Path:
    """A .go.buildinfo section declared 4 GiB long, of zeros (a sparse file)."""
    p = Patched()
    names = b"\0.go.buildinfo\0.shstrtab\0"
    names_at = p.append(names)
    data_at = p.append(b"", 4096)
    headers = [_shdr(0, 0), _shdr(1, SHT_PROGBITS, 0x7000_0000, data_at + (8 << 20), HUGE)]
    headers.append(_shdr(15, SHT_STRTAB, 0, names_at, len(names)))
    p.sections(headers, shstrndx=2)
    return p.write(path, len(p.body) + (8 << 20) + HUGE)


def big_modinfo() -> Patched:
    """Go build information whose module information is 64 MiB of dependencies."""
    line = b"dep\texample.com/m\tv1.0.0\th1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
    p = Patched()
    _go_buildinfo(p, SENTINEL_START + b"path\texample.com/bomb\n" + line * ((64 << 20) // len(line)) + SENTINEL_END)
    return p


def carrier() -> Patched:
    """A process `ps` takes for Go (it carries Go build information), to own listeners."""
    p = Patched()
    _go_buildinfo(p, wrap_modinfo("path\texample.com/carrier\nmod\texample.com/carrier\tv0.0.1\t\n"))
    return p


@dataclass
class PsRun:
    seconds: float
    rss_mb: float
    stdout: str
    stderr: str

    def row(self, pid: int) -> dict[str, object]:
        rows: list[dict[str, object]] = [json.loads(line) for line in self.stdout.splitlines()]
        (found,) = [r for r in rows if r["pid"] == pid]
        return found


# Runs argv and writes its peak RSS (KiB, from wait4) to the file named
# first. A child's peak counts the memory of whoever forked it, up to its
# exec: so not pytest, but this small launcher forks `ps`.
LAUNCHER = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_ps(*args: str) -> PsRun:
    """`livetrace ps --format jsonl ARGS` in its own process: how long it
    took, and its peak RSS."""
    env = {k: v for k, v in os.environ.items() if k != "LIVETRACE_TOKEN"}
    env["PYTHONPATH"] = str(ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        rss = Path(tmp) / "rss"
        argv = [sys.executable, "-m", "livetrace", "ps", "--format", "jsonl", *args]
        start = time.monotonic()
        got = subprocess.run(
            [sys.executable, "-c", LAUNCHER, str(rss), *argv],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=KILL_AFTER,
        )
        seconds = time.monotonic() - start
        return PsRun(seconds, int(rss.read_text()) / 1024, got.stdout, got.stderr)


def assert_bounded(run: PsRun) -> None:
    assert run.seconds < MAX_SECONDS and run.rss_mb < MAX_RSS_MB, (
        f"ps took {run.seconds:.1f} s and {run.rss_mb:.0f} MB; stderr: {run.stderr[-2000:]}"
    )


@pytest.fixture
def exe_dir() -> Iterator[Path]:
    """A directory the other user can run files from (pytest's tmp_path is
    0700 under root; this one is removed at once, it may hold gigabytes of holes)."""
    path = Path(tempfile.mkdtemp(prefix="livetrace-bombs-"))
    try:
        world_traversable(path)
        yield path
    finally:
        shutil.rmtree(path)


@contextmanager
def running(argv: list[str], **kw: object) -> Iterator[subprocess.Popen[bytes]]:
    """argv run by the other user, until the block ends."""
    proc = other_user().popen(argv, stdin=subprocess.DEVNULL, **kw)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _wait_exe(pid: int, path: Path) -> None:
    """Until process pid runs path (it execs it, or has started)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if os.readlink(f"/proc/{pid}/exe") == str(path):
                return
        except OSError:
            pass
        time.sleep(0.02)
    raise AssertionError(f"pid {pid} did not start {path}")


# ---------------------------------------------------------------- the executables


def test_long_names_are_not_copied() -> None:
    """Unit: 250 sections naming one 8 MiB string are refused at once, unread."""
    data = bytes(long_names().body)
    start = time.monotonic()
    with pytest.raises(BuildInfoTooLargeError, match="section name is longer"):
        read_build_info(data)
    assert time.monotonic() - start < 0.5


def test_section_count_is_capped() -> None:
    """Unit: more section headers than MAX_HEADERS are refused before any is read."""
    p = Patched()
    at = p.sections([_shdr(0, 0, size=MAX_HEADERS + 1)], shstrndx=0, shnum=0)
    p.body += bytes(at + (MAX_HEADERS + 1) * _SHDR.size - len(p.body))
    with pytest.raises(BuildInfoTooLargeError, match="section header table has 4097 entries"):
        parse_elf(bytes(p.body))


BOMBS = {
    "long-names": lambda d: long_names().write(d / "long-names"),
    "million-sections": lambda d: million_sections(d / "million-sections"),
    "huge-buildinfo": lambda d: huge_buildinfo(d / "huge-buildinfo"),
    "big-modinfo": lambda d: big_modinfo().write(d / "big-modinfo"),
}
# What ps says of each (the row's reason, with --all).
SAYS = {
    "long-names": "not inspected: /proc/{pid}/exe: a section name is longer than",
    "million-sections": "not inspected: /proc/{pid}/exe: the section header table has 1000000 entries",
    "huge-buildinfo": "not a Go program",
    "big-modinfo": "not inspected: /proc/{pid}/exe: the module information is",
}


@pytest.mark.slow
@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_ps_as_root_survives_hostile_executables(bomb: str, exe_dir: Path) -> None:
    other_user()
    path = BOMBS[bomb](exe_dir)
    with running([str(path), "120"]) as proc:
        _wait_exe(proc.pid, path)
        assert proc.poll() is None, f"{bomb} does not run"
        run = run_ps("--all")
        assert_bounded(run)
        row = run.row(proc.pid)
        assert str(row["reason"]).startswith(SAYS[bomb].format(pid=proc.pid)), row


# ---------------------------------------------------------------- the listeners

# net/http/pprof's index would carry both markers; the bomb inflates to zeros.
BOMB_BYTES = 256 << 20


def _gzip(data_chunks: Iterator[bytes]) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join(z.compress(c) for c in data_chunks) + z.flush()


def double_gzip_bomb() -> bytes:
    inner = _gzip(bytes(1 << 20) for _ in range(BOMB_BYTES >> 20))
    return _gzip(iter([inner]))


def serve_bomb(listener: socket.socket, body: bytes, stop: threading.Event) -> None:
    """Answer every request with a 200 whose body is body, Content-Encoding: gzip, gzip."""
    listener.settimeout(0.1)
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Encoding: gzip, gzip\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
    )
    while not stop.is_set():
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        with conn:
            conn.settimeout(2)
            try:
                conn.recv(65536)
                conn.sendall(head + body)
            except OSError:
                pass


@pytest.mark.slow
def test_ps_as_root_reads_probe_answers_raw(exe_dir: Path) -> None:
    """A Go process's port answers /debug/pprof/ with a small double-gzip
    bomb: ps reads it raw, finds no index, and stays small."""
    other_user()
    body = double_gzip_bomb()
    assert len(body) < 4096
    path = carrier().write(exe_dir / "carrier")
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    server = threading.Thread(target=serve_bomb, args=(listener, body, stop), daemon=True)
    server.start()
    try:
        # The carrier holds the listening socket too, so it is the Go process's port.
        with running([str(path), "120"], pass_fds=[listener.fileno()]) as proc:
            _wait_exe(proc.pid, path)
            run = run_ps()
            assert_bounded(run)
            row = run.row(proc.pid)
            assert row["kind"] == "go" and row["pprof"] is None and row["unprobed_ports"] == 0, row
    finally:
        stop.set()
        server.join()
        listener.close()


SILENT_PORTS = 900
OPEN_PORTS = """
import os, socket, sys
socks = []
for _ in range(int(sys.argv[2])):
    s = socket.create_server(("127.0.0.1", 0), backlog=64)
    s.set_inheritable(True)
    socks.append(s)
print(len(socks), flush=True)
os.execv(sys.argv[1], [sys.argv[1], "120"])
"""


@pytest.mark.slow
def test_ps_as_root_with_900_silent_ports(exe_dir: Path) -> None:
    """The other user's Go process listens on 900 loopback ports that accept
    (the kernel completes the handshake) and never answer: ps does not ask
    them all, ends within a few seconds, and says which it did not ask."""
    other_user()
    path = carrier().write(exe_dir / "carrier")
    script = exe_dir / "open_ports.py"
    script.write_text(OPEN_PORTS)
    script.chmod(0o644)
    with running(
        [other_user().python(), "-I", str(script), str(path), str(SILENT_PORTS)], stdout=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == str(SILENT_PORTS).encode()
        _wait_exe(proc.pid, path)
        run = run_ps()
        assert_bounded(run)
        row = run.row(proc.pid)
        assert row["kind"] == "go" and row["pprof"] is None, row
        assert isinstance(row["unprobed_ports"], int) and row["unprobed_ports"] >= SILENT_PORTS - 32, row
        assert "not probed: too many ports" in run.stderr
        table = run_ps_table(proc.pid)
        assert "not probed: too many ports" in table


def run_ps_table(pid: int) -> str:
    env = {k: v for k, v in os.environ.items() if k != "LIVETRACE_TOKEN"}
    env["PYTHONPATH"] = str(ROOT)
    got = subprocess.run(
        [sys.executable, "-m", "livetrace", "ps", str(pid)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=KILL_AFTER,
    )
    return got.stdout


@pytest.mark.slow
def test_probe_has_an_overall_deadline() -> None:
    """Many silent ports over many processes: the probe gives up on those
    it has not asked by its deadline, and says so (None), instead of
    taking 1 s for every 32 of them."""
    listeners = [socket.create_server(("127.0.0.1", 0), backlog=8) for _ in range(400)]
    try:
        targets = [("127.0.0.1", s.getsockname()[1]) for s in listeners]

        async def probe() -> dict[tuple[str, int], PortAnswer | bool | None]:
            return await probe_pprof(targets)

        start = time.monotonic()
        answers = trio.run(probe)
        took = time.monotonic() - start
        assert took < PROBE_DEADLINE + 2 * PROBE_TIMEOUT + 2, took
        assert not any(answers.values())
        assert sum(v is None for v in answers.values()) > 200
    finally:
        for s in listeners:
            s.close()
