"""`livetrace record` end to end: real services built with each toolchain,
the CLI as a separate process, files checked by that toolchain's go tool trace."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from .conftest import GO_VERSIONS, cli, count_events, demo, go_binary, go_tool_trace
from .gopprof import go_trace_pprof, read_totals

# Recording writes the bytes as they come, and Go checks them: no decoding on our side.
pytestmark = pytest.mark.once


async def finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str]:
    def wait() -> tuple[int, str]:
        _, err = proc.communicate(timeout=timeout)
        return proc.returncode, err

    return await trio.to_thread.run_sync(wait)


@pytest.mark.slow
@pytest.mark.parametrize("version", GO_VERSIONS)
async def test_recording_is_accepted_by_the_same_toolchain(version: str, tmp_path: Path) -> None:
    out = tmp_path / f"demo-{version}.trace"
    async with demo(version) as d:
        code, err = await finish(cli("record", d.trace_address, "-o", str(out), "--duration", "2"))
    assert code == 0, err
    assert "trace complete (ended: duration)" in err
    assert not list(tmp_path.glob("*.part")) and not list(tmp_path.glob("*.incomplete"))
    header = out.read_bytes()[:16]
    assert header.startswith(f"go {version} trace".encode()) or (
        version == "1.19" and header.startswith(b"go 1.19 trace")
    )
    assert count_events(version, go_tool_trace(version, out)) > 1000


@pytest.mark.slow
@pytest.mark.parametrize("version", ["1.26", "1.21"])
async def test_ctrl_c_stops_cleanly_and_the_trace_is_complete(version: str, tmp_path: Path) -> None:
    out = tmp_path / "interrupted.trace"
    async with demo(version) as d:
        proc = cli("record", d.trace_address, "-o", str(out))
        with trio.fail_after(30):  # the recording goes to a fresh out.name.XXXXXXXX.part first
            while not any(p.stat().st_size > 16 for p in tmp_path.glob(f"{out.name}.*.part")):
                await trio.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        code, err = await finish(proc)
    assert code == 0, err
    assert "stopping" in err and "trace complete (ended: client-stop)" in err
    assert count_events(version, go_tool_trace(version, out)) > 0


@pytest.mark.slow
async def test_service_death_is_reported_incomplete_with_status_1(tmp_path: Path) -> None:
    out = tmp_path / "cut.trace"
    async with demo("1.26") as d:
        proc = cli("record", d.trace_address, "-o", str(out))
        with trio.fail_after(30):
            while not any(p.stat().st_size > 100_000 for p in tmp_path.glob(f"{out.name}.*.part")):
                await trio.sleep(0.05)
        await trio.sleep(2)  # past a generation or two (the runtime's own, about a second): some are whole
        d.process.kill()
        code, err = await finish(proc)
    assert code == 1, err
    assert "INCOMPLETE recording" in err and "closed the connection before the end of the trace" in err
    assert not out.exists(), "an incomplete trace must not take the final name"
    kept = out.with_name(out.name + ".incomplete")
    assert kept.stat().st_size > 100_000 and str(kept) in err
    # What it kept is read as Go reads it: the profile of its whole generations is Go's.
    ours = tmp_path / "cut.pb.gz"
    code, err = await finish(cli("profile", str(kept), "--kind", "sched", "-o", str(ours)))
    assert code == 1 and "warning: the trace is incomplete" in err, err
    assert read_totals(ours.read_bytes()) == read_totals(go_trace_pprof(go_binary("1.27"), "sched", kept))


async def test_unreachable_service_is_one_line_and_status_2(tmp_path: Path) -> None:
    code, err = await finish(cli("record", f"unix:{tmp_path}/nothing.sock", "-o", str(tmp_path / "x.trace")))
    assert code == 2
    assert err.strip().count("\n") == 0 and err.startswith("livetrace: error: no socket at")
    assert "Traceback" not in err


def test_help_teaches_addresses_and_exit_statuses() -> None:
    out = subprocess.run([sys.executable, "-m", "livetrace", "record", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "unix:/path" in out.stdout and "exit status is 1" in out.stdout and "Ctrl-C" in out.stdout


@pytest.mark.slow
async def test_recording_to_a_device_or_pipe_writes_in_place(tmp_path: Path) -> None:
    async with demo("1.26", args=["-workers", "1"]) as d:
        code, err = await finish(cli("record", d.trace_address, "-o", "/dev/null", "--duration", "0.5"))
        assert code == 0, err
        assert Path("/dev/null").is_char_device(), "the device must never be renamed over"
        out = tmp_path / "piped.trace"
        shell = f"{sys.executable} -m livetrace record {d.trace_address} -o - --duration 1 > {out}"
        proc = await trio.run_process(shell, shell=True, capture_stderr=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert count_events("1.26", go_tool_trace("1.26", out)) > 1000
