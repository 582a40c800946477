"""The modern wire layer: framing any chunking, and `--dump wire` identical
to Go 1.27.3's `go tool trace -d=wire` for traces of every toolchain."""

from __future__ import annotations

import random
import select
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace import TraceFormatError
from livetrace._cli.render.dump import raw_lines, wire_lines
from livetrace._errors import TruncatedTraceError, UnsupportedTraceVersionError
from livetrace._trace.modern.raw import read_raw
from livetrace._trace.modern.wire import Batch, FrameReader

from . import textform
from .conftest import examples, go_dump
from .mutate import mutate

TEXT_TESTS = textform.all_tests()


def our_wire(pieces: list[bytes]) -> list[str]:
    reader = FrameReader()
    lines: list[str] = []
    for p in pieces:
        frames = reader.feed(p)
        if frames:
            assert reader.minor is not None
            lines.extend(wire_lines(frames, reader.minor))
    reader.close()
    return "\n".join(lines).split("\n") if lines else []


@pytest.mark.parametrize("t", [t for t in TEXT_TESTS if t.name != "go122-fail-first-gen-first"], ids=lambda t: t.name)
def test_text_form_traces_dump_as_written(t: textform.TextTrace) -> None:
    assert our_wire([t.data]) == t.wire_lines


def test_a_batch_cut_short_is_a_truncation_error_with_its_offset() -> None:
    (t,) = [t for t in TEXT_TESTS if t.name == "go122-fail-first-gen-first"]
    with pytest.raises(TruncatedTraceError) as exc:
        our_wire([t.data])
    assert exc.value.offset is not None and 16 < exc.value.offset < len(t.data)


@pytest.mark.go
def test_text_form_traces_match_go_too(tmp_path: Path) -> None:
    for t in TEXT_TESTS:
        if t.name == "go122-fail-first-gen-first":
            continue
        path = tmp_path / f"{t.name}.trace"
        path.write_bytes(t.data)
        status, expected, err = go_dump(path, "wire")
        assert status == 0, err
        assert our_wire([t.data]) == expected.splitlines(), t.name


@pytest.mark.slow
def test_any_chunking_gives_identical_frames(demo_traces: dict[str, Path]) -> None:
    data = demo_traces["1.26"].read_bytes()
    whole = FrameReader().feed(data)
    rng = random.Random(7)
    for _ in range(5):
        reader, frames, i = FrameReader(), [], 0
        while i < len(data):
            n = rng.choice([1, 2, 3, 7, 100, 4096, 70000])
            frames += reader.feed(data[i : i + n])
            i += n
        reader.close()
        assert frames == whole


def test_one_byte_at_a_time_equals_whole() -> None:
    for t in TEXT_TESTS[:6]:
        if t.name == "go122-fail-first-gen-first":
            continue
        assert our_wire([t.data[i : i + 1] for i in range(len(t.data))]) == our_wire([t.data])


