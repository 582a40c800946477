"""The picture of the pipeline tells the window its deliver stage runs the
maps' work in, from the same parameter (it once copied live.py's constant
by hand)."""

from __future__ import annotations

import pytest

from livetrace._session.limits import Counters
from livetrace._session.pipeline import MAP_WINDOW, mermaid, stages
from livetrace._session.subscribers import Fanout

pytestmark = pytest.mark.once  # no decoding


def deliver_note(**window: int) -> str:
    return next(s.note for s in stages(Fanout(), Counters(), None, None, **window) if s.name == "deliver")


def test_the_deliver_stage_tells_its_window() -> None:
    assert deliver_note(window=3).endswith(", 3 x jobs ahead")
    assert deliver_note().endswith(f", {MAP_WINDOW} x jobs ahead")
    assert deliver_note() in mermaid()
