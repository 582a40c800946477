"""The protocol's constants are written twice, in go_helper/protocol.go and
in livetrace/_protocol/frames.py: the frame codes, the preamble's magic and
versions, the header sizes, and the error codes the client gives a type.
This reads the Go source's text (no Go toolchain) and compares."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from livetrace import _errors
from livetrace._protocol import frames

pytestmark = pytest.mark.once  # no decoder core runs

PROTOCOL_GO = Path(__file__).resolve().parent.parent / "go_helper" / "protocol.go"
_CONST_BLOCK = re.compile(r"^const \(\n(.*?)^\)", re.MULTILINE | re.DOTALL)
_CONST = re.compile(r"^\s*(\w+)\s*=\s*([^/\n]+?)\s*(?://.*)?$", re.MULTILINE)


def _literal(node: ast.expr) -> object:
    """A Go literal that reads the same in Python: a number, a string, a shift of numbers."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.LShift):
        left, right = _literal(node.left), _literal(node.right)
        if isinstance(left, int) and isinstance(right, int):
            return left << right
    raise ValueError("not a literal")


def go_constants(source: str) -> dict[str, object]:
    """The constants of source's const blocks whose values are literals;
    those computed from others are left out."""
    out: dict[str, object] = {}
    for block in _CONST_BLOCK.findall(source):
        for name, value in _CONST.findall(block):
            try:
                out[name] = _literal(ast.parse(value, mode="eval").body)
            except (SyntaxError, ValueError):
                continue
    return out


def go_frame_codes(source: str) -> dict[str, int]:
    """frameHello = 0x01 -> {"HELLO": 1}: Go's frame types, by frames.py's names."""
    return {
        re.sub(r"(?<!^)(?=[A-Z])", "_", name.removeprefix("frame")).upper(): value
        for name, value in go_constants(source).items()
        if re.fullmatch(r"frame[A-Z]\w*", name) and isinstance(value, int) and name != "frameHeaderSize"
    }


def python_frame_codes() -> dict[str, int]:
    """The frame codes frames.py defines: the constants after its "# Frame
    types." comment, up to the next blank line."""
    text = Path(frames.__file__).read_text()
    block = text.split("# Frame types.\n", 1)[1].split("\n\n", 1)[0]
    names = re.findall(r"^([A-Z_]+) = ", block, re.MULTILINE)
    return {name: getattr(frames, name) for name in names}


def test_the_frame_codes_are_the_helpers() -> None:
    go = go_frame_codes(PROTOCOL_GO.read_text())
    assert len(go) >= 9 and go["HELLO"] == 0x01
    assert python_frame_codes() == go


def test_the_envelope_is_the_helpers() -> None:
    go = go_constants(PROTOCOL_GO.read_text())
    magic = str(go["protocolMagic"]).encode()
    assert frames.client_preamble().startswith(magic) and len(magic) + 4 == frames.PREAMBLE_SIZE
    assert (go["protocolMinVersion"], go["protocolMaxVersion"]) == (frames.MIN_VERSION, frames.MAX_VERSION)
    assert go["frameHeaderSize"] == frames.FRAME_HEADER_SIZE
    assert go["chunkHeaderSize"] == frames.CHUNK_HEADER_SIZE
    assert isinstance(go["maxControlFrame"], int) and go["maxControlFrame"] <= frames.MAX_FRAME


def test_every_typed_refusal_is_a_code_the_helper_sends() -> None:
    """A code the client maps to a typed error that the helper never sends
    (a typo on either side) would make that refusal an untyped one."""
    go = {v for k, v in go_constants(PROTOCOL_GO.read_text()).items() if k.startswith("errCode")}
    assert len(go) >= 8
    assert set(_errors._REFUSALS) <= go


def test_a_drifted_code_is_seen() -> None:
    drifted = PROTOCOL_GO.read_text().replace("frameSegment   = 0x23", "frameSegment   = 0x25")
    assert go_frame_codes(drifted)["SEGMENT"] == 0x25
    assert python_frame_codes() != go_frame_codes(drifted)