def test_frames_know_their_offsets_and_generations() -> None:
    t = textform.load(textform.CORPUS / "go122-annotations.test")
    frames = FrameReader().feed(t.data)
    batches = [f for f in frames if isinstance(f, Batch)]
    assert batches[0].offset == 16 and batches[0].gen == 1
    for b in batches:
        assert t.data[b.payload_offset : b.payload_offset + len(b.payload)] == b.payload


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [
        (b"", TruncatedTraceError, "empty trace"),
        (b"go 1.26 tr", TruncatedTraceError, "inside its 16-byte header"),
        (b"GIF89a this is no trace", TraceFormatError, "not a Go execution trace"),
        (b"go 1.27 trace\x00\x00\x00", UnsupportedTraceVersionError, "unsupported trace version go 1.27"),
        (b"go 1.26 trace\x00\x00\x00\x07", TraceFormatError, "unexpected byte 7 where a batch should start"),
        (b"go 1.26 trace\x00\x00\x00\x01\x01\x02\x03\xff\xff\x7f", TraceFormatError, "larger than the 65536-byte"),
        (b"go 1.26 trace\x00\x00\x00\x01\x01\x02\x03\x05\x10\x01", TruncatedTraceError, "middle of a batch"),
        (b"go 1.26 trace\x00\x00\x00\x01" + b"\xff" * 12, TraceFormatError, "overflows a 64-bit integer"),
    ],
)
def test_bad_input_is_a_typed_error(data: bytes, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        our_wire([data])


def test_corrupt_payload_reports_offset_and_generation() -> None:
    t = textform.load(textform.CORPUS / "go122-annotations.test")
    frames = FrameReader().feed(t.data)
    b = next(f for f in frames if isinstance(f, Batch) and len(f.payload) > 20)
    data = bytearray(t.data)
    data[b.payload_offset] = 0x7E  # no such event
    with pytest.raises(TraceFormatError, match="invalid event type: 126") as exc:
        our_wire([bytes(data)])
    assert exc.value.offset == b.payload_offset and exc.value.generation == b.gen


def test_cli_prints_what_decoded_then_one_error_line(tmp_path: Path) -> None:
    """Cut inside a value, Go's raw reader fails there; cut where a value
    (or a byte of a string) would start, it ends as at the end of the file
    (Go's io.EOF), without the event cut, and with no error."""
    data = GENERATIONS.read_bytes()
    second = FrameReader().feed(data)[1]
    path = tmp_path / "cut.trace"
    path.write_bytes(data[: second.offset + 3])  # inside the second batch's M, a varint of 3 bytes
    out = subprocess.run(
        [sys.executable, "-m", "livetrace", "decode", "--dump", "wire", str(path)], capture_output=True, text=True
    )
    assert out.returncode == 1
    assert out.stdout.startswith("EventBatch gen=1") and "m=21610" not in out.stdout
    assert out.stderr.count("\n") == 1 and "unexpected EOF" in out.stderr and "offset" in out.stderr
    t = textform.load(textform.CORPUS / "go122-annotations.test")
    path.write_bytes(t.data[:-3])  # in the last string's bytes
    out = subprocess.run(
        [sys.executable, "-m", "livetrace", "decode", "--dump", "wire", str(path)], capture_output=True, text=True
    )
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout.endswith('String id=57\n\tdata="sync.(*WaitGroup).Wait"\n')


def test_stdin_is_decoded_as_it_arrives() -> None:
    t = textform.load(textform.CORPUS / "go122-annotations.test")
    first = FrameReader().feed(t.data)[0]
    assert isinstance(first, Batch)
    cut = first.payload_offset + len(first.payload)
    proc = subprocess.Popen(
        [sys.executable, "-m", "livetrace", "decode", "--dump", "wire", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(t.data[:cut])
    proc.stdin.flush()
    # The first batch is printed while the rest of the trace has not been written yet.
    line = readline_within(proc.stdout, 60)
    proc.stdin.write(t.data[cut:])
    proc.stdin.close()
    assert line.startswith("EventBatch gen=1")
    rest = proc.stdout.read().decode()
    assert proc.wait(timeout=30) == 0
    assert rest.rstrip("\n").split("\n") == t.wire_lines[1:]


def readline_within(stream: IO[bytes], seconds: float) -> str:
    """One line from a pipe, or a failure (never a hang) if none comes."""
    ready, _, _ = select.select([stream], [], [], seconds)
    if not ready:
        stream.close()
        pytest.fail(f"no output within {seconds} s")
    return stream.readline().decode()


@settings(max_examples=examples(300))
@given(st.data())
def test_fuzz_mutated_traces_decode_or_fail_cleanly(data: st.DataObject) -> None:
    t = data.draw(st.sampled_from(TEXT_TESTS))
    buf = mutate(data, t.data)
    try:
        our_wire([buf])
    except TraceFormatError as e:
        assert e.offset is None or 0 <= e.offset <= len(buf)


GENERATIONS = Path(__file__).parent / "corpus" / "runtime" / "go126-generations.trace"


@pytest.mark.parametrize("t", [t for t in TEXT_TESTS if t.expect_success][:12], ids=lambda t: t.name)
def test_the_raw_reader_reads_a_whole_trace_as_its_frames(t: textform.TextTrace) -> None:
    """Go's raw reader (sizes never used) and the frames' records agree
    wherever the framing holds."""
    reader = FrameReader()
    reader.feed(t.data)
    assert reader.minor is not None
    events, error = read_raw(t.data, 16, reader.minor)
    assert error is None
    assert "\n".join(raw_lines(events)).split("\n") == our_wire([t.data])


def test_the_raw_reader_ends_as_go_s_does() -> None:
    data = GENERATIONS.read_bytes()
    whole, error = read_raw(data, 16, 26)
    assert error is None and len(whole) > 1000
    # Cut where a value would start: a clean end, the event left out (Go's io.EOF).
    first = whole[0]
    assert first.spec is not None and first.spec.name == "EventBatch"
    cut_at_value = 16 + 1 + 1  # the batch byte and its one-byte generation
    events, error = read_raw(data[:cut_at_value], 16, 26)
    assert (events, error) == ([], None)
    # Cut inside a value of several bytes (the M's ten): an error.
    events, error = read_raw(data[: 16 + 4], 16, 26)
    assert events == [] and error is not None and "unexpected EOF" in str(error)
    # A batch's size is printed, never used: another one reads on alike. (The runtime pads it to a fixed width.)
    at = 17
    for _ in range(3):  # past the generation, the M and the time
        at = textform.past_uvarint(data, at)
    end = textform.past_uvarint(data, at)
    padded = bytes([0x85] + [0x80] * (end - at - 2) + [0x00])  # 5, as wide
    shrunk = data[:at] + padded + data[end:]
    events, error = read_raw(shrunk, 16, 26)
    assert error is None and [e.args for e in events[1:]] == [e.args for e in whole[1:]]
    assert events[0].args[3] == 5 != whole[0].args[3]
    # A code with no event in Go's table but inside it (1.26's gap before the experimental events): an empty line.
    gap = 60
    events, error = read_raw(data[:16] + bytes([gap]), 16, 26)
    assert error is None and list(raw_lines(events)) == [""]
    events, error = read_raw(data[:16] + bytes([200]), 16, 26)
    assert events == [] and str(error).startswith("invalid event type: 200")
