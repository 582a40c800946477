"""Go build information from an executable's bytes: the Go version it was
built with, its main package and modules, and its build settings, as
`go version -m` shows them. ELF only; docs/buildinfo.md describes the format.

read_build_info works on bytes (or an mmap) and does no I/O;
read_build_info_file opens and maps a file, /proc/PID/exe included.
Every failure is a BuildInfoError whose subclass (and ``reason``) says
which: unreadable, not ELF, not Go, or corrupt.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from dataclasses import dataclass, field

from livetrace._attach.elf import PF_W, PF_X, PT_LOAD, SHT_NOBITS, Buffer, ElfImage, parse_elf
from livetrace._attach.modinfo import Module, parse_modinfo
from livetrace._errors import (
    BuildInfoError,
    BuildInfoTooLargeError,
    CorruptBuildInfoError,
    NotELFError,
    NotGoBinaryError,
    UnreadableBinaryError,
)

__all__ = ["BuildInfo", "Module", "read_build_info", "read_build_info_file"]

SECTION_NAME = b".go.buildinfo"
MAGIC = b"\xff Go buildinf:"
# The header starts on an address that is a multiple of ALIGN.
ALIGN = 16
HEADER_SIZE = 32
PTR_SIZE_AT = 14
FLAGS_AT = 15
POINTERS_AT = 16
FLAG_BIG_ENDIAN = 0x1
# Go 1.18+: the two strings follow the header, each after its varint length.
FLAG_INLINE_STRINGS = 0x2
POINTER_SIZES = {4: "I", 8: "Q"}
# The module information is wrapped in 16 marker bytes at each end.
SENTINEL_SIZE = 16
MAX_VARINT_BYTES = 10
# The linker puts the header at the start of .go.buildinfo (or of the data
# segment); Go 1.18 to 1.21's reader looks at the first 64 KiB there, and so
# do we: a section or segment declared gigabytes long is not searched whole.
SEARCH_BYTES = 64 * 1024
# Far above real strings (a version is "go1.x.y" and a few words; module
# information is about 100 bytes a dependency), and below what would slow
# `ps` down: the module information is parsed in Python.
MAX_VERSION_BYTES = 1024
MAX_MODINFO_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class BuildInfo:
    """What a Go executable says about its build. ``main`` is None when the
    binary has no main module (built outside module mode, or a toolchain
    command such as cmd/go); ``settings`` keeps the build lines in order."""

    go_version: str
    path: str = ""
    main: Module | None = None
    deps: list[Module] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)


def read_build_info(data: Buffer) -> BuildInfo:
    """The build information in an ELF executable's bytes."""
    image = parse_elf(data)
    start, end, vaddr = _search_region(image)
    at = _find_magic(data, start, min(end, start + SEARCH_BYTES), vaddr)
    if at + HEADER_SIZE > end:
        raise CorruptBuildInfoError(f"the build information header at offset {at} is cut short by its region's end")
    header = bytes(data[at : at + HEADER_SIZE])
    if header[FLAGS_AT] & FLAG_INLINE_STRINGS:
        version, after = _inline_string(data, at + HEADER_SIZE, end, "Go version", MAX_VERSION_BYTES)
        modinfo, _ = _inline_string(data, after, end, "module information", MAX_MODINFO_BYTES)
    else:
        version, modinfo = _pointed_strings(image, header)
    if not version:
        raise CorruptBuildInfoError(f"the build information at offset {at} names no Go version")
    info = parse_modinfo(_strip_sentinels(modinfo).decode("utf-8", "replace"))
    return BuildInfo(
        go_version=version.decode("utf-8", "replace"),
        path=info.path,
        main=info.main,
        deps=info.deps,
        settings=info.settings,
    )


