"""An event selector holds no generation: a modern generation holds its raw
batches, so one kept past its selection is memory a long session never gets
back (a filtered subscriber once kept the last 64). Sans-IO: fast."""

from __future__ import annotations

import gc
import io
import weakref
from pathlib import Path

from livetrace import EventBatch, Filter, Kind
from livetrace._files import decode_batches
from livetrace._trace.model.tables import Tables
from livetrace._trace.select.events import EventSelector

TRACE = Path(__file__).parent / "corpus" / "runtime" / "go126-generations.trace"


def test_generations_are_freed_once_selected() -> None:
    # A task filter too: its in-order part looks the generation's ids up as well.
    selectors = [EventSelector(Filter(kinds=frozenset({Kind.LOG}))), EventSelector(Filter(tasks=("*",)))]
    gens: dict[int, weakref.ref[Tables]] = {}  # by generation number
    kept = 0
    for b in decode_batches(io.BytesIO(TRACE.read_bytes())):
        if isinstance(b, EventBatch) and b.gen is not None:
            gens.setdefault(b.gen.gen, weakref.ref(b.gen))
            kept += sum(len(s.select(b)) for s in selectors)
        del b
    gc.collect()
    assert len(gens) > 1 and kept  # several generations, and the filters kept something of them
    assert [g for g, r in gens.items() if r() is not None] == []  # the generations still alive
