"""The README is real: the quick start is two commands, the test one is what
CI runs, the demo one works; the go.mod change it shows is the example's and
builds a service; the one-import opt-in of examples/go-service works; dev.py
installs no Go for the fast loop."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import trio

import livetrace
from livetrace._go.toolchain import go_env

from .conftest import ROOT, go_binary, go_tool_trace

# Documents, builds and recordings: no decoding, so the twin's pass would only repeat them.
pytestmark = pytest.mark.once

README = ROOT / "README.md"
EXAMPLE = ROOT / "examples" / "go-service"


def code_block(after: str) -> str:
    """The first fenced code block after the README text `after`."""
    text = README.read_text()
    m = re.search(re.escape(after) + r".*?^```[^\n]*\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    assert m, f"README has no code block after {after!r}"
    return m.group(1)


def quick_start() -> list[str]:
    return [line.split("#")[0].strip() for line in code_block("## Quick start").splitlines() if line.strip()]


def go_mod_lines(text: str) -> dict[str, str]:
    """go.mod's require and replace directives, by module path."""
    lines = {}
    for line in text.splitlines():
        words = line.split()
        if words and words[0] in ("require", "replace") and len(words) >= 3:
            lines[f"{words[0]} {words[1]}"] = line.strip()
    return lines


def test_quick_start_is_two_commands_and_ci_runs_the_test_one() -> None:
    demo_cmd, test_cmd = quick_start()
    assert demo_cmd == "python3 dev.py demo" and test_cmd == "python3 dev.py test"
    assert "python3 dev.py test" in (ROOT / ".ci" / "run").read_text().splitlines()
    assert README.read_text().index("## Quick start") < README.read_text().index("## Install")


def test_the_go_mod_change_is_the_examples() -> None:
    """The import, require and replace the README shows are what
    examples/go-service uses, and name the module go_helper/ declares."""
    module = (ROOT / "go_helper" / "go.mod").read_text().split()[1]
    assert code_block("Opting in takes one import").strip() == f'import _ "{module}"'
    readme = go_mod_lines(code_block("in the service's `go.mod`"))
    example = go_mod_lines((EXAMPLE / "go.mod").read_text())
    assert readme.keys() == example.keys() == {f"require {module}", f"replace {module}"}
    assert readme[f"require {module}"] == example[f"require {module}"]
    assert readme[f"replace {module}"].endswith("/go_helper")
    assert example[f"replace {module}"] == f"replace {module} => ../../go_helper"
    assert f"go get {module}@latest" in README.read_text()


@pytest.mark.go
def test_a_new_module_following_the_readme_builds(tmp_path: Path) -> None:
    """A fresh module, the README's import and go.mod lines word for word
    (the replace pointing at this checkout), builds with Go 1.26, offline."""
    go = str(go_binary("1.26"))
    subprocess.run(
        [go, "mod", "init", "example.com/myservice"], cwd=tmp_path, env=go_env(), check=True, capture_output=True
    )
    imports = code_block("Opting in takes one import").strip()
    (tmp_path / "main.go").write_text(f"package main\n\n{imports}\n\nfunc main() {{}}\n")
    lines = code_block("in the service's `go.mod`").replace("/path/to/livetrace/go_helper", str(ROOT / "go_helper"))
    with (tmp_path / "go.mod").open("a") as f:
        f.write("\n" + lines)
    build = subprocess.run(
        [go, "build", "-o", str(tmp_path / "svc"), "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**go_env(), "GOFLAGS": ""},
        timeout=600,
    )
    assert build.returncode == 0, build.stderr


def load_dev_py() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dev", ROOT / "dev.py")
    assert spec and spec.loader
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)
    return dev


@pytest.mark.parametrize(
    ("args", "no_go"),
    [
        (["-m", "not slow"], True),
        (["-mnot slow"], True),
        (["-x", "-m", "not slow and not go", "tests/test_protocol.py"], True),
        (["-m", "go and not slow"], True),
        ([], False),
        (["-m", "go"], False),
        (["-m", "not slow or go"], False),
        (["-m", "not (slow)"], False),
    ],
)
def test_dev_py_installs_no_go_for_the_fast_loop(args: list[str], no_go: bool) -> None:
    assert load_dev_py().excludes_slow(args) == no_go


@pytest.mark.parametrize(
    ("args", "per_core"),
    [
        (["-m", "not slow"], 1),
        (["-x", "tests/test_protocol.py"], 2),
        (["-n", "1"], 0),
        (["-n4"], 0),
        (["--numprocesses=2"], 0),
        (["-p", "no:xdist"], 0),
        (["--pdb"], 0),
    ],
)
def test_dev_py_spreads_the_tests_over_the_cores_unless_told(args: list[str], per_core: int) -> None:
    workers = per_core * len(os.sched_getaffinity(0))
    assert load_dev_py().parallel(args) == (["-n", str(workers), "--dist", "worksteal"] if workers else [])


@pytest.mark.slow
def test_the_demo_command_records_a_trace_go_opens(tmp_path: Path) -> None:
    demo_cmd, _ = quick_start()
    out = ROOT / "livetrace-demo.trace"
    out.unlink(missing_ok=True)
    proc = subprocess.run(
        demo_cmd.replace("python3", sys.executable, 1).split(), cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    assert "started livetrace-demo" in proc.stderr and "trace complete (ended: duration)" in proc.stderr
    assert "go tool trace" in proc.stderr
    go_tool_trace("1.26", out)


@pytest.mark.slow
async def test_one_import_and_the_environment_make_a_service_traceable(tmp_path: Path) -> None:
    exe = tmp_path / "go-service"
    build = subprocess.run(
        [str(go_binary("1.19")), "build", "-o", str(exe), "."],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        env=go_env(),
        timeout=600,
    )
    assert build.returncode == 0, build.stderr
    sock = tmp_path / "svc.sock"
    proc = await trio.lowlevel.open_process(
        [str(exe)],
        env={**go_env(), "LIVETRACE_LISTEN": f"unix:{sock}"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with trio.fail_after(30):
            while not sock.exists():
                await trio.sleep(0.05)
        async with livetrace.connect(f"unix:{sock}", duration=0.5) as session:
            rec = await livetrace.record(session, tmp_path / "svc.trace")
        assert rec.complete
        go_tool_trace("1.19", rec.paths[0])
    finally:
        proc.terminate()
        await proc.wait()
    assert not sock.exists(), "Close() removes the socket"
