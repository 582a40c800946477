"""The compiled provisional path of a live legacy trace (_ccore/decode/legacy_live.c)
gives what its twin, the Python path of LegacyLive, gives: the same
Provisional batches, column for column, with the same strings, for the
corpus' legacy traces and fresh demo traces fed in random chunkings with
made-up read times; on mutated traces, the same error, or the same events."""

from __future__ import annotations

import contextlib
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._cli.render.jsonl import provisional_dict, utf8
from livetrace._cli.render.provisional import ProvisionalJsonl
from livetrace._errors import TraceFormatError
from livetrace._items import Provisional
from livetrace._protocol.text import json_safe
from livetrace._trace.legacy.live import LegacyLive, _LiveStrings
from livetrace._trace.legacy.live_core import CoreProvisional, GaveUp, compiled_version
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import Kind
from livetrace._trace.model.tables import Tables

from .conftest import examples
from .mutate import mutate

CORPUS = Path(__file__).parent / "corpus" / "legacy" / "go-testdata"
# The traces the compiled core reads live (Go 1.11 to 1.21).
TRACES = sorted(p.name for p in CORPUS.iterdir() if compiled_version(p.read_bytes()[:16]))
# Big enough for the clock (two full chunks, 50 ms apart) and the window to matter.
BIG = [n for n in TRACES if (CORPUS / n).stat().st_size > 300_000]
SETTINGS = [
    (500_000_000, 1_000_000, None),
    (1_000_000, 5000, None),
    (0, 100, frozenset({Kind.STATE_TRANSITION, Kind.LOG})),
    (20_000_000, 200, frozenset({Kind.RANGE_BEGIN, Kind.TASK_END, Kind.REGION_BEGIN})),
]

pytestmark = pytest.mark.compiled_core


def chunks(data: bytes, seed: int) -> list[tuple[bytes, int]]:
    """The trace cut as the helper might hand it over: mostly full buffers,
    some small pieces (cutting events anywhere), each with a read time."""
    rnd = random.Random(seed)
    out, t, start = [], 1_700_000_000 * 10**9, 0
    end = rnd.randint(1, 70_000)
    while start < len(data):
        t += rnd.randint(5, 40) * 1_000_000
        out.append((data[start:end], t))
        start, end = end, end + (rnd.randint(60_000, 66_000) if rnd.random() < 0.8 else rnd.randint(1, 5000))
    return out


Row = tuple[object, ...]


def provisional(
    pieces: list[tuple[bytes, int]], compiled: bool, window: int, max_held: int, kinds: frozenset[Kind] | None
) -> list[Row]:
    """Every Provisional batch: its segment, late count and columns, and the
    strings its events name."""
    live = LegacyLive(kinds, window_ns=window, max_held=max_held, compiled=compiled)
    items = [item for data, t in pieces for item in live.feed(data, t)]
    # A trace cut short: its exact events fail, after the provisional ones
    # (extend keeps what came before the error).
    with contextlib.suppress(TraceFormatError):
        items.extend(live.end_segment(None))
    out: list[Row] = []
    for item in items:
        if isinstance(item, Provisional):
            b, table = item.events, item.events.gen
            assert table is not None
            strings = (dict(table.strings), dict(table.strings._trace), list(table.extra_strings))  # type: ignore[attr-defined]
            out.append((item.segment, item.late, len(b), tuple(bytes(c) for c in b.columns()), strings))
    return out


def rows(pieces: list[tuple[bytes, int]], compiled: bool, end: bool = False) -> tuple[Counter[Row], str | None]:
    """The provisional events as a multiset of rows (with those the end of
    the segment lets go, if end), and the error that stopped them."""
    live = LegacyLive(window_ns=1_000_000, max_held=2000, compiled=compiled)
    got: Counter[Row] = Counter()
    try:
        items = [item for data, t in pieces for item in live.feed(data, t)]
        if end:
            items += (i for i in live.end_segment(None) if isinstance(i, Provisional))
    except TraceFormatError as e:
        return got, f"{type(e).__name__}: {e}"
    for item in items:
        if isinstance(item, Provisional):
            got.update((e.code, e.time, e.m, e.p, e.g, *e.args, *e.extra) for e in item.events)
    return got, None


