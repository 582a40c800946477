"""Small ELF executables that carry Go build information, written from the
format for the build-information tests: both layouts (Go 1.18+ inline
strings, and the older pointers to string headers), 32- and 64-bit, either
byte order, with or without section headers. No code, only what a reader of
build information looks at: two loaded segments (read-only text holding the
old layout's string bytes, writable data starting with the header) and the
sections .go.buildinfo and .shstrtab.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .textform import uvarint

MAGIC = b"\xff Go buildinf:"
# The markers the go command wraps the module information in.
SENTINEL_START = bytes.fromhex("3077af0c9274080241e1c107e6d618e6")
SENTINEL_END = bytes.fromhex("f932433186182072008242104116d8f2")

PT_LOAD = 1
PF_X, PF_W, PF_R = 1, 2, 4
SHT_PROGBITS, SHT_STRTAB = 1, 3
ET_EXEC = 2
EM_X86_64, EM_386, EM_PPC64, EM_PPC = 62, 3, 21, 20
BASE = 0x400000
# The data segment's addresses differ from its file offsets by more than
# the text's: pointers must be resolved through the segment table.
DATA_SHIFT = 0x1000


@dataclass(frozen=True)
class Layout:
    """Where the interesting parts of a built file are, for the mutation tests."""

    header_at: int  # the build information header (the magic)
    blob_end: int  # the end of what the header leads to (inline strings or string headers)
    strings_at: int  # the old layout's string bytes in the text segment (0 for inline)
    phoff: int
    shoff: int  # 0 without section headers


def wrap_modinfo(text: str) -> bytes:
    """Module information as the go command stores it: between its markers."""
    return SENTINEL_START + text.encode() + SENTINEL_END


def build_elf(
    version: str,
    modinfo: bytes,
    *,
    bits: int = 64,
    big: bool = False,
    inline: bool = True,
    sections: bool = True,
    decoy: bool = False,
) -> tuple[bytes, Layout]:
    """An ELF whose build information holds version and modinfo (already
    wrapped). decoy puts a misaligned magic ahead of the real header."""
    bo = ">" if big else "<"
    p = "I" if bits == 32 else "Q"
    psize = bits // 8
    ehsize, phentsize, shentsize = (52, 32, 40) if bits == 32 else (64, 56, 64)
    machine = {(32, False): EM_386, (64, False): EM_X86_64, (32, True): EM_PPC, (64, True): EM_PPC64}[bits, big]

    # Text segment: the headers, then the old layout's string bytes.
    phoff = ehsize
    text = bytearray(ehsize + 2 * phentsize)
    strings_at = 0
    version_addr = modinfo_addr = 0
    if not inline:
        strings_at = len(text)
        version_addr = BASE + len(text)
        text += version.encode()
        modinfo_addr = BASE + len(text)
        text += modinfo
    text += bytes(-len(text) % 16)

    # Data segment: the header 16-aligned (after a misaligned decoy if asked).
    data_off = len(text)
    data = bytearray()
    if decoy:
        data += b"\0" + MAGIC + bytes(1)
        data += bytes(-len(data) % 16)
    header_at = data_off + len(data)
    data_addr = BASE + DATA_SHIFT + data_off
    flags = (1 if big else 0) | (2 if inline else 0)
    data += MAGIC + bytes([psize, flags])
    if inline:
        data += bytes(16)
        for s in (version.encode(), modinfo):
            data += uvarint(len(s)) + s
    else:
        headers_addr = data_addr + len(data) + 16
        data += struct.pack(bo + p + p, headers_addr, headers_addr + 2 * psize)
        data += bytes(HEADER_PAD - 2 * psize)
        data += struct.pack(bo + p * 4, version_addr, len(version), modinfo_addr if modinfo else 0, len(modinfo))
    blob_end = data_off + len(data)
    data += bytes(-len(data) % 16)

    body = text + data
    shoff = 0
    shnum = shstrndx = 0
    if sections:
        names = b"\0.go.buildinfo\0.shstrtab\0"
        names_off = len(body)
        body += names + bytes(-(len(body) + len(names)) % 8)
        shoff = len(body)
        shdr = bo + ("IIIIIIIIII" if bits == 32 else "IIQQQQIIQQ")
        body += bytes(shentsize)  # the null section
        body += struct.pack(shdr, 1, SHT_PROGBITS, PF_W | PF_R, data_addr, data_off, len(data), 0, 0, 16, 0)
        body += struct.pack(shdr, 15, SHT_STRTAB, 0, 0, names_off, len(names), 0, 0, 1, 0)
        shnum, shstrndx = 3, 2

    ident = b"\x7fELF" + bytes([1 if bits == 32 else 2, 2 if big else 1, 1]) + bytes(9)
    header = struct.pack(
        bo + ("HHIIIIIHHHHHH" if bits == 32 else "HHIQQQIHHHHHH"),
        ET_EXEC, machine, 1, BASE, phoff, shoff, 0, ehsize, phentsize, 2, shentsize, shnum, shstrndx,
    )  # fmt: skip
    body[: len(ident) + len(header)] = ident + header
    for i, (flags_, off, addr, size) in enumerate(
        [(PF_R | PF_X, 0, BASE, len(text)), (PF_R | PF_W, data_off, data_addr, len(data))]
    ):
        if bits == 32:
            ph = struct.pack(bo + "IIIIIIII", PT_LOAD, off, addr, addr, size, size, flags_, 0x1000)
        else:
            ph = struct.pack(bo + "IIQQQQQQ", PT_LOAD, flags_, off, addr, addr, size, size, 0x1000)
        body[phoff + i * phentsize : phoff + (i + 1) * phentsize] = ph
    return bytes(body), Layout(header_at, blob_end, strings_at, phoff, shoff)


# The old layout's header holds its two pointers in 16 bytes.
HEADER_PAD = 16
