"""The Go helper builds, vets and passes its own tests with every Go from
1.19 to 1.27, uses only the standard library, and serves a session with each."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import livetrace
from livetrace._go.toolchain import go_env, helper_dir

from .conftest import ALL_GO_VERSIONS, MODERN, demo, go_binary

HELPER = helper_dir()
# The helper, not the decoder: the twin's pass would only repeat these.
pytestmark = pytest.mark.once
# dev.py lint vets the helper, and checks its formatting, with Go 1.26. vet
# runs again with the oldest Go (the files before go1.22's build tag, which
# no later Go compiles) and the newest (the analyzers added since lint's):
# every Go from 1.22 compiles lint's files, and vet's analyzers grow from
# release to release. (A vet run is seconds of CPU on top of the build the
# toolchain's go test makes.)
VET_GO = {"1.19", "1.27"}


def go(version: str, *args: str, **env: str) -> str:
    out = subprocess.run(
        [str(go_binary(version)), *args],
        check=False,
        cwd=HELPER,
        capture_output=True,
        text=True,
        env={**go_env(), **env},
        timeout=600,
    )
    assert out.returncode == 0, f"go {version} {' '.join(args)} failed:\n{out.stdout[-2000:]}{out.stderr[-3000:]}"
    return out.stdout


@pytest.mark.go
@pytest.mark.parametrize("version", ALL_GO_VERSIONS)
def test_vet_and_unit_tests(version: str) -> None:
    if version in VET_GO:
        go(version, "vet", "./...")
    go(version, "test", "-count=1", "./...")


@pytest.mark.go
def test_standard_library_only() -> None:
    assert "require" not in (HELPER / "go.mod").read_text()
    deps = go("1.26", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./...").split()
    assert all(d.startswith("github.com/livetrace/livetrace/go_helper") for d in deps), deps


@pytest.mark.go
@pytest.mark.parametrize("goos", ["darwin", "windows", "freebsd"])
def test_builds_for_other_systems(goos: str) -> None:
    # Compiled and linked, without optimising (-N -l): the standard library
    # built for another system is most of the test's time, a quarter less
    # so, and what compiles and links unoptimised does so optimised.
    go("1.26", "build", "-gcflags=all=-N -l", "-o", "/dev/null", "./cmd/livetrace-demo", GOOS=goos, GOARCH="amd64")


@pytest.mark.slow
@pytest.mark.parametrize("version", ALL_GO_VERSIONS)
async def test_a_session_with_every_toolchain(version: str, tmp_path: Path) -> None:
    async with demo(version) as d:
        assert d.go_version.startswith(f"go{version}")
        async with livetrace.connect(d.trace_address, duration=0.5) as session:
            rec = await livetrace.record(session, tmp_path / "t.trace")
    assert rec.complete and rec.end is not None and rec.end.reason == "duration"
    header = rec.paths[0].read_bytes()[:16]
    assert header.startswith(b"go 1.")
    minor = int(header[5:].split(b" ")[0])
    assert (minor >= 22) == MODERN[version]
    if MODERN[version]:
        assert rec.generations >= 1
