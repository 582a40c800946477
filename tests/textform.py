"""Go's text-form trace tests (tests/corpus/modern/*.test) turned into bytes.

The format is described in that folder's README: a txtar archive with an
`expect` member and a `trace` member whose lines are `-d=wire` records.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from pathlib import Path

from livetrace._trace.spec.modern import EV_EXPERIMENTAL_BATCH, SPECS

# Go's text-form tests, copied into the repository with Go's LICENSE beside them.
CORPUS = Path(__file__).resolve().parent / "corpus" / "modern"
_BY_NAME = {s.name: s for s in SPECS if s is not None}


@dataclass
class TextTrace:
    name: str
    expect_success: bool
    failure_pattern: str
    minor: int
    wire_lines: list[str]  # the trace member, as -d=wire prints it
    data: bytes


def uvarint(v: int, width: int = 0) -> bytes:
    """v as an unsigned LEB128 varint: 7 bits a byte, low bits first, 0x80
    where more follow; padded to ``width`` bytes where given, as the runtime
    writes a batch's size (room for any, filled in last)."""
    out = bytearray()
    while v >= 0x80 or len(out) + 1 < width:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    assert not width or len(out) == width, (v, width)
    return bytes(out)


def past_uvarint(data: bytes, at: int) -> int:
    """Where the uvarint at ``at`` ends."""
    while data[at] >= 0x80:
        at += 1
    return at + 1


def _members(text: str) -> dict[str, list[str]]:
    members: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        m = re.fullmatch(r"-- (.+) --", line)
        if m:
            current = members.setdefault(m.group(1), [])
        elif current is not None:
            current.append(line)
    return members


def load(path: Path) -> TextTrace:
    return parse(path.stem, path.read_text())


def parse(name: str, text: str) -> TextTrace:
    """A text-form test, from its txtar text."""
    members = _members(text)
    expect = members["expect"][0].strip()
    pattern = ""
    if expect.startswith("FAILURE"):
        pattern = codecs.escape_decode(expect[len("FAILURE ") :].strip()[1:-1].encode())[0].decode()
    lines = [line for line in members["trace"] if line.strip() and not line.strip().startswith("#")]
    version = re.fullmatch(r"Trace Go1\.(\d+)", lines[0].strip())
    assert version is not None, lines[0]
    minor = int(version.group(1))
    out = bytearray(f"go 1.{minor} trace\x00\x00\x00".encode())
    for line in lines[1:]:
        tokens = line.split()
        if tokens[0].startswith("data="):
            raw = line.strip()[len("data=") :]
            data = codecs.escape_decode(raw[1:-1].encode())[0]
            out += uvarint(len(data)) + data
            continue
        values = [int(t.split("=", 1)[1]) for t in tokens if "=" in t]
        if tokens[0].startswith("pc="):
            out += b"".join(uvarint(v) for v in values)
            continue
        spec = _BY_NAME[tokens[0]]
        out.append(spec.code)
        if spec.code == EV_EXPERIMENTAL_BATCH:  # the experiment id is a raw byte
            out.append(values[0])
            values = values[1:]
        out += b"".join(uvarint(v) for v in values)
    wire = [line.strip() if not line.startswith("\t") else "\t" + line.strip() for line in lines[1:]]
    return TextTrace(name, expect == "SUCCESS", pattern, minor, wire, bytes(out))


def all_tests() -> list[TextTrace]:
    tests = [load(p) for p in sorted(CORPUS.glob("*.test"))]
    if not tests:
        raise RuntimeError(f"no .test files in {CORPUS}")
    return tests
