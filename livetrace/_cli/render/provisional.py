"""The JSON lines of a legacy trace's provisional events (``tail --format
jsonl`` of a legacy service without segments), fast enough to keep up with
it: the compiled core's JSON writer writes them as it writes exact events,
with each stack written as its id, and three passes over the bytes turn
those lines into :func:`~livetrace._cli.render.jsonl.provisional_dict`'s:
no ``transition_stack``, and ``"provisional": true, "stack_id": N`` where
``"stack"`` was. (A key in quotes never occurs inside a JSON string, whose
quotes are escaped.) Without the core, or for a list of events, each line
is made from its dict, the reference."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from livetrace._cli.render.jsonl import compiled_pieces, provisional_dict, utf8
from livetrace._trace.accel import use_compiled
from livetrace._trace.model.batch import EventBatch
from livetrace._trace.model.events import Event
from livetrace._trace.model.tables import Tables

_TRANSITION_STACK = re.compile(rb', "transition_stack": (?:\[\]|\d+)')


class _Parts:
    """One provisional table's JSON parts for the core: strings as JSON
    text, stacks as their ids."""

    __slots__ = ("gen", "stacks", "strings")

    def __init__(self, gen: Tables | None) -> None:
        self.gen = gen
        self.strings: dict[int, bytes] = {}
        self.stacks: dict[int, bytes] = {}

    def miss(self, kind: str, sid: int) -> bytes:
        if kind == "stack":
            return str(sid).encode()
        assert self.gen is not None
        text = self.gen.strings[sid].decode("utf-8", "replace")
        return json.dumps(text, ensure_ascii=False).encode()


class ProvisionalJsonl:
    def __init__(self) -> None:
        self._fast = use_compiled()
        self._parts = _Parts(None)

    def encode(self, events: Sequence[Event]) -> list[bytes]:
        """Lines (UTF-8) for the events, each ending in a newline, in pieces."""
        if not self._fast or not isinstance(events, EventBatch) or not len(events):
            return [utf8("".join(json.dumps(provisional_dict(e), ensure_ascii=False) + "\n" for e in events))]
        batch = events
        if batch.gen is not self._parts.gen:
            self._parts = _Parts(batch.gen)
        parts = self._parts
        base = None if batch.gen is None else batch.gen.wall_base
        pieces = compiled_pieces(batch, base, parts.strings, parts.stacks, parts.miss, _provisional_line)
        return [_provisional(piece) for piece in pieces]


def _provisional_line(e: Event) -> str:
    """The line of an event the core does not write: from its dict."""
    return json.dumps(provisional_dict(e), ensure_ascii=False)


def _provisional(lines: bytes) -> bytes:
    """Exact JSON lines made provisional: see the module's doc."""
    out = _TRANSITION_STACK.sub(b"", lines).replace(b', "stack": ', b', "provisional": true, "stack_id": ')
    return out.replace(b'"stack_id": []', b'"stack_id": 0')
