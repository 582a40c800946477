"""Segment mode for legacy runtimes: the helper stops and restarts the trace
every N seconds, so that each segment is a complete trace; `record
--segment N` writes one file per segment, each read by Go's own tool and by
our legacy decoder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import trio

import livetrace

from .conftest import demo, go_tool_trace
from .test_legacy import assert_same_dump, go_legacy_dump, our_dump

# Recording and the pure-Python legacy decoder, whichever the pass: the twin's pass would repeat it.
pytestmark = pytest.mark.once


@pytest.mark.slow
@pytest.mark.parametrize("version", ["1.19", "1.21"])
async def test_each_segment_is_a_complete_trace(version: str, tmp_path: Path) -> None:
    async with demo(version, args=["-workers", "1"]) as d:
        async with livetrace.connect(d.trace_address, duration=3.6, segment=1.0) as session:
            assert session.info.segment_ms == 1000
            rec = await livetrace.record(session, tmp_path / "seg.trace")
    assert rec.complete and rec.end is not None and rec.end.reason == "duration"
    assert len(rec.segments) >= 2 and len(rec.paths) == len(rec.segments) + 1
    assert [s.segment for s in rec.segments] == list(range(1, len(rec.segments) + 1))
    assert rec.paths[0] == tmp_path / "seg.trace" and rec.paths[1] == tmp_path / "seg.2.trace"
    for path in rec.paths:
        go_tool_trace(version, path)  # that toolchain's own tool opens every segment
    go = go_legacy_dump(rec.paths[1])
    assert go.returncode == 0, go.stderr
    assert_same_dump(our_dump(rec.paths[1].read_bytes()), go.stdout.splitlines())


@pytest.mark.slow
async def test_modern_runtimes_need_no_segments(tmp_path: Path) -> None:
    async with demo("1.26", args=["-workers", "1"]) as d:
        async with livetrace.connect(d.trace_address, duration=1.5, segment=1.0) as session:
            assert session.info.segment_ms == 0
            rec = await livetrace.record(session, tmp_path / "modern.trace")
    assert rec.complete and rec.segments == [] and len(rec.paths) == 1


@pytest.mark.slow
async def test_record_cli_writes_a_file_per_segment(tmp_path: Path) -> None:
    async with demo("1.21", args=["-workers", "1"]) as d:
        out = await trio.to_thread.run_sync(
            lambda: subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "livetrace",
                    "record",
                    d.trace_address,
                    "-o",
                    str(tmp_path / "t.trace"),
                    "--segment",
                    "1",
                    "--duration",
                    "2.5",
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
        )
    assert out.returncode == 0, out.stderr
    assert "segment mode" in out.stderr and "t.2.trace" in out.stderr
    assert (tmp_path / "t.trace").exists() and (tmp_path / "t.2.trace").exists()


def test_record_cli_refuses_segments_into_a_stream() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "livetrace", "record", "unix:/nonexistent", "-o", "-", "--segment", "2"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "one file per segment" in out.stderr
    out = subprocess.run(
        [sys.executable, "-m", "livetrace", "record", "unix:/nonexistent", "-o", "x", "--segment", "0.5"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "at least 1 second" in out.stderr
