"""Another user who owns the directory above the runtime directory cannot
steer the helper's announce record (docs/protocol.md, "Announce records").

That is the case of root starting a service after `su` without `-`, with
XDG_RUNTIME_DIR still the user's: the user cannot write into root's private
runtime directory, but can rename it and put a symbolic link in its place.
Here the user swaps the two in a tight loop (an atomic exchange) while the
helper starts and closes a thousand times as root; nothing may ever be
written into the user's chosen directory, and each start either announces
in the real directory or says clearly why not.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import struct
import subprocess
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from livetrace._go.toolchain import go_env
from tests.conftest import ROOT, go_binary
from tests.otheruser import other_user

STARTS = 1000

# Run as the other user: swap <parent>/livetrace with a symbolic link to
# <target> (RENAME_EXCHANGE, so that one of the two is always there) until
# SIGTERM, then print how many swaps succeeded.
ATTACKER = r"""
import ctypes, os, signal, sys
parent, target = sys.argv[1], sys.argv[2]
real, link = os.fsencode(os.path.join(parent, "livetrace")), os.fsencode(os.path.join(parent, "swap"))
os.symlink(target, link)
renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
swaps = 0
def stop(*_):
    print(swaps, flush=True)
    os._exit(0)
signal.signal(signal.SIGTERM, stop)
print("swapping", flush=True)
while True:
    if renameat2(-100, real, -100, link, 2) == 0:  # AT_FDCWD, RENAME_EXCHANGE
        swaps += 1
"""


@cache
def _announcer(go: Path) -> Path:
    out = ROOT / ".cache" / "announcer-builds"
    out.mkdir(parents=True, exist_ok=True)
    exe = out / "announcer"
    proc = subprocess.run(
        [str(go), "build", "-o", str(exe), "."],
        cwd=ROOT / "tests" / "goprogs" / "announcer",
        env=go_env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, f"building the announcer with {go} failed:\n{proc.stderr}"
    return exe


class _Watch:
    """inotify on a directory: every name created or moved into it."""

    IN_MOVED_TO, IN_CREATE, IN_NONBLOCK = 0x80, 0x100, 0o4000

    def __init__(self, path: Path) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(self.IN_NONBLOCK)
        assert self.fd >= 0, os.strerror(ctypes.get_errno())
        wd = libc.inotify_add_watch(self.fd, os.fsencode(path), self.IN_CREATE | self.IN_MOVED_TO)
        assert wd >= 0, os.strerror(ctypes.get_errno())

    def names(self) -> list[str]:
        try:
            buf = os.read(self.fd, 1 << 20)
        except BlockingIOError:
            return []
        finally:
            os.close(self.fd)
        names, at = [], 0
        while at < len(buf):
            _wd, _mask, _cookie, size = struct.unpack_from("iIII", buf, at)
            at += 16
            names.append(buf[at : at + size].rstrip(b"\0").decode(errors="replace"))
            at += size
        return names


@pytest.fixture
def base() -> Iterator[Path]:
    """A fresh directory the other user can reach. Not under pytest's
    tmp_path: any pytest run of root's starting meanwhile closes that to
    other users again."""
    path = Path(tempfile.mkdtemp(prefix="livetrace-race-"))
    try:
        path.chmod(0o711)
        yield path
    finally:
        shutil.rmtree(path)


@pytest.mark.slow
@pytest.mark.once
def test_a_runtime_dir_swapped_for_a_symlink_gets_nothing_written_through_it(base: Path) -> None:
    other = other_user()
    exe = _announcer(go_binary("1.26"))
    parent = other.owned_dir(base / "home-of-other")  # the user's XDG_RUNTIME_DIR
    target = other.owned_dir(base / "target-of-other")
    target.chmod(0o777)
    real = parent / "livetrace"
    real.mkdir(mode=0o700)  # root's, from an earlier run
    watch = _Watch(target)

    attacker = other.popen(
        [other.python(), "-I", "-c", ATTACKER, str(parent), str(target)],
        stdout=subprocess.PIPE,
        text=True,
        cwd="/",
    )
    try:
        assert attacker.stdout is not None
        assert attacker.stdout.readline().strip() == "swapping"
        env = {k: v for k, v in os.environ.items() if not k.startswith("LIVETRACE_")}
        env["XDG_RUNTIME_DIR"] = str(parent)
        run = subprocess.run([str(exe), "-n", str(STARTS)], env=env, capture_output=True, text=True, timeout=300)
    finally:
        attacker.send_signal(signal.SIGTERM)
        out, _ = attacker.communicate(timeout=30)
    swaps = int(out.strip())
    written = watch.names()

    assert run.returncode == 0, run.stderr[-3000:]
    assert swaps > STARTS, f"the other user swapped only {swaps} times: the race was not run"
    assert written == [], f"root wrote {sorted(set(written))} into the other user's {target}"
    assert list(target.iterdir()) == []
    # No stray temporary file beside the directory either, and every record
    # written was removed on Close, wherever the swaps left the directory.
    assert sorted(p.name for p in parent.iterdir()) == ["livetrace", "swap"]
    the_dir = next(p for p in parent.iterdir() if not p.is_symlink())
    assert list(the_dir.iterdir()) == []
    fields = dict(f.split("=") for f in run.stdout.split()[1:])
    assert int(fields["announced"]) + int(fields["warned"]) == STARTS
    assert int(fields["announced"]) > 0, run.stderr[-3000:]
    warnings = [line for line in run.stderr.splitlines() if line.startswith("not announcing")]
    assert len(warnings) == int(fields["warned"])
    # Each refusal says what it saw: the link, or the directory just
    # swapped back in by the time the helper looked again to say why.
    clear = (f"{real} is a symbolic link;", f"{real} was replaced while it was being opened")
    unclear = [w for w in warnings if not any(c in w for c in clear)]
    assert unclear == [], "\n".join(unclear[:10])
