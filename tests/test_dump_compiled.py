"""`--dump parsed` and `--dump wire` written by the compiled core
(_ccore/render/dump.c) are the pure-Python formatters' text byte for byte, and fail
the same way, on every corpus trace, on mutated traces and on hostile
columns handed straight to the C entry points."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, NoReturn, TextIO

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._cli.decode import dump_parsed, dump_wire
from livetrace._cli.render.dump import parsed_text
from livetrace._cli.render.dumptext import _HEADS as PARSED_HEADS
from livetrace._cli.render.dumptext import ParsedText, wire_text
from livetrace._cli.render.gostr import go_quote
from livetrace._cli.render.text import kind_columns
from livetrace._errors import TraceFormatError
from livetrace._trace.accel import ccore
from livetrace._trace.model.batch import NARGS, NEXTRA, EventBatch
from livetrace._trace.model.tables import Tables
from livetrace._trace.modern.decoder import ModernDecoder
from livetrace._trace.modern.wire import FrameReader
from livetrace._trace.spec.modern import EV_USER_LOG

from . import textform
from .conftest import examples, twin_on_stress
from .mutate import mutate
from .twinenv import twin

MODERN = [t for t in textform.all_tests() if t.data]
LEGACY_DIR = textform.CORPUS.parent / "legacy" / "go-testdata"
LEGACY = sorted(p for p in LEGACY_DIR.iterdir() if p.is_file()) if LEGACY_DIR.is_dir() else []
# Both implementations are compared here, whichever the run is on: once is enough.
pytestmark = pytest.mark.compiled_core

Dump = Callable[[BinaryIO, TextIO], None]


def outcome(dump: Dump, data: bytes, pure: bool) -> tuple[str, str | None]:
    """The text printed and the error (type and message) it ended with."""
    out = io.StringIO()
    with twin(pure):
        try:
            dump(io.BytesIO(data), out)
        except TraceFormatError as e:
            return out.getvalue(), f"{type(e).__name__}: {e}"
    return out.getvalue(), None


def parsed(stream: BinaryIO, out: TextIO) -> None:
    dump_parsed(stream, out)


def corpus() -> list[tuple[str, bytes]]:
    return [(t.name, t.data) for t in MODERN] + [(p.name, p.read_bytes()) for p in LEGACY]


@pytest.mark.parametrize(("name", "data"), twin_on_stress(corpus(), lambda c: len(c[1])), ids=[n for n, _ in corpus()])
def test_parsed_dump_is_the_twins(name: str, data: bytes) -> None:
    ours = outcome(parsed, data, pure=False)
    assert ours == outcome(parsed, data, pure=True)
    if not name.startswith(("http_1_5", "http_1_7", "http_1_9", "stress_1_10")):
        assert ours[0] or ours[1]


@pytest.mark.parametrize("t", MODERN, ids=lambda t: t.name)
def test_wire_dump_is_the_twins(t: textform.TextTrace) -> None:
    ours = outcome(dump_wire, t.data, pure=False)
    assert ours == outcome(dump_wire, t.data, pure=True)
    assert ours[0]


def test_the_formatters_alone_agree_on_the_same_batches() -> None:
    """Same decoder, both formatters: every batch of every modern corpus
    trace, then every frame run of the wire layer."""
    checked = 0
    for t in MODERN:
        d = ModernDecoder(compiled=True)
        try:
            batches = list(d.feed_batches(t.data)) + list(d.close_batches())
        except TraceFormatError:
            continue
        fast, slow = ParsedText(compiled=True), ParsedText(compiled=False)
        for b in batches:
            assert fast.text(b) == slow.text(b)
            checked += len(b)
        reader = FrameReader()
        frames = reader.feed(t.data)
        assert reader.minor is not None
        assert wire_text(frames, reader.minor, compiled=True) == wire_text(frames, reader.minor, compiled=False)
    assert checked > 1000


@settings(max_examples=examples(60))
@given(st.data())
def test_mutated_traces_dump_alike(data: st.DataObject) -> None:
    t = data.draw(st.sampled_from(MODERN))
    bad = mutate(data, t.data, keep=16)
    for dump in (parsed, dump_wire):
        assert outcome(dump, bad, pure=False) == outcome(dump, bad, pure=True)


@settings(max_examples=examples(25))
@given(st.data())
def test_mutated_legacy_traces_dump_alike(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from([p for p in LEGACY if "_1_21_" in p.name or "_1_19_" in p.name]))
    bad = mutate(data, path.read_bytes(), keep=16)
    assert outcome(parsed, bad, pure=False) == outcome(parsed, bad, pure=True)


# ---- hostile columns, straight to the C entry points ----


def _tables() -> Tables:
    g = Tables(gen=3)
    g.strings.update({1: b"reason", 2: b'q"uo\\te\n', 3: "héllo\x00\u200b".encode() + b"\xff"})
    g.frames.update({0x401000: (1, 2, 17), 0x402000: (3, 1, 99)})
    g.stacks.update({1: (0x401000,), 2: (0x401000, 0x402000), 3: (0xDEAD,)})
    g.extra_strings.append(b"task type")
    return g


CODES = st.one_of(st.integers(0, 255), st.integers(9, 48), st.just(255))
SMALL = st.one_of(st.integers(0, 6), st.just(2**64 - 1))


def _attempt(fn: Callable[[], str]) -> tuple[str, str | None]:
    try:
        return fn(), None
    except Exception as e:  # the twin's own error, whatever it is, must be the core's
        return "", f"{type(e).__name__}: {e}"


@settings(max_examples=examples(300))
@given(st.lists(st.tuples(CODES, st.lists(SMALL, min_size=NARGS + NEXTRA, max_size=NARGS + NEXTRA)), max_size=12))
def test_any_columns_print_as_the_twin_prints_them(events: list[tuple[int, list[int]]]) -> None:
    n = len(events)
    g = _tables()
    cols = (
        bytes(c for c, _ in events),
        b"".join((1000 + i).to_bytes(8, "little", signed=True) for i in range(n)),
        b"".join((5).to_bytes(8, "little", signed=True) for _ in range(n)),
        b"".join((-1).to_bytes(8, "little", signed=True) for _ in range(n)),
        b"".join((7).to_bytes(8, "little", signed=True) for _ in range(n)),
        b"".join(v.to_bytes(8, "little") for _, vals in events for v in vals[:NARGS]),
        b"".join(v.to_bytes(8, "little") for _, vals in events for v in vals[NARGS:]),
    )
    batch = EventBatch(g, n, cols)
    fast = _attempt(lambda: ParsedText(compiled=True).text(batch))
    slow = _attempt(lambda: "".join(parsed_text(e) + "\n" for e in batch))
    assert fast == slow


@settings(max_examples=examples(300))
@given(
    st.binary(max_size=40),
    st.binary(max_size=8),
    st.lists(st.integers(0, 2**32 - 1), max_size=9),
    st.lists(st.integers(0, 2**64 - 1), max_size=12),
)
def test_hostile_wire_columns_raise_not_crash(payload: bytes, codes: bytes, starts: list[int], vals: list[int]) -> None:
    table = bytes([0x80 | 2 if c % 3 else 0xE2 for c in range(256)])
    names = tuple((b"X", b" a=", b" b=") for _ in range(256))
    starts_b = b"".join(s.to_bytes(4, "little") for s in starts)
    vals_b = b"".join(v.to_bytes(8, "little") for v in vals)
    try:
        text = ccore.dump_wire(payload, codes, starts_b, vals_b, table, names, go_quote)
    except ValueError:
        return
    assert text.count(b"\n") >= len(codes)


# Ids that share a slot of the part cache's memo (_ccore/render/partcache.h) whatever
# its size, and ids no generation has: each line must carry its own ids'.
COLLIDING = [1, 1 + 64, 1 + 4096, 1 + 8192, 1 + 2**63, 2**64 - 1, 2**63, 2**63 - 1, 4096, 0, 1]


def _log_columns() -> tuple[bytes, bytes, bytes, bytes, bytes, bytes, bytes]:
    """A Log event per pair of neighbouring ids: its category, its message."""
    n = len(COLLIDING) - 1
    args = [v for i in range(n) for v in (7, COLLIDING[i], COLLIDING[i + 1], *[0] * (NARGS - 3))]
    i64 = b"".join((1000 + i).to_bytes(8, "little") for i in range(n))
    return (
        bytes([EV_USER_LOG] * n),
        i64,
        i64,
        i64,
        i64,
        b"".join(v.to_bytes(8, "little") for v in args),
        bytes(8 * NEXTRA * n),
    )


def test_the_writers_part_cache_keeps_ids_apart() -> None:
    made: list[tuple[str, int]] = []

    def miss(kind: str, i: int) -> bytes:
        made.append((kind, i))
        return f"<{i}>".encode()

    def other(i: int) -> NoReturn:
        raise AssertionError(f"the core writes Log lines, not other({i})")

    cols = _log_columns()
    texts: dict[str, Callable[[], bytes]] = {
        "jsonl": lambda: b"".join(ccore.jsonl(*cols, None, {}, {}, miss, other)),
        "parsed": lambda: ccore.dump_parsed(*cols, PARSED_HEADS, {}, {}, {}, miss, other),
        "text": lambda: ccore.text_lines(*cols, 0, None, False, kind_columns(False), {}, {}, {}, miss, other),
    }
    want = [(COLLIDING[i], COLLIDING[i + 1]) for i in range(len(COLLIDING) - 1)]
    for name, make in texts.items():
        made.clear()
        lines = make().decode().splitlines()
        assert [tuple(int(x) for x in re.findall(r"<(\d+)>", line)) for line in lines] == want, name
        assert len(made) == len(set(COLLIDING)), f"{name}: each id made once a call"

    def raises(kind: str, i: int) -> NoReturn:
        raise KeyError(i)

    # tail's text leaves the line to the twin, which meets the same error
    text = ccore.text_lines(*cols, 0, None, False, kind_columns(False), {}, {}, {}, raises, lambda i: b"twin")
    assert text == b"twin\n" * (len(COLLIDING) - 1)
    with pytest.raises(KeyError):
        ccore.jsonl(*cols, None, {}, {}, raises, other)
    with pytest.raises(KeyError):
        ccore.dump_parsed(*cols, PARSED_HEADS, {}, {}, {}, raises, other)
    with pytest.raises(TypeError):
        ccore.jsonl(*cols, None, {1: "not bytes"}, {}, miss, other)  # type: ignore[dict-item]  # the point


@pytest.mark.parametrize("data", [b"plain", b"", b'q"\\\a\b\f\n\r\t\v\x00\x7f\x1f', "ünï\u200b".encode() + b"\xfe"])
def test_wire_data_is_quoted_as_go_quotes(data: bytes) -> None:
    table = bytes([0xC0 if c == 5 else 0 for c in range(256)])
    names = tuple((b"String",) if c == 5 else None for c in range(256))
    args = (0).to_bytes(8, "little") + len(data).to_bytes(8, "little")
    starts = (0).to_bytes(4, "little") + (2).to_bytes(4, "little")
    text = ccore.dump_wire(data, bytes([5]), starts, args, table, names, go_quote).decode()
    assert text == ("String\n\tdata=" + go_quote(data) + "\n" if data else "String\n")


def test_corpus_is_there() -> None:
    assert len(MODERN) > 20 and len(LEGACY) > 5
    assert Path(LEGACY_DIR).is_dir()
