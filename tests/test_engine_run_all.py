"""`Engine.run_all` (module.c, decode/engine.c's engine_run_all): a whole
generation ordered in one call, with the GIL released once, gives the
batches that repeated `Engine.run` calls give: the same cuts, columns,
derived strings, end and error, for a sequential engine and a fresh one,
with every event or a filter that leaves most out, on the corpus and on
mutated traces; and `_CompiledEngine.whole_generation` (the pool's, through
`compiled_fresh_generation`) the same EventBatches as `generation`."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._errors import TraceFormatError
from livetrace._trace.accel import ccore
from livetrace._trace.model.batch import EventBatch, kind_mask
from livetrace._trace.modern.decoder import _CompiledEngine
from livetrace._trace.modern.generation import Generation

from .conftest import examples
from .test_carry import MULTI, mutated, whole_streams
from .test_carry_compiled import CORPUS, IDS, SOME
from .wirechunks import generations

pytestmark = pytest.mark.compiled_core

MASKS = {"all": kind_mask(None), "some": kind_mask(SOME)}
# Cuts small enough that the corpus's generations are cut many times (1: a
# batch can end where the generation does, and an empty one follows), and
# the decoder's own.
SIZES = (1, 3, 64, 4096)


def plain(out: Any) -> tuple[object, ...]:
    """An EngineBatch as values: its columns as bytes, whichever type holds them."""
    err = out.error
    return (
        out.n_events,
        tuple(bytes(c) for c in out.columns),
        list(out.extra_strings),
        out.done,
        None if err is None else (err.kind, err.message, err.offset),
    )


def ordered(data: bytes, mask: bytes, fresh: bool, size: int, whole: bool) -> list[list[tuple[object, ...]]]:
    """Each generation's batches from one engine (in turn, as a sequential
    decoder orders them, or a fresh engine each), by run or by run_all, with
    the engine's state (and a fresh one's notes) after each."""
    got = []
    eng = _CompiledEngine(mask, fresh=fresh)
    for g in generations(data):
        if fresh:
            eng = _CompiledEngine(mask, fresh=True)
        eng._begin(g)
        if whole:
            outs = [plain(o) for o in eng._c.run_all(size)]
        else:
            outs = []
            while not outs or not outs[-1][3]:
                outs.append(plain(eng._c.run(size)))
        outs.append(("state", eng.state(), eng.notes() if fresh else None))
        got.append(outs)
        if outs[-2][4] is not None:  # an error ends the stream
            break
    return got


def same_batches(data: bytes, mask: bytes, sizes: tuple[int, ...] = SIZES) -> int:
    """run_all's batches are run's, for both kinds of engine: the errors met."""
    errors = 0
    for fresh in (False, True):
        for size in sizes:
            want = ordered(data, mask, fresh, size, whole=False)
            assert ordered(data, mask, fresh, size, whole=True) == want
            errors += sum(1 for outs in want if outs[-2][4] is not None)
    return errors


@pytest.mark.parametrize("mask", MASKS.values(), ids=MASKS.keys())
@pytest.mark.parametrize("data", CORPUS, ids=IDS)
def test_run_all_gives_the_batches_run_gives(data: bytes, mask: bytes) -> None:
    if whole_streams(data):
        same_batches(data, mask)


def test_an_error_comes_after_the_batches_before_it() -> None:
    # The corpus's trace that stops at an ordering error after events were
    # cut into batches: run_all gives those batches, then the error's (the
    # mutated traces below meet many more errors).
    met = 0
    for data in CORPUS:
        if not whole_streams(data):
            continue
        for outs in ordered(data, MASKS["all"], False, 1, whole=True):
            batches = outs[:-1]
            if batches[-1][4] is not None and len(batches) > 1:
                met += 1
                assert all(b[4] is None and not b[3] for b in batches[:-1])
                assert batches[-1][3]
    assert met >= 1


@settings(max_examples=examples(150), deadline=None)
@given(st.data())
def test_mutated_traces_give_the_same_batches(data: st.DataObject) -> None:
    trace = mutated(data, data.draw(st.sampled_from(MULTI)))
    if whole_streams(trace):
        same_batches(trace, data.draw(st.sampled_from(list(MASKS.values()))), (1, 4096))


def batches_of(gens: list[Generation], mask: bytes, whole: bool) -> tuple[list[object], object, list[list[bytes]]]:
    """What _CompiledEngine gives a decoder: each batch's columns, the error,
    and each generation's derived strings."""
    eng = _CompiledEngine(mask)
    got: list[object] = []
    try:
        for g in gens:
            batches: list[EventBatch] = eng.whole_generation(g) if whole else list(eng.generation(g))
            got += [(len(b), [bytes(c) for c in b.columns()]) for b in batches]
    except TraceFormatError as e:
        return got, (str(e), e.offset, [str(ev) for ev in e.partial or []]), [g.extra_strings for g in gens]
    return got, None, [g.extra_strings for g in gens]


@pytest.mark.parametrize("data", CORPUS, ids=IDS)
def test_whole_generation_gives_what_generation_gives(data: bytes) -> None:
    if whole_streams(data):
        for mask in MASKS.values():
            assert batches_of(generations(data), mask, True) == batches_of(generations(data), mask, False)


def test_run_all_columns_outlive_the_engine() -> None:
    # The columns are memory the engine wrote without the GIL: each is its
    # own, read-only, and lives as long as a view of it does.
    data = max((d for d in CORPUS if whole_streams(d)), key=len)
    (g, *_) = generations(data)
    eng = _CompiledEngine(MASKS["all"])
    eng._begin(g)
    outs = eng._c.run_all(64)
    want = [bytes(c) for o in outs for c in o.columns]
    views = [memoryview(c).cast("B") for o in outs for c in o.columns]
    del eng, outs
    gc.collect()
    assert [bytes(v) for v in views] == want
    assert len(want) > 7 and all(v.readonly for v in views)
    with pytest.raises(TypeError):
        views[0][0] = 1


def test_run_all_wants_a_batch_size() -> None:
    eng = ccore.Engine({}, kind_mask(None))
    with pytest.raises(ValueError, match="positive"):
        eng.run_all(0)
    # Nothing begun: one empty batch, done, as run gives.
    assert [plain(o) for o in eng.run_all(4096)] == [plain(eng.run(4096))]


def test_a_filter_that_leaves_every_event_out_gives_the_same_empty_batches() -> None:
    for data in CORPUS[:20]:
        if whole_streams(data):
            same_batches(data, bytes(256), (1, 4096))
