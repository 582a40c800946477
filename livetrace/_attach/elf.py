"""The little of ELF that locating Go build information needs: the loaded
segments (to turn a virtual address into a file offset) and the section
headers (to find one section by name). 32- and 64-bit, either byte order.

Every table, name and range is checked against the size of the data before
it is read, so a hostile file gives a typed error, never an IndexError or a
struct.error, and no loop runs longer than the file allows. `ps` reads the
executables of every process, other users' too, so the work a file can ask
for is also capped, far above what any linker writes: at most MAX_HEADERS
program and section headers, and no section name is ever copied (a lookup
compares one name's bytes in place; names are checked to end within
MAX_SECTION_NAME bytes).
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass

from livetrace._errors import BuildInfoTooLargeError, CorruptBuildInfoError, NotELFError

Buffer = bytes | bytearray | mmap.mmap

ELF_MAGIC = b"\x7fELF"
EI_CLASS = 4
EI_DATA = 5
ELFCLASS32 = 1
ELFCLASS64 = 2
ELFDATA2LSB = 1
ELFDATA2MSB = 2

PT_LOAD = 1
PF_X = 0x1
PF_W = 0x2
SHT_NOBITS = 8
# Counts too large for the header's 16-bit fields live in section 0.
SHN_UNDEF = 0
SHN_XINDEX = 0xFFFF
PN_XNUM = 0xFFFF
# Linked executables have tens of sections and about ten program headers;
# section names are a few dozen bytes.
MAX_HEADERS = 4096
MAX_SECTION_NAME = 4096

# Field layouts after e_ident, and of one program or section header, per
# class; the byte-order prefix is added when the file's order is known.
_HEADER = {ELFCLASS32: "HHIIIIIHHHHHH", ELFCLASS64: "HHIQQQIHHHHHH"}
_IDENT_SIZE = 16
# p_type, p_flags, p_offset, p_vaddr, p_filesz as tuple positions.
_PHDR = {ELFCLASS32: ("IIIIIIII", (0, 6, 1, 2, 4)), ELFCLASS64: ("IIQQQQQQ", (0, 1, 2, 3, 5))}
# sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info,
# sh_addralign, sh_entsize: the same positions in both classes.
_SHDR = {ELFCLASS32: "IIIIIIIIII", ELFCLASS64: "IIQQQQIIQQ"}
_SH_NAME, _SH_TYPE, _SH_ADDR, _SH_OFFSET, _SH_SIZE, _SH_LINK, _SH_INFO = 0, 1, 3, 4, 5, 6, 7


@dataclass(frozen=True, slots=True)
class Segment:
    """One program header: where its bytes are in the file and in memory."""

    type: int
    flags: int
    offset: int
    vaddr: int
    filesz: int


@dataclass(frozen=True, slots=True)
class Section:
    """One section header. ``name_at`` is the file offset of its name, which
    is known to end (in a NUL) within the section name table."""

    name_at: int
    type: int
    addr: int
    offset: int
    size: int


@dataclass(frozen=True, slots=True)
class ElfImage:
    """An ELF file's segments and sections over its bytes."""

    data: Buffer
    segments: tuple[Segment, ...]
    sections: tuple[Section, ...]

    def section(self, name: bytes) -> Section | None:
        """The first section called name, comparing len(name) + 1 bytes of each."""
        want = name + b"\0"
        return next((s for s in self.sections if self.data[s.name_at : s.name_at + len(want)] == want), None)

    def file_range(self, offset: int, size: int, what: str) -> tuple[int, int]:
        """[offset, offset + size) after checking it lies in the file."""
        if offset + size > len(self.data):
            raise CorruptBuildInfoError(
                f"{what} (bytes {offset}..{offset + size}) runs past the end of the file ({len(self.data)} bytes)"
            )
        return offset, offset + size

    def locate(self, vaddr: int, size: int, what: str) -> tuple[int, int]:
        """The file range of size bytes at virtual address vaddr, in the
        loaded segment holding them; a range that leaves its segment is corrupt."""
        for seg in self.segments:
            if seg.type == PT_LOAD and seg.vaddr <= vaddr < seg.vaddr + seg.filesz:
                if vaddr + size > seg.vaddr + seg.filesz:
                    raise CorruptBuildInfoError(
                        f"{what} at address {vaddr:#x} ({size} bytes) runs past the end of its segment "
                        f"(which ends at {seg.vaddr + seg.filesz:#x})"
                    )
                return self.file_range(seg.offset + vaddr - seg.vaddr, size, what)
        raise CorruptBuildInfoError(f"{what} at address {vaddr:#x} lies in no loaded segment of the file")

    def read(self, vaddr: int, size: int, what: str) -> bytes:
        start, end = self.locate(vaddr, size, what)
        return bytes(self.data[start:end])


