"""The parsed layer: ordering and state machines, `--dump parsed` identical
to Go 1.27.3's `go tool trace -d=parsed`, Go's text-form tests, any chunking."""

from __future__ import annotations

import contextlib
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import livetrace
from livetrace._cli.render.dump import parsed_text
from livetrace._go.toolchain import go_env
from livetrace._trace.modern.decoder import ModernDecoder
from livetrace._trace.modern.wire import Batch, EndOfGeneration, FrameReader
from livetrace._trace.spec.modern import EV_FREQUENCY, EV_STACKS, EV_STRINGS, EV_SYNC

from . import textform
from .conftest import MODERN_VERSIONS, go_binary, go_dump
from .mutate import mutate

TEXT_TESTS = textform.all_tests()


def decode(pieces: list[bytes]) -> list[str]:
    d = ModernDecoder()
    out: list[str] = []
    for p in pieces:
        out += map(parsed_text, d.feed(p))
    out += map(parsed_text, d.close())
    return out


@pytest.mark.parametrize("t", TEXT_TESTS, ids=lambda t: t.name)
def test_go_text_form_tests(t: textform.TextTrace) -> None:
    if t.expect_success:
        assert decode([t.data])
    else:
        with pytest.raises(livetrace.TraceFormatError) as exc:
            decode([t.data])
        assert re.search(t.failure_pattern, str(exc.value)), str(exc.value)


