"""The module information text a Go binary carries (what `go version -m`
prints): one fact per line, tab-separated.

    path   <main package path>
    mod    <module path> <version> [<sum>]      the main module
    dep    <module path> <version> [<sum>]      one per dependency
    =>     <module path> <version> <sum>        replaces the mod/dep line above
    build  <key>=<value>                        one build setting

A key or value holding a space, tab, newline, quote or backquote (a key also
`=`, or an empty one) is written as a Go string literal. Lines of other
kinds are skipped, as Go skips them; a text that is not UTF-8 is decoded
with U+FFFD in place of the bad bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from livetrace._errors import CorruptBuildInfoError

_PATH, _MOD, _DEP, _REPLACE, _BUILD = "path\t", "mod\t", "dep\t", "=>\t", "build\t"
_NEEDS_QUOTES_VALUE = frozenset(' \t\r\n"`')
_NEEDS_QUOTES_KEY = _NEEDS_QUOTES_VALUE | {"="}
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"'}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
_MAX_RUNE = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


@dataclass(frozen=True, slots=True)
class Module:
    """One module of a build: the main module or a dependency. ``replace``
    is the module that stood in for it (a `=>` line), if any."""

    path: str
    version: str
    sum: str = ""
    replace: Module | None = None


@dataclass(frozen=True, slots=True)
class ModuleInfo:
    """The parsed module information text (everything but the Go version)."""

    path: str = ""
    main: Module | None = None
    deps: list[Module] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)


def parse_modinfo(text: str) -> ModuleInfo:
    """The module information text's facts; CorruptBuildInfoError naming the
    line when one is malformed. A last line without a newline is ignored,
    as Go ignores it."""
    path = ""
    main: Module | None = None
    deps: list[Module] = []
    settings: dict[str, str] = {}
    # Where the line just read put its module, for a `=>` line to replace.
    last: tuple[str, int] | None = None
    for number, line in enumerate(text.split("\n")[:-1], start=1):
        try:
            if line.startswith(_PATH):
                path = line[len(_PATH) :]
            elif line.startswith((_MOD, _DEP)):
                word, _, rest = line.partition("\t")
                module = _module(rest.split("\t"))
                if word == "mod":
                    main, last = module, ("mod", 0)
                else:
                    deps.append(module)
                    last = ("dep", len(deps) - 1)
            elif line.startswith(_REPLACE):
                columns = line[len(_REPLACE) :].split("\t")
                if len(columns) != 3:
                    raise ValueError(f"a replacement needs 3 columns, not {len(columns)}")
                if last is None:
                    raise ValueError("a replacement follows no module line")
                replacement = Module(columns[0], columns[1], columns[2])
                if main is not None and last[0] == "mod":
                    main = _replaced(main, replacement)
                else:
                    deps[last[1]] = _replaced(deps[last[1]], replacement)
                last = None
            elif line.startswith(_BUILD):
                key, value = _setting(line[len(_BUILD) :])
                settings[key] = value
        except ValueError as e:
            raise CorruptBuildInfoError(f"module information, line {number}: {e}") from None
    return ModuleInfo(path=path, main=main, deps=deps, settings=settings)


def _module(columns: list[str]) -> Module:
    if len(columns) not in (2, 3):
        raise ValueError(f"a module line needs 2 or 3 columns, not {len(columns)}")
    return Module(columns[0], columns[1], columns[2] if len(columns) == 3 else "")


def _replaced(module: Module, replacement: Module) -> Module:
    return Module(module.path, module.version, module.sum, replacement)


def _setting(kv: str) -> tuple[str, str]:
    """A build line's key and value, unquoted."""
    if not kv:
        raise ValueError("a build line without '='")
    if kv[0] == "=":
        raise ValueError("a build line without a key")
    if kv[0] in '`"':
        key, used = _go_string(kv)
        if used == len(kv) or kv[used] != "=":
            raise ValueError("a quoted build key not followed by '='")
        raw = kv[used + 1 :]
    else:
        key, eq, raw = kv.partition("=")
        if not eq:
            raise ValueError("a build line without '='")
        if not key or _NEEDS_QUOTES_KEY.intersection(key):
            raise ValueError(f"build key {key!r} should have been quoted")
    if raw[:1] in ("`", '"'):
        value, used = _go_string(raw)
        if used != len(raw):
            raise ValueError("text after a quoted build value")
        return key, value
    if _NEEDS_QUOTES_VALUE.intersection(raw):
        raise ValueError(f"build value {raw!r} should have been quoted")
    return key, raw


def _go_string(s: str) -> tuple[str, int]:
    """The Go string literal (interpreted or raw) at the start of s: its
    value and how many characters of s it spans."""
    quote = s[0]
    if quote == "`":
        end = s.find("`", 1)
        if end < 0:
            raise ValueError("a raw string literal without its closing backquote")
        return s[1:end].replace("\r", ""), end + 1
    out = bytearray()
    i = 1
    while i < len(s):
        c = s[i]
        if c == quote:
            return out.decode("utf-8", "replace"), i + 1
        if c == "\n":
            raise ValueError("a newline inside a string literal")
        if c != "\\":
            out += c.encode("utf-8", "replace")
            i += 1
            continue
        i = _escape(s, i + 1, out)
    raise ValueError("a string literal without its closing quote")


def _escape(s: str, i: int, out: bytearray) -> int:
    """Decode the escape whose letter is at s[i] into out; the index after it."""
    if i >= len(s):
        raise ValueError("a string literal ending in a backslash")
    c = s[i]
    if c in _ESCAPES:
        out += _ESCAPES[c].encode()
        return i + 1
    if c in _HEX_DIGITS:
        digits = s[i + 1 : i + 1 + _HEX_DIGITS[c]]
        value = _number(digits, _HEX_DIGITS[c], 16)
        if c == "x":
            out.append(value)
        elif value > _MAX_RUNE or value in _SURROGATES:
            raise ValueError(f"\\{c}{digits} is not a Unicode code point")
        else:
            out += chr(value).encode()
        return i + 1 + len(digits)
    if c in "01234567":
        value = _number(s[i : i + 3], 3, 8)
        if value > 0xFF:
            raise ValueError(f"octal escape \\{s[i : i + 3]} is above 255")
        out.append(value)
        return i + 3
    raise ValueError(f"unknown escape \\{c}")


def _number(digits: str, count: int, base: int) -> int:
    allowed = "0123456789abcdefABCDEF" if base == 16 else "01234567"
    if len(digits) != count or not all(d in allowed for d in digits):
        raise ValueError(f"a bad escape: {digits!r} is not {count} base-{base} digits")
    return int(digits, base)
