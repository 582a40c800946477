"""docs/decoder.md's picture of the live pipeline is the one the code's own
stage list makes (`python -m livetrace._session.pipeline`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from livetrace._session.pipeline import mermaid

pytestmark = pytest.mark.once  # no decoding


def test_the_docs_show_the_pipeline_the_code_runs() -> None:
    doc = (Path(__file__).parent.parent / "docs" / "decoder.md").read_text()
    pictures = re.findall(r"```mermaid\n(.*?)```", doc, re.DOTALL)
    assert mermaid() + "\n" in pictures
