"""Colour for `tail`'s text lines: plain ANSI escapes.

Not ``rich``: its per-line rendering costs tens of microseconds, and
`tail` writes hundreds of thousands of lines a second; an escape code is a
string concatenation. Colour is used when asked (``--color=always``), or
when standard output is a terminal and ``NO_COLOR`` is unset
(https://no-color.org); never in a pipe, so piped output is unchanged.
"""

from __future__ import annotations

import os
from typing import TextIO

RESET = "\x1b[0m"
_DIM, _YELLOW, _CYAN, _GREEN, _MAGENTA, _BLUE, _RED = (
    "\x1b[2m",
    "\x1b[33m",
    "\x1b[36m",
    "\x1b[32m",
    "\x1b[35m",
    "\x1b[34m",
    "\x1b[31m",
)
# Per kind name (events and spans): the colour of its name column.
KIND_COLORS = {
    "Sync": _DIM,
    "Metric": _DIM,
    "StateTransition": _CYAN,
    "RangeBegin": _MAGENTA,
    "RangeActive": _MAGENTA,
    "RangeEnd": _MAGENTA,
    "TaskBegin": _GREEN,
    "TaskEnd": _GREEN,
    "RegionBegin": _BLUE,
    "RegionEnd": _BLUE,
    "Log": _YELLOW,
    "running": _GREEN,
    "runnable": _YELLOW,
    "blocked": _RED,
    "syscall": _MAGENTA,
    "gc": _CYAN,
    "stw": _RED,
    "mark-assist": _CYAN,
    "region": _BLUE,
    "task": _GREEN,
}
NOTICE_COLOR = "\x1b[1;33m"


def use_color(mode: str, out: TextIO) -> bool:
    """``mode``: auto, always or never."""
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR"):
        return False
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def paint_line(line: str, kind: str | None, start: int, width: int) -> str:
    """The line with its kind column (``width`` characters from ``start``)
    coloured; a notice's line (kind None) all of it."""
    if kind is None:
        return f"{NOTICE_COLOR}{line}{RESET}"
    c = KIND_COLORS.get(kind)
    if c is None:
        return line
    return f"{line[:start]}{c}{line[start : start + width]}{RESET}{line[start + width :]}"