def read_build_info_file(path: str | os.PathLike[str]) -> BuildInfo:
    """The build information of the executable at path (mapped, not read
    whole); a BuildInfoError naming the file when there is none."""
    name = os.fspath(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer.
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise UnreadableBinaryError(f"cannot open it: {e.strerror or e}", path=name) from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotELFError("not a regular file", path=name)
        if st.st_size == 0:
            raise NotELFError("an empty file, not an ELF executable", path=name)
        try:
            mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:
            raise UnreadableBinaryError(f"cannot map it: {e}", path=name) from e
        with mapped:
            return read_build_info(mapped)
    except BuildInfoError as e:
        if e.path is not None:
            raise
        raise type(e)(str(e), path=name) from None
    finally:
        os.close(fd)


def _search_region(image: ElfImage) -> tuple[int, int, int]:
    """Where to look for the header: the .go.buildinfo section, or else the
    first writable, non-executable loaded segment (a binary stripped of its
    section headers). Its file start, file end and virtual address."""
    section = image.section(SECTION_NAME)
    if section is not None:
        if section.type == SHT_NOBITS:
            raise CorruptBuildInfoError("the .go.buildinfo section has no bytes in the file")
        start, end = image.file_range(section.offset, section.size, "the .go.buildinfo section")
        return start, end, section.addr
    for seg in image.segments:
        if seg.type == PT_LOAD and seg.flags & (PF_X | PF_W) == PF_W:
            start, end = image.file_range(seg.offset, seg.filesz, "the first writable segment")
            return start, end, seg.vaddr
    raise NotGoBinaryError("not a Go executable: no .go.buildinfo section and no writable data segment")


def _find_magic(data: Buffer, start: int, end: int, vaddr: int) -> int:
    """The file offset of the first magic in [start, end) whose address is
    aligned; each miss resumes one byte on, so the scan is linear."""
    at = start
    while (at := data.find(MAGIC, at, end)) >= 0:
        if (vaddr + at - start) % ALIGN == 0:
            return at
        at += 1
    raise NotGoBinaryError("not a Go executable: no Go build information (no aligned '\\xff Go buildinf:' header)")


def _inline_string(data: Buffer, at: int, end: int, what: str, cap: int) -> tuple[bytes, int]:
    """The varint-prefixed string at offset at, and the offset after it."""
    length = 0
    for i in range(MAX_VARINT_BYTES):
        if at >= end:
            raise CorruptBuildInfoError(f"the length of the {what} is cut short at offset {at}")
        byte = data[at]
        at += 1
        # The last byte may add only one bit: 9 * 7 + 1 = 64. This also
        # ends the loop, as no byte past it may continue the number.
        if i == MAX_VARINT_BYTES - 1 and byte > 1:
            raise CorruptBuildInfoError(f"the length of the {what} overflows 64 bits")
        length |= (byte & 0x7F) << (7 * i)
        if byte < 0x80:
            break
    if length > end - at:
        raise CorruptBuildInfoError(
            f"the {what} at offset {at} is said to be {length} bytes, but only {end - at} remain"
        )
    _check_size(length, cap, what)
    return bytes(data[at : at + length]), at + length


def _pointed_strings(image: ElfImage, header: bytes) -> tuple[bytes, bytes]:
    """Before Go 1.18: the header holds the addresses of two Go string
    headers (data address, length), in the header's pointer size and order."""
    size = header[PTR_SIZE_AT]
    if size not in POINTER_SIZES:
        raise CorruptBuildInfoError(f"the build information header gives a pointer size of {size}, not 4 or 8")
    order = ">" if header[FLAGS_AT] & FLAG_BIG_ENDIAN else "<"
    pointer = struct.Struct(order + POINTER_SIZES[size])
    (version_at,) = pointer.unpack_from(header, POINTERS_AT)
    (modinfo_at,) = pointer.unpack_from(header, POINTERS_AT + size)
    version = _go_string(image, pointer, version_at, "Go version", MAX_VERSION_BYTES)
    return version, _go_string(image, pointer, modinfo_at, "module information", MAX_MODINFO_BYTES)


def _go_string(image: ElfImage, pointer: struct.Struct, at: int, what: str, cap: int) -> bytes:
    string_header = image.read(at, 2 * pointer.size, f"the {what}'s string header")
    (data_at,) = pointer.unpack_from(string_header, 0)
    (length,) = pointer.unpack_from(string_header, pointer.size)
    if length == 0:
        # An empty Go string may have no data address at all.
        return b""
    start, end = image.locate(data_at, length, f"the {what}")
    _check_size(length, cap, what)
    return bytes(image.data[start:end])


def _check_size(length: int, cap: int, what: str) -> None:
    if length > cap:
        raise BuildInfoTooLargeError(f"the {what} is {length} bytes, more than the {cap} livetrace reads")


def _strip_sentinels(modinfo: bytes) -> bytes:
    """The text between the markers; a text too short to hold them, or
    without the newline that ends its last line, is no module information."""
    if len(modinfo) > 2 * SENTINEL_SIZE and modinfo[-SENTINEL_SIZE - 1] == ord("\n"):
        return modinfo[SENTINEL_SIZE:-SENTINEL_SIZE]
    return b""
