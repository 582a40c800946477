"""The provisional events of a live legacy trace go out in order: real
recorded traces (Go's own stress traces, fresh demo traces) fed in random
chunkings, the compiled core and its twin release the same events after
the same chunks, in the same order, and neither releases an event before
an earlier one, from any P, that had already arrived: the release
watermark may only let an event go after everything before it that is in."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._items import Provisional
from livetrace._trace.accel import use_compiled
from livetrace._trace.legacy.live import LegacyLive
from livetrace._trace.legacy.live_core import compiled_version

from .conftest import examples
from .test_legacy_live_core import CORPUS, chunks

# Big enough (two full chunks, 50 ms apart) for the clock, and so for provisional events.
BIG = sorted(p.name for p in CORPUS.iterdir() if p.stat().st_size > 300_000 and compiled_version(p.read_bytes()[:16]))
TWINS = [False, True] if use_compiled() else [False]
# Every check is made on the twin's releases, with the compiled core's
# compared to them where it is built: the twin's pass would only repeat the
# twin's half. Each takes seconds (the inner loop compares the provisional
# paths on short traces in test_legacy_live_core.py).
pytestmark = pytest.mark.twin

Row = tuple[int, ...]


class AtOnce(LegacyLive):
    """The twin releasing every event as soon as it has arrived: what had
    arrived after each chunk."""

    def _until(self) -> int:
        return 1 << 63


def released(live: LegacyLive, pieces: list[tuple[bytes, int]]) -> list[list[tuple[Row, bool]]]:
    """Per chunk fed, the events it released, in order: (row, late)."""
    out = []
    for data, t in pieces:
        now: list[tuple[Row, bool]] = []
        for item in live.feed(data, t):
            if isinstance(item, Provisional):
                for i, e in enumerate(item.events):
                    now.append(((e.code, e.time, e.m, e.p, e.g, *e.args, *e.extra), i < item.late))
        out.append(now)
    return out


def check(data: bytes, seed: int, max_held: int) -> int:
    """Checks one chunking: how many events went out on time."""
    pieces = chunks(data, seed)
    arrived = released(AtOnce(max_held=max_held, compiled=False), pieces)
    runs = [released(LegacyLive(max_held=max_held, compiled=c), pieces) for c in TWINS]
    assert all(run == runs[0] for run in runs[1:]), "the compiled core and its twin released differently"
    run = runs[0]
    assert len(run) == len(arrived) == len(pieces)
    got: Counter[Row] = Counter()
    came: Counter[Row] = Counter()
    watermark, on_time = -(1 << 63), 0
    for k, (out, now) in enumerate(zip(run, arrived, strict=True)):
        came.update(row for row, _ in now)
        got.update(row for row, _ in out)
        late = [row for row, is_late in out if is_late]
        timely = [row for row, is_late in out if not is_late]
        assert [r[1] for r in late] == sorted(r[1] for r in late)
        assert [r[1] for r in timely] == sorted(r[1] for r in timely)
        assert not timely or timely[0][1] >= watermark, f"chunk {k}: an event on time behind the watermark"
        assert not late or late[-1][1] <= max(watermark, timely[0][1] if timely else watermark)
        if timely:
            watermark = timely[-1][1]
            on_time += len(timely)
        # Every event that had come, from whichever P, and is earlier than
        # one released on time has gone out too.
        missing = Counter({r: n for r, n in came.items() if r[1] < watermark}) - got
        assert not missing, f"chunk {k}: {sum(missing.values())} earlier events held back, e.g. {next(iter(missing))}"
        assert not got - came, f"chunk {k}: an event released before it arrived"
    return on_time


@pytest.mark.parametrize("name", BIG)
def test_recorded_traces_go_out_in_order_alike(name: str) -> None:
    assert check((CORPUS / name).read_bytes(), 1, 1_000_000) > 10_000


@settings(max_examples=examples(8))
@given(name=st.sampled_from(BIG), seed=st.integers(0, 2**32), small=st.booleans())
def test_recorded_traces_in_any_chunking_go_out_in_order_alike(name: str, seed: int, small: bool) -> None:
    # small: few events may be held, so the oldest are let go early, watermark
    # or not. (Some chunkings never let the clock be known: nothing goes out.)
    check((CORPUS / name).read_bytes(), seed, 300 if small else 1_000_000)


@pytest.mark.slow
@pytest.mark.parametrize(("version", "seed"), [("1.19", 1), ("1.21", 2)])  # a chunking each
def test_a_fresh_demo_trace_goes_out_in_order_alike(
    version: str, seed: int, legacy_demo_traces: dict[str, Path]
) -> None:
    assert check(legacy_demo_traces[version].read_bytes(), seed, 1_000_000) > 10_000
