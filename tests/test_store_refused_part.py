"""A store's write refused before its temporary part exists (its name too
long here) raises the refusal itself: the clean-up's delete of the part
that was never made fails quietly, and leaves nothing behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from livetrace._agent.store import Store

pytestmark = pytest.mark.once


def test_a_write_refused_before_its_part_exists_raises_the_refusal(tmp_path: Path) -> None:
    store = Store.open(f"file://{tmp_path}")
    name = "x" * 250  # a name the directory takes; its part's (".NAME.part-ID") is past NAME_MAX
    with pytest.raises(OSError, match="too long"):
        store.put(f"t/{name}", b"data")
    assert os.listdir(tmp_path / "t") == []
    assert store.put(f"t/{name[:200]}", b"data") == f"file://{tmp_path}/t/{name[:200]}"
