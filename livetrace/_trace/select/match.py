"""Which ids of a :class:`Tables` a filter's patterns match, for events and
spans alike.

A filter's stack regex and name globs are tried once per string or stack of
a generation, not once per event: selecting events or spans then costs an id
lookup each. The answers are cached per Tables object (weakly, so a generation's
cache goes with it) and per pattern; a Tables that grew since (a legacy
trace's tables fill in as its footer is read) is matched afresh.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from fnmatch import fnmatchcase
from weakref import WeakKeyDictionary

from livetrace._trace.model.tables import Tables

# Per Tables: (what, pattern, size of the table when matched) -> ids.
_Key = tuple[str, object, int]
_cache: WeakKeyDictionary[Tables, dict[_Key, frozenset[int]]] = WeakKeyDictionary()


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def frame_text(tables: Tables, pc: int) -> str:
    """A frame as the stack regex sees it: ``function file:line``."""
    func, file, line = tables.frames.get(pc, (0, 0, 0))
    return f"{_text(tables.strings.get(func, b''))} {_text(tables.strings.get(file, b''))}:{line}"


def _cached(tables: Tables, key: _Key, compute: Callable[[], frozenset[int]]) -> frozenset[int]:
    per = _cache.get(tables)
    if per is None:
        per = _cache[tables] = {}
    ids = per.get(key)
    if ids is None:
        ids = per[key] = compute()
    return ids


def stack_ids_matching(tables: Tables, pattern: re.Pattern[str] | str) -> frozenset[int]:
    """Ids of the stacks with a frame whose ``function file:line`` the
    regular expression finds (``re.search``) a match in."""
    rx = re.compile(pattern) if isinstance(pattern, str) else pattern

    def compute() -> frozenset[int]:
        hits: dict[int, bool] = {}  # per PC: frames recur across stacks
        ids = []
        for sid, pcs in tables.stacks.items():
            for pc in pcs:
                hit = hits.get(pc)
                if hit is None:
                    hit = hits[pc] = rx.search(frame_text(tables, pc)) is not None
                if hit:
                    ids.append(sid)
                    break
        return frozenset(ids)

    return _cached(tables, ("stack", rx, len(tables.stacks)), compute)


def _globs_match(globs: Iterable[str]) -> Callable[[bytes], bool]:
    pats = tuple(globs)
    return lambda b: any(fnmatchcase(_text(b), p) for p in pats)


def string_ids_matching(tables: Tables, globs: Iterable[str]) -> frozenset[int]:
    """Ids of the strings that match any of the glob patterns (``fnmatch``,
    case-sensitive)."""
    pats = tuple(globs)
    match = _globs_match(pats)
    return _cached(
        tables,
        ("string", pats, len(tables.strings)),
        lambda: frozenset(sid for sid, s in tables.strings.items() if match(s)),
    )


def extra_string_ids_matching(tables: Tables, globs: Iterable[str]) -> frozenset[int]:
    """Indexes of the derived strings (``Tables.extra_strings``: a task's
    type at its end) that match any of the glob patterns."""
    pats = tuple(globs)
    match = _globs_match(pats)
    return _cached(
        tables,
        ("extra", pats, len(tables.extra_strings)),
        lambda: frozenset(i for i, s in enumerate(tables.extra_strings) if match(s)),
    )


def names_matching(names: Sequence[bytes], globs: Iterable[str]) -> bytes:
    """A mask over the ids of a span builder's table of names
    (``SpanBatch.names_table``: reasons, region and task types, a handful):
    1 where the name matches one of the glob patterns. Not cached: that
    table grows for the builder's life and is not a Tables."""
    match = _globs_match(globs)
    return bytes(1 if match(n) else 0 for n in names)