@pytest.mark.go
def test_text_form_tests_print_what_go_prints(tmp_path: Path) -> None:
    for t in TEXT_TESTS:
        path = tmp_path / f"{t.name}.trace"
        path.write_bytes(t.data)
        status, expected, err = go_dump(path, "parsed")
        ours = subprocess.run(
            [sys.executable, "-m", "livetrace", "decode", str(path), "--dump", "parsed"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert ours.stdout == expected, t.name
        assert (ours.returncode == 0) == (status == 0), t.name
        if status:
            assert err.strip() in ours.stderr, t.name


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["wire", "parsed"])
@pytest.mark.parametrize("version", MODERN_VERSIONS)
def test_dump_is_identical_to_go(version: str, mode: str, demo_traces: dict[str, Path]) -> None:
    path = demo_traces[version]
    status, expected, err = go_dump(path, mode)
    assert status == 0, err
    ours = subprocess.run(
        [sys.executable, "-m", "livetrace", "decode", str(path), "--dump", mode],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == expected


def broken_variants(name: str, data: bytes) -> list[tuple[str, bytes]]:
    """data cut at four points, with three bytes changed (six ways), and
    with bytes put in (two ways): past its header, seeded."""
    out = [(f"{name}-cut{k}", data[: len(data) * k // 5]) for k in range(1, 5)]
    rng = random.Random(name)
    for k in range(6):
        b = bytearray(data)
        for _ in range(3):
            b[rng.randrange(16, len(b))] = rng.randrange(256)
        out.append((f"{name}-flip{k}", bytes(b)))
    for k in range(2):
        at = rng.randrange(16, len(data))
        out.append((f"{name}-insert{k}", data[:at] + rng.randbytes(rng.randrange(1, 9)) + data[at:]))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["parsed", "wire"])
def test_a_broken_trace_prints_what_go_prints_before_the_error(
    mode: str, tmp_path: Path, demo_traces: dict[str, Path]
) -> None:
    """Parsed: Go's reader gives a generation's events before it reads the
    next, so a problem in generation N (its framing, its tables, its order)
    leaves the generations before it printed, and Go 1.22-1.25's generation
    whose framing breaks is taken as whole so far (it has no end to look
    for). Wire: Go's raw reader reads one event after another and never
    looks at a batch's size, so where the framing breaks ours reads on
    from there as it does."""
    by_name = {t.name: t.data for t in TEXT_TESTS}
    sources = {
        "gens126": (Path(__file__).parent / "corpus" / "runtime" / "go126-generations.trace").read_bytes(),
        "demo123": demo_traces["1.23"].read_bytes()[:400_000],  # a cut trace of several generations, to break more
        "sync123": by_name["go123-sync"],
        "sync125": by_name["go125-sync"],
        "task122": by_name["go122-task-across-generations"],
    }
    compared = errors = 0
    for name, data in sources.items():
        for variant, broken in broken_variants(name, data):
            path = tmp_path / f"{variant}.trace"
            path.write_bytes(broken)
            # Bytes: a changed string is no longer UTF-8, and both print it as it is.
            go = subprocess.run(
                [str(go_binary("1.27")), "tool", "trace", f"-d={mode}", str(path)],
                capture_output=True,
                env={**go_env(), "TZ": "UTC"},
                timeout=300,
            )
            status, expected, err = go.returncode, go.stdout, go.stderr
            if status not in (0, 1):  # Go's reader panicked: nothing to hold ours to
                continue
            ours = subprocess.run(
                [sys.executable, "-m", "livetrace", "decode", str(path), "--dump", mode],
                capture_output=True,
                timeout=300,
            )
            assert ours.stdout == expected, variant
            assert (ours.returncode == 0) == (status == 0), (variant, ours.stderr, err)
            compared += 1
            errors += status == 1
    assert compared >= 50 and errors >= 30, (compared, errors)


def table_ending_early(data: bytes, generation: int, first: int) -> bytes | None:
    """data with the first batch of ``generation`` whose payload begins with
    the code ``first`` (a strings, stacks or sync batch) cut after its first
    record's code, its size made to match: the record's first value would
    begin where the batch ends. None if there is no such batch."""
    for f in FrameReader().feed(data):
        keep = 1 if first == EV_FREQUENCY else 2  # a lone frequency's value; else a record's first
        if isinstance(f, Batch) and f.gen == generation and f.payload[:1] == bytes([first]) and len(f.payload) > keep:
            size_at = f.offset + 1  # past the batch's code: its generation, thread and time, then its size
            for _ in range(3):
                size_at = textform.past_uvarint(data, size_at)
            width = f.payload_offset - size_at
            cut = data[:size_at] + textform.uvarint(keep, width) + f.payload[:keep]
            return cut + data[f.payload_offset + len(f.payload) :]
    return None


@pytest.mark.slow
def test_a_table_that_ends_where_a_value_begins_ends_the_trace_as_in_go(tmp_path: Path) -> None:
    """Go reads the values of the strings, stacks, CPU samples and sync
    batches with binary.ReadUvarint, whose bare io.EOF where a value would
    begin at the batch's end reaches `go tool trace` as the end of the
    stream: the generations before it, the final Sync, status 0, and
    nothing after it read. Found by a mutation fuzz against Go 1.27.3 (a
    flipped byte that made a clock snapshot's seconds swallow its
    nanoseconds); ours reported an error there. The second generation's
    strings, stacks and sync batches of a Go 1.26 trace, the sync batch of
    a 1.25 one, and the lone frequency of 1.23 and 1.22 ones, on both
    cores."""
    by_name = {t.name: t.data for t in TEXT_TESTS}
    sources = {
        "gens126": (Path(__file__).parent / "corpus" / "runtime" / "go126-generations.trace").read_bytes(),
        "sync123": by_name["go123-sync"],
        "sync125": by_name["go125-sync"],
        "task122": by_name["go122-task-across-generations"],
    }
    # The codes a table batch begins with: strings, stacks, and the sync batch's (Go 1.25+: EvSync;
    # before: its lone EvFrequency).
    firsts = {"strings": EV_STRINGS, "stacks": EV_STACKS, "sync": EV_SYNC, "frequency": EV_FREQUENCY}
    compared = 0
    for name, data in sources.items():
        for what, code in firsts.items():
            cut = table_ending_early(data, 2, code)
            if cut is None:
                continue
            path = tmp_path / f"{name}-{what}.trace"
            path.write_bytes(cut)
            go = subprocess.run(
                [str(go_binary("1.27")), "tool", "trace", "-d=parsed", str(path)],
                capture_output=True,
                env={**go_env(), "TZ": "UTC"},
                timeout=300,
            )
            assert go.returncode == 0, (name, what, go.stderr)  # the case: Go takes it for the end
            for pure in ("0", "1"):
                ours = subprocess.run(
                    [sys.executable, "-m", "livetrace", "decode", str(path), "--dump", "parsed"],
                    capture_output=True,
                    env={**os.environ, "LIVETRACE_PURE_PYTHON": pure},
                    timeout=300,
                )
                assert ours.stdout == go.stdout, (name, what, pure)
                assert ours.returncode == 0, (name, what, pure, ours.stderr)
            compared += 1
    assert compared >= 6, compared


@pytest.mark.slow
def test_any_chunking_gives_identical_events(demo_traces: dict[str, Path]) -> None:
    for version in ("1.26", "1.23"):  # with and without the end-of-generation byte
        data = demo_traces[version].read_bytes()
        whole = decode([data])
        rng = random.Random(version)
        pieces, i = [], 0
        while i < len(data):
            n = rng.choice([1, 5, 333, 4096, 65536])
            pieces.append(data[i : i + n])
            i += n
        assert decode(pieces) == whole


@pytest.mark.parametrize("t", [t for t in TEXT_TESTS if t.expect_success][:8], ids=lambda t: t.name)
def test_one_byte_at_a_time_equals_whole(t: textform.TextTrace) -> None:
    assert decode([t.data[i : i + 1] for i in range(len(t.data))]) == decode([t.data])


@pytest.mark.slow
@pytest.mark.parametrize("version", ["1.26", "1.23"])
def test_generations_come_out_as_soon_as_they_are_complete(version: str, demo_traces: dict[str, Path]) -> None:
    data = demo_traces[version].read_bytes()
    frames = FrameReader().feed(data)
    if version == "1.26":
        # The end-of-generation byte completes generation 1 on its own.
        end = next(f for f in frames if isinstance(f, EndOfGeneration))
        complete_at = end.offset + 1
    else:
        # Without it, generation 1 is complete once generation 2 begins.
        first2 = next(f for f in frames if isinstance(f, Batch) and f.gen == 2)
        complete_at = first2.payload_offset + len(first2.payload)
    d = ModernDecoder()
    assert d.feed(data[: complete_at - 1]) == [] and d.generations == 0
    events = d.feed(data[complete_at - 1 : complete_at])
    assert d.generations == 1 and events[0].kind == livetrace.Kind.SYNC and len(events) > 100


def test_truncated_stream_keeps_what_decoded_and_says_where() -> None:
    t = textform.load(textform.CORPUS / "go122-annotations.test")
    d = ModernDecoder()
    d.feed(t.data[:-7])
    with pytest.raises(livetrace.TruncatedTraceError) as exc:
        d.close()
    assert exc.value.offset is not None and exc.value.offset < len(t.data)
    assert exc.value.partial and exc.value.partial[-1].kind == livetrace.Kind.SYNC


def test_ordering_errors_name_the_generation() -> None:
    (t,) = [t for t in TEXT_TESTS if t.name == "go122-create-syscall-with-p"]
    with pytest.raises(livetrace.TraceFormatError) as exc:
        decode([t.data])
    assert exc.value.generation == 1


@given(st.data())
def test_fuzz_mutated_traces_decode_or_fail_cleanly(data: st.DataObject) -> None:
    t = data.draw(st.sampled_from(TEXT_TESTS))
    buf = mutate(data, t.data, keep=16)
    with contextlib.suppress(livetrace.TraceFormatError):
        decode([buf])
