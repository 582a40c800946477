"""Which ids match a filter's patterns, per table (private to spans/).

The subscribers' work (select/match.py) has the general form of these; the
span layer keeps its own small copy until the two are unified.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from fnmatch import fnmatchcase

from livetrace._trace.model.tables import Tables

_stack_cache: weakref.WeakKeyDictionary[Tables, dict[re.Pattern[str], tuple[int, frozenset[int]]]] = (
    weakref.WeakKeyDictionary()
)


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def frame_text(tables: Tables, pc: int) -> str:
    """A frame as filters see it: ``function file:line``."""
    func, file, line = tables.frames.get(pc, (0, 0, 0))
    return f"{_text(tables.strings.get(func, b''))} {_text(tables.strings.get(file, b''))}:{line}"


def stack_ids_matching(tables: Tables, pattern: re.Pattern[str]) -> frozenset[int]:
    """The ids of the stacks of tables with a frame the pattern matches
    (searched in ``function file:line``). Cached per tables and pattern
    while the tables do not grow."""
    per = _stack_cache.setdefault(tables, {})
    got = per.get(pattern)
    if got is not None and got[0] == len(tables.stacks):
        return got[1]
    frames: dict[int, bool] = {}
    ids = set()
    for sid, pcs in tables.stacks.items():
        for pc in pcs:
            hit = frames.get(pc)
            if hit is None:
                hit = frames[pc] = pattern.search(frame_text(tables, pc)) is not None
            if hit:
                ids.add(sid)
                break
    found = frozenset(ids)
    per[pattern] = (len(tables.stacks), found)
    return found


def names_matching(names: Sequence[bytes], globs: Sequence[str]) -> bytes:
    """A mask over name ids: 1 where the name matches one of the globs."""
    return bytes(1 if any(fnmatchcase(_text(n), g) for g in globs) else 0 for n in names)
