"""Go's strconv.Quote, so dumps match Go's tools byte for byte."""

from __future__ import annotations

import unicodedata

_NAMED = {7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v", 0x22: '\\"', 0x5C: "\\\\"}
_PRINTABLE_ASCII = {c: chr(c) for c in range(0x20, 0x7F)}


def _printable(ch: str) -> bool:
    # Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and
    # the ASCII space.
    return ch == " " or unicodedata.category(ch)[0] in "LMNPS"


def go_quote(data: bytes) -> str:
    """``strconv.Quote(string(data))``: invalid UTF-8 bytes become ``\\xNN``."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return _quote_slow(data)
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return '"' + "".join(_NAMED.get(ord(c)) or _PRINTABLE_ASCII.get(ord(c)) or f"\\x{ord(c):02x}" for c in text) + '"'


def _quote_slow(data: bytes) -> str:
    out = ['"']
    text = data.decode("utf-8", errors="surrogateescape")
    for ch in text:
        o = ord(ch)
        if 0xDC80 <= o <= 0xDCFF:  # an undecodable byte
            out.append(f"\\x{o - 0xDC00:02x}")
        elif o in _NAMED:
            out.append(_NAMED[o])
        elif o < 0x80:
            out.append(ch if 0x20 <= o < 0x7F else f"\\x{o:02x}")
        elif _printable(ch):
            out.append(ch)
        elif o < 0x10000:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    out.append('"')
    return "".join(out)
