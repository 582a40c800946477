"""A file or pipe that holds complete traces one after another (what
`livetrace record -o -` writes for a pprof session's windows): `decode`
reads each trace as if it were alone, with a gap line between two (issue
26, point 4). Real traces from tests/corpus, modern and legacy, and real
pprof windows of a Go service built in the test."""

from __future__ import annotations

import io
import random
import subprocess
import sys
from pathlib import Path

import pytest
import trio

import livetrace
from livetrace._cli.main import main
from livetrace._trace.modern.wire import Batch, EndOfGeneration, FrameReader
from livetrace._trace.spec.modern import EV_EVENT_BATCH, EV_EXPERIMENTAL_BATCH
from livetrace._trace.stream import NextTrace, TraceSplitter

from . import textform
from .plainsvc import plain_service

LEGACY = textform.CORPUS.parent / "legacy" / "go-testdata"
MODERN_A = textform.load(textform.CORPUS / "go122-annotations.test").data
MODERN_B = textform.load(textform.CORPUS / "go123-sync.test").data
LEGACY_A = (LEGACY / "http_1_21_good").read_bytes()
LEGACY_B = (LEGACY / "stress_1_5_good").read_bytes()
LEGACY_C = (LEGACY / "stress_1_11_good").read_bytes()
DELTA_TICKS = 1 << 40  # a later trace of the same clock


def shifted(data: bytes, ticks: int) -> bytes:
    """A modern trace with every batch's base time ``ticks`` later: the same
    trace, taken that much later on the same clock."""
    reader = FrameReader()
    frames = reader.feed(data)
    reader.close()
    out = bytearray(data[:16])
    for f in frames:
        if isinstance(f, EndOfGeneration):
            out += data[f.offset : f.offset + 1]
            continue
        assert isinstance(f, Batch)
        out += bytes([EV_EVENT_BATCH]) if f.exp < 0 else bytes([EV_EXPERIMENTAL_BATCH, f.exp])
        for v in (f.gen, f.m, f.time + ticks, len(f.payload)):
            out += textform.uvarint(v)
        out += f.payload
    return bytes(out)


def dump(path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["decode", str(path), *args])
    out, err = capsys.readouterr()
    return code, out, err


def gap_line(before: int, ms: float | None = None) -> str:
    pair = f"traces {before} and {before + 1} of the stream"
    if ms is None:
        return f"--- nothing traced between {pair}, for a time their clocks do not tell ---\n"
    return f"--- no trace for {ms:.1f} ms between {pair} (by their clocks) ---\n"


STREAMS = {
    "modern": [MODERN_A, MODERN_B, MODERN_B],  # each earlier on its clock than the one before: no length
    "legacy": [LEGACY_A, LEGACY_B, LEGACY_C],
    "mixed": [MODERN_B, LEGACY_A, MODERN_A],
}


