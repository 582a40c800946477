"""The README's quick start is real: two commands, the test one is what CI
runs, the demo one works. The one-import opt-in of examples/go-service works."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import trio

import livetrace
from livetrace._go.toolchain import go_env

from .conftest import ROOT, go_binary, go_tool_trace

pytestmark = pytest.mark.slow


def quick_start() -> list[str]:
    text = (ROOT / "README.md").read_text()
    m = re.search(r"^## Quick start.*?^```[^\n]*\n(.*?)^```", text, re.S | re.M)
    assert m, "README has no Quick start code block"
    return [line.split("#")[0].strip() for line in m.group(1).splitlines() if line.strip()]


def test_quick_start_is_two_commands_and_ci_runs_the_test_one() -> None:
    demo_cmd, test_cmd = quick_start()
    assert demo_cmd == "python3 dev.py demo" and test_cmd == "python3 dev.py test"
    assert "exec python3 dev.py test" in (ROOT / ".ci" / "run").read_text()


def test_the_demo_command_records_a_trace_go_opens(tmp_path: Path) -> None:
    demo_cmd, _ = quick_start()
    out = ROOT / "livetrace-demo.trace"
    out.unlink(missing_ok=True)
    proc = subprocess.run(demo_cmd.replace("python3", sys.executable, 1).split(), cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "started livetrace-demo" in proc.stderr and "trace complete (ended: duration)" in proc.stderr
    assert "go tool trace" in proc.stderr
    go_tool_trace("1.26", out)


async def test_one_import_and_the_environment_make_a_service_traceable(tmp_path: Path) -> None:
    exe = tmp_path / "go-service"
    build = subprocess.run([str(go_binary("1.19")), "build", "-o", str(exe), "."], cwd=ROOT / "examples" / "go-service",
                           capture_output=True, text=True, env=go_env(), timeout=600)
    assert build.returncode == 0, build.stderr
    sock = tmp_path / "svc.sock"
    proc = await trio.lowlevel.open_process([str(exe)], env={**go_env(), "LIVETRACE_LISTEN": f"unix:{sock}"},
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
