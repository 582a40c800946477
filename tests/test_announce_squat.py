"""A squatted announce directory (issue 24, finding 13): /tmp/livetrace-<uid>
has a predictable name, so another user can make it first. `ps` ignores it,
and says whose it is and what to do, for both ways it can look: root, who can
open it (another user's), and a user it is closed to (cannot open it)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.otheruser import other_user

pytestmark = [pytest.mark.slow, pytest.mark.once]

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def sticky_tmp() -> Iterator[Path]:
    """A stand-in for /tmp: world-writable, sticky, reachable by everyone."""
    path = Path(tempfile.mkdtemp(prefix="livetrace-squat-"))
    path.chmod(0o1777)
    try:
        yield path
    finally:
        subprocess.run(["rm", "-rf", str(path)], check=True)


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIVETRACE_", "XDG_"))}
    return env | {"TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)}


def test_root_is_told_whose_squatted_directory_it_is(sticky_tmp: Path) -> None:
    user = other_user()
    squatted = sticky_tmp / f"livetrace-{os.getuid()}"
    user.run(["mkdir", "-m", "700", str(squatted)])
    got = subprocess.run(
        [sys.executable, "-m", "livetrace", "ps"], capture_output=True, text=True, env=_env(sticky_tmp), cwd=ROOT
    )
    said = next(line for line in got.stderr.splitlines() if "announce directory" in line)
    assert str(squatted) in said and f"{user.name} (uid {user.uid})" in said, said
    assert f"have {user.name} or root remove {squatted}" in said and "LIVETRACE_RUNTIME_DIR" in said, said


def test_a_user_is_told_whose_closed_directory_it_is(sticky_tmp: Path) -> None:
    """The other user's ps meets its directory made (0700) by root: it cannot
    even open it, and still learns whose it is."""
    user = other_user()
    squatted = sticky_tmp / f"livetrace-{user.uid}"
    squatted.mkdir(mode=0o700)
    proc = user.popen(
        [user.python(), "-m", "livetrace", "ps"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(sticky_tmp),
        cwd=ROOT,
    )
    _, stderr = proc.communicate(timeout=120)
    said = next(line for line in stderr.splitlines() if "announce directory" in line)
    assert "cannot open it: Permission denied" in said and "root (uid 0)" in said, said
    assert f"have root remove {squatted}" in said and "LIVETRACE_RUNTIME_DIR" in said, said