def assert_same(pieces: list[tuple[bytes, int]], window: int, max_held: int, kinds: frozenset[Kind] | None) -> None:
    compiled = provisional(pieces, True, window, max_held, kinds)
    twin = provisional(pieces, False, window, max_held, kinds)
    assert len(compiled) == len(twin)
    for k, (c, t) in enumerate(zip(compiled, twin, strict=True)):
        assert c == t, f"batch {k} differs"


@pytest.mark.twin
@pytest.mark.parametrize("name", BIG)
@pytest.mark.parametrize("setting", range(len(SETTINGS)))
def test_the_compiled_provisional_path_is_its_twin_on_the_corpus(name: str, setting: int) -> None:
    data = (CORPUS / name).read_bytes()
    pieces = chunks(data, setting + 1)
    if SETTINGS[setting][2] is None:  # the clock came, and with it provisional events
        assert sum(cast(int, b[2]) for b in provisional(pieces, True, *SETTINGS[setting])) > 10_000
    assert_same(pieces, *SETTINGS[setting])


@pytest.mark.twin
@pytest.mark.parametrize("name", BIG)
def test_provisional_json_lines_from_the_core_are_provisional_dicts(name: str) -> None:
    live = LegacyLive(window_ns=1_000_000)
    encoder = ProvisionalJsonl()
    lines = 0
    for data, t in chunks((CORPUS / name).read_bytes(), 1):
        for item in live.feed(data, t):
            if isinstance(item, Provisional):
                want = utf8("".join(json.dumps(provisional_dict(e), ensure_ascii=False) + "\n" for e in item.events))
                assert b"".join(encoder.encode(item.events)) == want
                lines += len(item.events)
    assert lines > 10_000


# Strings JSON must escape or mend: quotes and backslashes, control
# characters, bytes that are not UTF-8 (cut short, a surrogate, a stray
# continuation byte), and the empty string.
ODD = [
    b'q"uo\\te"',
    b"\x00\x01\x08\t\n\x0c\r\x1b\x1f\x7f",
    b"\xff\xfe bytes",
    "h\u00e9llo \u200b\u2028 \U0001f600".encode() + b"\xc3",
    b"\xed\xa0\x80 \x80",
    b"",
    b"</script>\\u0000",
]


def odd_tables(table: Tables, odd: Tables | None, k: int) -> Tables:
    """odd (made the first time) with table's clock and strings but each
    string an ODD one, rotated with k: the same ids name other bytes in
    each batch, as a string named before it arrives does."""
    if odd is None:
        odd = Tables(table.gen, wall_origin=table.wall_origin)
        odd.strings = _LiveStrings({})
        odd.extra_strings = table.extra_strings
        odd.stacks = table.stacks
    trace = table.strings._trace  # type: ignore[attr-defined]  # a provisional table's strings are _LiveStrings
    odd.strings._trace.clear()  # type: ignore[attr-defined]
    odd.strings._trace.update({i: ODD[(i + k) % len(ODD)] + s for i, s in trace.items()})  # type: ignore[attr-defined]
    odd.strings.update({i: ODD[(i + k) % len(ODD)] + s for i, s in table.strings.items() if i})
    return odd


def odd_json_lines(data: bytes) -> Counter[str]:
    """Each Provisional batch's JSON lines, the compiled core's and the
    twin's, the same (with ODD strings); what the lines held: stacks,
    none, odd strings, wall times, and each kind."""
    live = LegacyLive(window_ns=1_000_000)
    items = [item for chunk, t in chunks(data, 2) for item in live.feed(chunk, t)]
    with contextlib.suppress(TraceFormatError):  # a demo trace is cut short
        items.extend(live.end_segment(None))
    encoder = ProvisionalJsonl()
    odd: Tables | None = None
    seen: Counter[str] = Counter()
    for k, item in enumerate(i for i in items if isinstance(i, Provisional)):
        table = item.events.gen
        assert table is not None
        odd = odd_tables(table, odd, k)
        batch = EventBatch(odd, len(item.events), tuple(bytes(c) for c in item.events.columns()))
        want = utf8("".join(json_safe(json.dumps(provisional_dict(e), ensure_ascii=False)) + "\n" for e in batch))
        got = b"".join(encoder.encode(batch))
        assert got == want, f"batch {k}"
        for line in got.splitlines():
            odd_string = b"\\u0000" in line or b"\xef\xbf\xbd" in line or b'\\"' in line
            kind = json.loads(line)["kind"]
            seen[kind] += 1
            seen[f"{kind} odd"] += odd_string
            seen["no stack" if line.endswith(b'"stack_id": 0}') else "stack"] += 1
            seen["wall"] += b'"wall": ' in line
    return seen


