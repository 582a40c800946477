"""The JSON lines of a legacy trace's provisional events (``tail --format
jsonl`` of a legacy service without segments), fast enough to keep up with
it: the compiled core writes :func:`~livetrace._cli.render.jsonl.provisional_dict`'s
lines straight from a batch's columns, as it writes exact events' (with no
``transition_stack``, and ``"provisional": true, "stack_id": N`` where the
exact line has its ``"stack"``). Without the core, or for a list of events,
each line is made from its dict, the reference."""

from __future__ import annotations

import json
from collections.abc import Sequence

from livetrace._cli.render.jsonl import compiled_pieces, provisional_dict, string_json, utf8
from livetrace._cli.render.parts import GenerationParts, Maker
from livetrace._protocol.text import json_safe
from livetrace._trace.accel import use_compiled
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import Event

# The provisional lines name a stack by its id: their only pieces are strings.
_PARTS: dict[str, Maker] = {"string": string_json}


class ProvisionalJsonl:
    def __init__(self) -> None:
        self._fast = use_compiled()

    def encode(self, events: Sequence[Event]) -> list[bytes]:
        """Lines (UTF-8) for the events, each ending in a newline, in pieces."""
        if not self._fast or not isinstance(events, EventBatch) or not len(events):
            return [utf8("".join(_provisional_line(e) + "\n" for e in events))]
        gen = events.gen
        # A legacy trace's table before its footer grows as its strings
        # arrive (one named before it arrived reads as empty): nothing made
        # from it is kept past the batch.
        parts = GenerationParts(gen, _PARTS, str.encode)
        base = None if gen is None else gen.wall_base
        return compiled_pieces(events, base, parts.pieces["string"], None, {}, parts.miss, _provisional_line)


def _provisional_line(e: Event) -> str:
    """The line of an event the core does not write: from its dict."""
    return json_safe(json.dumps(provisional_dict(e), ensure_ascii=False))
