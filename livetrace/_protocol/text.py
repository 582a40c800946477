"""Showing text a peer chose: control characters escaped, length bounded.

A helper's messages (a refusal naming another client, an end frame's
detail, the traced executable's path) reach terminals and logs. Escape
sequences in them could rewrite the screen or forge lines, so every such
string is shown the way ``repr`` shows it, without the quotes.
"""

from __future__ import annotations

import re
import unicodedata

MAX_SHOWN = 500  # characters of one peer string shown; the rest is elided


def _escape(ch: str) -> str:
    code = ord(ch)
    if ch == "\\":
        return "\\\\"
    if ch in "\n\r\t":
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch]
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _needs_escape(ch: str) -> bool:
    # Cc: C0, DEL and C1 controls; Cf: format characters such as the bidi
    # overrides that reorder what a terminal shows; Cs: lone surrogates
    # (bytes that were not UTF-8); Zl/Zp: line and paragraph separators.
    return ch == "\\" or unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")


def shown(text: str, limit: int = MAX_SHOWN) -> str:
    """``text`` safe to print on one line: control and format characters
    (and backslashes) escaped as in a Python literal, at most ``limit``
    characters of it."""
    tail = f"... ({len(text)} characters)" if len(text) > limit else ""
    text = text[:limit]
    if text.isprintable() and "\\" not in text and text.isascii():
        return text + tail
    return "".join(_escape(c) if _needs_escape(c) else c for c in text) + tail


def shown_value(value: object, limit: int = 60) -> str:
    """A JSON value a peer sent, for an error message: strings quoted and
    escaped, anything else as its JSON-ish repr, cut to ``limit``."""
    if isinstance(value, str):
        return '"' + shown(value, limit) + '"'
    text = "null" if value is None else "true" if value is True else "false" if value is False else repr(value)
    return shown(text, limit)


def json_safe(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``, which escapes only
    C0) with DEL, the C1 controls, format characters and line separators
    escaped too, as ``\\uXXXX``: the same JSON value, and nothing a
    terminal reads as a control when the JSON is printed on one."""
    if text.isascii() and "\x7f" not in text:
        return text
    return "".join(_json_escape(c) if c >= "\x7f" and _needs_escape(c) else c for c in text)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON writes an astral character as its UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


_NOT_PLAIN = re.compile(r"[^\n\x20-\x7e]")


def _terminal_escape(match: re.Match[str]) -> str:
    ch = match.group()
    if "\udc80" <= ch <= "\udcff":  # a byte that was not UTF-8 (surrogateescape): C1 on some terminals
        return f"\\x{ord(ch) - 0xDC00:02x}"
    return _escape(ch) if _needs_escape(ch) else ch


def terminal_text(text: str) -> str:
    """Whole lines of text bound for a terminal, their new lines kept and
    every other control, format character, separator or byte that was not
    UTF-8 written as an escape (backslashes stay: the text's own)."""
    return _NOT_PLAIN.sub(_terminal_escape, text)
