"""What the writers of lines make of a generation's tables, once per id: a
string quoted or as JSON, a stack's frames as text or as JSON.

On the compiled core these are the pieces _ccore/render/partcache.h asks
for: the core looks an id up in the dict of its kind and, the first time,
calls ``miss(kind, id)``, then keeps the bytes in that dict.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Generic, TypeVar

from livetrace._trace.model.tables import Tables

# A piece of one kind: the generation's tables (None for an event outside
# any) and an id to its text.
Maker = Callable[[Tables | None, int], str]


class GenerationParts:
    """One generation's pieces, by kind, each made once by its maker.

    ``pieces[kind]`` (id to UTF-8 bytes, through ``encode``) is the
    compiled core's: the core keeps pointers into the bytes for the length
    of a call, so the dicts only grow, and a new generation gets a new
    object (never cleared, only replaced). That keeps them valid even when a
    line the core asks Python for starts another generation in the middle
    of the call. :meth:`text` is the Python writers': the same pieces, as
    text."""

    __slots__ = ("_encode", "_makers", "_texts", "gen", "pieces")

    def __init__(self, gen: Tables | None, makers: Mapping[str, Maker], encode: Callable[[str], bytes]) -> None:
        self.gen = gen
        self._makers = makers
        self._encode = encode
        self.pieces: dict[str, dict[int, bytes]] = {kind: {} for kind in makers}
        self._texts: dict[str, dict[int, str]] = {kind: {} for kind in makers}

    def text(self, kind: str, id_: int) -> str:
        texts = self._texts[kind]
        s = texts.get(id_)
        if s is None:
            s = texts[id_] = self._makers[kind](self.gen, id_)
        return s

    def miss(self, kind: str, id_: int) -> bytes:
        """A piece the compiled core has not met yet (it keeps it in
        ``pieces[kind]``)."""
        return self._encode(self.text(kind, id_))


T = TypeVar("T")


class Kept(Generic[T]):
    """Texts by what they show, across generations (each names the same
    stacks and strings with ids of its own, and making their text again for
    each was a fifth of a busy tail's Python calls). Forgotten all at once
    at ``most`` entries: a long session names many. Shared by the pool's
    threads: read and set under the GIL, and two threads that make one text
    make the same."""

    __slots__ = ("_most", "_texts")

    def __init__(self, most: int) -> None:
        self._texts: dict[Hashable, T] = {}
        self._most = most

    def get(self, key: Hashable, make: Callable[[], T]) -> T:
        text = self._texts.get(key)
        if text is None:
            if len(self._texts) >= self._most:
                self._texts.clear()
            text = self._texts[key] = make()
        return text


def stack_content(g: Tables, sid: int) -> tuple[tuple[bytes, bytes, int], ...]:
    """What a stack's JSON and text show, as a key: its frames' functions,
    files and lines (a stack's id, and its frames' pcs, are its generation's)."""
    frames, strings = g.frames, g.strings
    return tuple((strings[f[0]], strings[f[1]], f[2]) for f in map(frames.__getitem__, g.stacks[sid]))


def tables(gen: Tables | None) -> Tables:
    """The tables a maker of a compiled writer reads: the core writes only
    the lines of a batch that has them."""
    assert gen is not None
    return gen