@pytest.mark.twin
@pytest.mark.parametrize("name", BIG)
def test_provisional_json_lines_from_the_core_are_the_twins_with_odd_strings(name: str) -> None:
    seen = odd_json_lines((CORPUS / name).read_bytes())
    assert seen["stack"] and seen["no stack"] and seen["wall"] and seen["StateTransition odd"], seen


@pytest.mark.slow
@pytest.mark.parametrize("version", ["1.19", "1.21"])
def test_provisional_json_lines_of_a_fresh_demo_trace_are_the_twins(
    version: str, legacy_demo_traces: dict[str, Path]
) -> None:
    # The demo's annotations: strings the core writes in Log, Task and Region lines.
    seen = odd_json_lines(legacy_demo_traces[version].read_bytes())
    for kind in ("Log", "TaskBegin", "RegionBegin", "RegionEnd"):
        assert seen[f"{kind} odd"], seen


@settings(max_examples=examples(30))
@given(name=st.sampled_from(TRACES), seed=st.integers(0, 2**32), setting=st.integers(0, len(SETTINGS) - 1))
def test_any_chunking_of_the_corpus_gives_the_twins_provisional_events(name: str, seed: int, setting: int) -> None:
    # The small traces never fill a buffer, so the clock is never known:
    # what is compared is what both hold back, and their reading.
    data = (CORPUS / name).read_bytes()
    if len(data) > 300_000:
        data = data[: 130_000 + seed % 20_000]  # a trace cut short, as when a segment is in progress
    assert_same(chunks(data, seed), *SETTINGS[setting])


@pytest.mark.twin  # 150 mutations of a whole trace through both cores: CI's, not the inner loop's
@settings(max_examples=examples(150))
@given(data=st.data())
def test_a_mutated_trace_gives_the_twins_error_or_events(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(BIG))
    original = (CORPUS / name).read_bytes()[:200_000]
    mutated = mutate(data, original, keep=16)
    pieces = chunks(mutated, data.draw(st.integers(0, 1000)))
    compiled, c_err = rows(pieces, True)
    twin, t_err = rows(pieces, False)
    assert c_err == t_err
    if c_err is None:
        assert compiled == twin


@pytest.mark.slow
@pytest.mark.parametrize("version", ["1.19", "1.21"])
@pytest.mark.parametrize("setting", [0, 3])
def test_the_compiled_provisional_path_is_its_twin_on_a_fresh_demo_trace(
    version: str, setting: int, legacy_demo_traces: dict[str, Path]
) -> None:
    data = legacy_demo_traces[version].read_bytes()
    assert_same(chunks(data, setting), *SETTINGS[setting])


@pytest.mark.twin  # a whole stress trace (the small ones never give the clock, so nothing provisional)
@pytest.mark.parametrize("at", [0, 3, 6])
def test_the_twin_takes_over_a_segment_the_core_gives_up_on(at: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # A valid trace the core gives up on (as it does on values the columns
    # would not carry) at its at-th chunk: the same events come, each once.
    pieces = chunks((CORPUS / BIG[-1]).read_bytes(), 1)
    want, _ = rows(pieces, False, end=True)
    fed = 0
    feed, start = CoreProvisional.feed, CoreProvisional.start

    def give_up_at(method: Any) -> Any:
        def wrapper(self: CoreProvisional, *args: Any) -> Any:
            nonlocal fed
            fed += 1
            if fed == at + 1:
                raise GaveUp
            return method(self, *args)

        return wrapper

    monkeypatch.setattr(CoreProvisional, "feed", give_up_at(feed))
    monkeypatch.setattr(CoreProvisional, "start", give_up_at(start))
    got, error = rows(pieces, True, end=True)
    assert error is None and fed > at and want and got == want
