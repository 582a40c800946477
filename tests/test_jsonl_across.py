"""tail's lines keep the JSON (PartsAcross) and text (TextAcross) of stacks
and strings across generations: each generation names the same stacks with
ids of its own, and making their pieces again for each was a fifth of a
tail's Python calls. The lines are the same bytes as with each generation's
own pieces, and a stack met again in a later generation is not made again."""

from __future__ import annotations

from pathlib import Path

import pytest

from livetrace._cli.render import jsonl, text
from livetrace._cli.render.jsonl import JsonlEncoder, PartsAcross
from livetrace._cli.render.text import TextAcross, TextEncoder
from livetrace._files import decode_batches
from livetrace._trace.accel import use_compiled
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import StackFrame
from livetrace._trace.model.tables import Tables

from .test_pool_identity import MODERN


def generations(tmp_path: Path) -> list[EventBatch]:
    trace = tmp_path / "gens.trace"
    trace.write_bytes(MODERN)
    batches = [b for b in decode_batches(trace) if isinstance(b, EventBatch)]
    assert len({id(b.gen) for b in batches}) >= 5
    return batches


def test_json_lines_across_generations_are_the_same_and_made_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = generations(tmp_path)
    made: list[tuple[int, int]] = []
    make = jsonl.stack_json

    def counted(gen: Tables | None, sid: int) -> str:
        made.append((id(gen), sid))
        return make(gen, sid)

    monkeypatch.setattr(jsonl, "stack_json", counted)  # PartsAcross's maker
    monkeypatch.setitem(jsonl.JSON_PARTS, "stack", counted)  # each generation's own
    own = [b"".join(JsonlEncoder().encode_batch(b)) for b in batches]
    per_generation = len(made)
    made.clear()
    across = PartsAcross()
    shared = [b"".join(JsonlEncoder(across).encode_batch(b)) for b in batches]
    assert shared == own
    assert per_generation > 100
    assert len(made) < per_generation * 2 // 3  # the later generations' stacks were met before


@pytest.mark.skipif(not use_compiled(), reason="the twin writes each text line in Python, without pieces")
def test_text_lines_across_generations_are_the_same_and_made_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = generations(tmp_path)
    made: list[str] = []
    frame = jsonl.frame_text  # text.py's, imported from there

    def counted(frames: list[StackFrame]) -> str:
        made.append(frame(frames))
        return made[-1]

    monkeypatch.setattr(text, "frame_text", counted)
    t0 = batches[0].times[0]
    own = [TextEncoder(False).encode(b, t0) for b in batches]
    per_generation = len(made)
    made.clear()
    across = TextAcross()
    shared = [TextEncoder(False, across=across).encode(b, t0) for b in batches]
    assert shared == own
    assert per_generation > 100
    assert len(made) < per_generation * 2 // 3