@pytest.mark.once  # the splitting is plain Python; each trace's dump is compared across cores elsewhere
@pytest.mark.parametrize("name", list(STREAMS))
def test_decode_of_a_file_of_traces_is_each_trace_then_a_gap(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = STREAMS[name]
    alone = []
    for i, data in enumerate(traces):
        (tmp_path / f"{i}.trace").write_bytes(data)
        code, out, _ = dump(tmp_path / f"{i}.trace", capsys)
        assert code == 0 and out
        alone.append(out)
    both = tmp_path / "all.trace"
    both.write_bytes(b"".join(traces))
    code, out, err = dump(both, capsys)
    assert (code, err) == (0, "")
    assert out == alone[0] + gap_line(1) + alone[1] + gap_line(2) + alone[2]


@pytest.mark.parametrize("name", ["modern", "legacy"])
def test_decode_of_standard_input_holding_traces(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`record ... -o - | decode -`: the traces arrive on standard input."""
    traces = STREAMS[name][:2]
    expected = []
    for data in traces:
        (tmp_path / "one.trace").write_bytes(data)
        expected.append(dump(tmp_path / "one.trace", capsys)[1])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(b"".join(traces)))))
    code = main(["decode", "-"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert out == expected[0] + gap_line(1) + expected[1]


def test_the_gap_between_two_modern_traces_of_one_clock_is_measured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    later = shifted(MODERN_A, DELTA_TICKS)
    first = list(livetrace.decode(io.BytesIO(MODERN_A)))
    second = list(livetrace.decode(io.BytesIO(later)))
    assert [e.kind for e in second] == [e.kind for e in first]
    path = tmp_path / "two.trace"
    path.write_bytes(MODERN_A + later)
    items = list(livetrace.decode_batches(path))
    gaps = [i for i in items if isinstance(i, livetrace.TraceGap)]
    assert len(gaps) == 1 and gaps[0].measured and gaps[0].window == 1
    assert gaps[0].seconds == pytest.approx((second[0].time - first[-1].time) / 1e9)
    events = [e for i in items if isinstance(i, livetrace.EventBatch) for e in i]
    assert [e.time for e in events] == [e.time for e in first + second]
    code, out, _ = dump(path, capsys)
    assert code == 0 and gap_line(1, (second[0].time - first[-1].time) / 1e6) in out


@pytest.mark.once  # as above
def test_wire_and_legacy_dumps_read_streams_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for mode, traces in (("wire", [MODERN_A, MODERN_B]), ("legacy", [LEGACY_A, LEGACY_C])):
        alone = []
        for data in traces:
            (tmp_path / "one.trace").write_bytes(data)
            alone.append(dump(tmp_path / "one.trace", capsys, "--dump", mode)[1])
        (tmp_path / "two.trace").write_bytes(b"".join(traces))
        code, out, err = dump(tmp_path / "two.trace", capsys, "--dump", mode)
        assert (code, err) == (0, ""), mode
        assert out == alone[0] + gap_line(1) + alone[1], mode


def test_profiles_and_spans_of_a_stream_add_up_per_trace(tmp_path: Path) -> None:
    """Spans open at a trace's end end there: the next trace is its own."""
    path = tmp_path / "two.trace"
    small = (LEGACY / "user_task_region_1_21_good").read_bytes()
    path.write_bytes(LEGACY_A + small)
    for data, name in ((LEGACY_A, "a"), (small, "c")):
        (tmp_path / f"{name}.trace").write_bytes(data)

    def key(s: livetrace.Span) -> tuple[str, str, int, int, bool]:
        return (str(s.kind), str(s.resource), s.start, s.end, s.clipped_end)

    spans = [key(s) for s in livetrace.decode_spans(path)]
    alone = [key(s) for n in "ac" for s in livetrace.decode_spans(tmp_path / f"{n}.trace")]
    assert sorted(spans) == sorted(alone)


@pytest.mark.parametrize("seed", range(5))
def test_any_chunking_cuts_the_stream_at_the_same_places(seed: int) -> None:
    traces = [MODERN_A, LEGACY_A, MODERN_B, LEGACY_B]
    data = b"".join(traces)
    rng = random.Random(seed)
    splitter, got, current = TraceSplitter(), [], bytearray()
    pos = 0
    pieces = []
    while pos < len(data):
        n = 1 if seed == 0 else rng.randint(1, 300)
        pieces.append(data[pos : pos + n])
        pos += n
    for piece in [*(splitter.feed(p) for p in pieces), splitter.close()]:
        for item in piece:
            if isinstance(item, NextTrace):
                got.append(bytes(current))
                current.clear()
            else:
                current += item
    got.append(bytes(current))
    assert got == traces


def test_bytes_that_are_no_trace_go_through_for_the_decoder_to_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "junk.trace"
    path.write_bytes(MODERN_A + b"\x07junk that is no trace")
    code, out, err = dump(path, capsys)
    assert code == 1 and "unexpected byte 7 where a batch should start" in err
    path.write_bytes(MODERN_A + b"go 1.99 trace\x00\x00\x00")
    code, out, err = dump(path, capsys)
    assert code == 1 and gap_line(1) in out and "go 1.99" in err


async def _record_into_decode(version: str) -> tuple[subprocess.CompletedProcess[str], str]:
    async with plain_service(version) as svc:
        env_cmd = [sys.executable, "-m", "livetrace"]
        record = await trio.to_thread.run_sync(
            lambda: subprocess.Popen(
                [*env_cmd, "record", f"http://{svc.pprof}", "-o", "-", "--duration", "3", "--window", "1"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
        assert record.stdout is not None
        decode = await trio.to_thread.run_sync(
            lambda: subprocess.run(
                [*env_cmd, "decode", "-"], stdin=record.stdout, capture_output=True, text=True, timeout=120
            )
        )
        record.stdout.close()
        _, record_err = await trio.to_thread.run_sync(lambda: record.communicate(timeout=60))
        assert record.returncode == 0, record_err.decode()
        return decode, record_err.decode()


@pytest.mark.slow
@pytest.mark.once
@pytest.mark.parametrize("version", ["1.26", "1.21"])
def test_record_o_dash_of_pprof_windows_into_decode(version: str) -> None:
    """`record http://... -o - --window 1 | decode -`: three windows, each
    decoded whole, a gap line between two (it failed on the second header)."""
    decode, banner = trio.run(_record_into_decode, version)
    assert decode.returncode == 0, decode.stderr
    assert "one after another to standard output" in banner and "file of its own" not in banner
    lines = decode.stdout.splitlines()
    gaps = [i for i, line in enumerate(lines) if line.startswith("---")]
    assert [lines[i].split(" between ")[1].split(" of ")[0] for i in gaps] == ["traces 1 and 2", "traces 2 and 3"]
    assert 0 < gaps[0] < gaps[1] - 1 < len(lines) - 2, "events before, between and after the gaps"
    if version == "1.26":  # one process, one clock: the gaps are measured, and short
        for i in gaps:
            ms = float(lines[i].split("no trace for ")[1].split(" ms")[0])
            assert 0 <= ms < 2000
