"""`--dump legacy` through the compiled core (legacy_dump.c) is the dump of
its twin (LegacyDecoder and legacy_lines) byte for byte, on every canned
legacy trace and on cut and mutated ones: the same lines, or the same
error with nothing written. (tests/test_legacy.py compares the twin, and the
command, with Go 1.21's own tool.)"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace import TraceFormatError
from livetrace._cli.decode import dump_legacy
from livetrace._cli.render.legacy_dump import _LABELS, _STW_KINDS, _STW_REASONS, COMPILED_VERSIONS, legacy_dump
from livetrace._trace.accel import ccore, use_compiled
from livetrace._trace.spec.legacy import layout
from livetrace._trace.version import HEADER_SIZE, sniff

from .conftest import examples, twin_on_stress
from .mutate import mutate
from .test_legacy import CORPUS, FILES

needs_core = pytest.mark.compiled_core  # compares the compiled core with its twin: once


def dump(data: bytes, compiled: bool) -> bytes | str:
    """The dump, or the error that stopped it (nothing may be written before one)."""
    out: list[bytes] = []
    try:
        legacy_dump(data, out.append, compiled=compiled)
    except TraceFormatError as e:
        assert not out, "an error after part of the dump was written"
        return f"{type(e).__name__}: {e}"
    assert all(piece.endswith(b"\n") for piece in out)
    return b"".join(out)


def size(path: Path) -> int:
    return path.stat().st_size


@needs_core
@pytest.mark.parametrize("path", twin_on_stress(FILES, size), ids=lambda p: p.name)
def test_compiled_dump_is_the_twins(path: Path) -> None:
    data = path.read_bytes()
    assert dump(data, compiled=True) == dump(data, compiled=False)


@needs_core
@pytest.mark.parametrize(
    "path",
    twin_on_stress([p for p in FILES if "_good" in p.name and "_1_5_" not in p.name], size),
    ids=lambda p: p.name,
)
def test_the_core_dumps_every_valid_trace_of_go_1_7_on(path: Path) -> None:
    """Straight through the core, not handed to the twin (Go 1.5/1.6 traces are left to it)."""
    data = path.read_bytes()
    ver = sniff(data[:HEADER_SIZE])
    assert ver in COMPILED_VERSIONS
    counts, stacks = layout(ver)
    pieces: list[bytes] = []
    stw = _STW_REASONS if ver.has_stw_reasons else _STW_KINDS
    assert ccore.legacy_dump(data, ver.legacy_number, counts, stacks, _LABELS, stw, pieces.append)
    assert b"".join(pieces) == dump(data, compiled=False)


# The traces the compiled core reads: those of the versions it takes.
COMPILED = [p for p in FILES if not re.search(r"_1_5_", p.name)]


@needs_core
@pytest.mark.parametrize(
    ("path", "cuts"),
    # the small traces in the inner loop; the bigger ones (a second each and more) in the `twin` tier
    [(p, 30) for p in COMPILED if size(p) < 10_000]
    + [pytest.param(p, 30, marks=pytest.mark.twin) for p in COMPILED if 10_000 <= size(p) < 50_000]
    + [pytest.param(CORPUS / "stress_1_21_good", 6, marks=pytest.mark.twin)],
    ids=lambda x: getattr(x, "name", str(x)),
)
def test_cut_traces_give_the_twins_error_or_dump(path: Path, cuts: int) -> None:
    data = path.read_bytes()
    for end in range(16, len(data), max(1, len(data) // cuts)):
        assert dump(data[:end], compiled=True) == dump(data[:end], compiled=False), end


@needs_core
@settings(max_examples=examples(300))
@given(st.data())
def test_mutated_traces_give_the_twins_error_or_dump(data: st.DataObject) -> None:
    small = [p for p in COMPILED if p.stat().st_size < 50_000]
    path = data.draw(st.sampled_from(small), label="trace")
    buf = mutate(data, path.read_bytes(), keep=16)
    assert dump(buf, compiled=True) == dump(buf, compiled=False)


def test_the_command_writes_the_dump_through_a_text_stream_too() -> None:
    """A StringIO (no descriptor) gets the same text, strings as bytes via surrogateescape."""
    path = CORPUS / "user_task_region_1_21_good"
    whole = dump(path.read_bytes(), compiled=use_compiled())
    out = io.StringIO()
    with path.open("rb") as stream:
        dump_legacy(stream, out)
    assert isinstance(whole, bytes)
    assert out.getvalue().encode("utf-8", "surrogateescape") == whole
    ours = subprocess.run(
        [sys.executable, "-m", "livetrace", "decode", str(path), "--dump", "legacy"], capture_output=True, timeout=60
    )
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == whole
