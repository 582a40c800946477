"""A second, unprivileged local user for the attacks the security tests make.

livetrace is often run as root against files, sockets and processes that
another user controls. The tests that check it never trusts them need that
other user for real: created here when the suite runs as root (as CI does),
skipped with the reason otherwise. Its processes are started with
subprocess's `user=`/`group=`, so what it does is done with its own rights.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

NAME = "livetrace-attacker"


@dataclass(frozen=True)
class OtherUser:
    name: str
    uid: int
    gid: int

    def run(self, argv: list[str], **kw: Any) -> subprocess.CompletedProcess[Any]:
        """Run argv as this user (no extra groups), checked."""
        return subprocess.run(argv, user=self.uid, group=self.gid, extra_groups=[], check=True, **kw)

    def popen(self, argv: list[str], **kw: Any) -> subprocess.Popen[Any]:
        return subprocess.Popen(argv, user=self.uid, group=self.gid, extra_groups=[], **kw)

    def python(self) -> str:
        """This interpreter, with livetrace importable, for a command this
        user runs; or skip the calling test when a directory above the
        checkout or its virtual environment is closed to other users (a
        checkout in a 0700 `mktemp -d` is): opening it for the test would
        change the rights of a directory the suite does not own."""
        why = _unreachable(self.uid, self.gid)
        if why:
            pytest.skip(why)
        return sys.executable

    def owned_dir(self, path: Path) -> Path:
        """Make path a directory this user owns (0755), as a home or a shared folder is."""
        path.mkdir(parents=True, exist_ok=True)
        os.chown(path, self.uid, self.gid)
        path.chmod(0o755)
        return path


@cache
def _unreachable(uid: int, gid: int) -> str:
    """Why a user cannot run `sys.executable -c 'import livetrace'` from the checkout; empty if it can."""
    root = Path(__file__).resolve().parent.parent
    try:
        subprocess.run(
            [sys.executable, "-I", "-c", "import sys; sys.path.insert(0, sys.argv[1]); import livetrace", str(root)],
            user=uid,
            group=gid,
            extra_groups=[],
            cwd="/",
            check=True,
            capture_output=True,
            timeout=120,
        )
    except (OSError, subprocess.CalledProcessError) as e:
        said = (
            e.stderr.decode(errors="replace").strip().splitlines()[-1:]
            if isinstance(e, subprocess.CalledProcessError)
            else [str(e)]
        )
        return (
            f"the second user cannot run {sys.executable} with livetrace from {root} ({'; '.join(said)}): "
            "a directory above them is closed to other users; run the suite from a checkout others may traverse"
        )
    return ""


@cache
def _ensure() -> OtherUser | str:
    """The user, created if missing; or why there can be none here."""
    if os.geteuid() != 0:
        return "needs root, to act as a second, unprivileged user"
    try:
        entry = pwd.getpwnam(NAME)
    except KeyError:
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        if not Path(useradd).exists():
            return "no useradd here to create a second user"
        made = subprocess.run(
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", NAME],
            check=False,
            capture_output=True,
            text=True,
        )
        try:  # made now, here or by another xdist worker at the same moment
            entry = pwd.getpwnam(NAME)
        except KeyError:
            raise RuntimeError(f"useradd {NAME} failed: {made.stderr.strip()}") from None
    return OtherUser(entry.pw_name, entry.pw_uid, entry.pw_gid)


def other_user() -> OtherUser:
    """The second user, or skip (fail in CI, which runs as root) the calling test."""
    got = _ensure()
    if isinstance(got, str):
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail(got, pytrace=False)
        pytest.skip(got)
    return got


def world_traversable(path: Path) -> None:
    """Open the directories above path to the other user (pytest's tmp_path is 0700 under root)."""
    for parent in [path, *path.parents]:
        if parent == Path("/"):
            break
        mode = parent.stat().st_mode & 0o777
        if mode & 0o011 != 0o011:
            parent.chmod(mode | 0o011)