def parse_elf(data: Buffer) -> ElfImage:
    """The segments and sections of an ELF image; NotELFError when data is
    not ELF, CorruptBuildInfoError when its headers do not fit in it."""
    if data[: len(ELF_MAGIC)] != ELF_MAGIC:
        raise NotELFError("not an ELF executable (no \\x7fELF magic)")
    if len(data) < _IDENT_SIZE:
        raise CorruptBuildInfoError(f"the ELF identification is cut short: the file has only {len(data)} bytes")
    cls, order = data[EI_CLASS], data[EI_DATA]
    if cls not in _HEADER:
        raise CorruptBuildInfoError(f"ELF class {cls} is neither 32-bit ({ELFCLASS32}) nor 64-bit ({ELFCLASS64})")
    if order not in (ELFDATA2LSB, ELFDATA2MSB):
        raise CorruptBuildInfoError(f"ELF byte order {order} is neither little ({ELFDATA2LSB}) nor big ({ELFDATA2MSB})")
    bo = "<" if order == ELFDATA2LSB else ">"
    header = struct.Struct(bo + _HEADER[cls])
    if len(data) < _IDENT_SIZE + header.size:
        raise CorruptBuildInfoError(f"the ELF header is cut short: the file has only {len(data)} bytes")
    (_, _, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, shstrndx) = header.unpack_from(
        data, _IDENT_SIZE
    )
    shdr = struct.Struct(bo + _SHDR[cls])
    first = _section_zero(data, shdr, shoff, shentsize)
    if first is not None:
        # Extended numbering: the real counts and index sit in section 0.
        if shnum == 0:
            shnum = first[_SH_SIZE]
        if shstrndx == SHN_XINDEX:
            shstrndx = first[_SH_LINK]
        if phnum == PN_XNUM:
            phnum = first[_SH_INFO]
    segments = _segments(data, struct.Struct(bo + _PHDR[cls][0]), _PHDR[cls][1], phoff, phentsize, phnum)
    sections = _sections(data, shdr, shoff, shentsize, shnum, shstrndx)
    return ElfImage(data, segments, sections)


def _table(data: Buffer, entry: struct.Struct, offset: int, entsize: int, count: int, what: str) -> range:
    """The offsets of a header table's entries, after checking it fits."""
    if count == 0:
        return range(0)
    if count > MAX_HEADERS:
        raise BuildInfoTooLargeError(
            f"the {what} has {count} entries, more than the {MAX_HEADERS} livetrace reads (linkers write tens)"
        )
    if entsize < entry.size:
        raise CorruptBuildInfoError(f"the {what} entries are {entsize} bytes, fewer than the {entry.size} they need")
    if offset + entsize * count > len(data):
        raise CorruptBuildInfoError(
            f"the {what} ({count} entries of {entsize} bytes at offset {offset}) runs past the end of the file "
            f"({len(data)} bytes)"
        )
    return range(offset, offset + entsize * count, entsize)


def _section_zero(data: Buffer, shdr: struct.Struct, shoff: int, shentsize: int) -> tuple[int, ...] | None:
    """Section 0's raw fields, when the file has a section table: its size,
    link and info fields hold the extended counts."""
    if shoff == 0:
        return None
    (off,) = _table(data, shdr, shoff, shentsize, 1, "section header table")
    fields: tuple[int, ...] = shdr.unpack_from(data, off)
    return fields


def _segments(
    data: Buffer, phdr: struct.Struct, fields: tuple[int, ...], phoff: int, phentsize: int, phnum: int
) -> tuple[Segment, ...]:
    t, fl, off, va, fs = fields
    out = []
    for at in _table(data, phdr, phoff, phentsize, phnum, "program header table"):
        f = phdr.unpack_from(data, at)
        out.append(Segment(type=f[t], flags=f[fl], offset=f[off], vaddr=f[va], filesz=f[fs]))
    return tuple(out)


def _sections(
    data: Buffer, shdr: struct.Struct, shoff: int, shentsize: int, shnum: int, shstrndx: int
) -> tuple[Section, ...]:
    if shoff == 0:
        return ()
    raw = [shdr.unpack_from(data, at) for at in _table(data, shdr, shoff, shentsize, shnum, "section header table")]
    if shstrndx == SHN_UNDEF:
        # No section names: nothing can be found by name.
        return ()
    if shstrndx >= len(raw):
        raise CorruptBuildInfoError(f"the section name table is section {shstrndx}, but there are {len(raw)}")
    names = raw[shstrndx]
    names_start, names_size = names[_SH_OFFSET], names[_SH_SIZE]
    if names[_SH_TYPE] == SHT_NOBITS or names_start + names_size > len(data):
        raise CorruptBuildInfoError(
            f"the section name table (bytes {names_start}..{names_start + names_size}) is not in the file "
            f"({len(data)} bytes)"
        )
    names_end = names_start + names_size
    out = []
    for f in raw:
        name_at = names_start + f[_SH_NAME]
        if name_at >= names_end:
            raise CorruptBuildInfoError(
                f"a section name offset ({f[_SH_NAME]}) lies outside the name table ({names_size} bytes)"
            )
        # Bounded: many sections may share one long name.
        if data.find(b"\0", name_at, min(names_end, name_at + MAX_SECTION_NAME + 1)) < 0:
            if name_at + MAX_SECTION_NAME < names_end:
                raise BuildInfoTooLargeError(
                    f"a section name is longer than the {MAX_SECTION_NAME} bytes livetrace reads"
                )
            raise CorruptBuildInfoError("a section name runs past the end of the name table")
        out.append(Section(name_at, f[_SH_TYPE], f[_SH_ADDR], f[_SH_OFFSET], f[_SH_SIZE]))
    return tuple(out)
