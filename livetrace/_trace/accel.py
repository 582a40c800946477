"""Which implementation of the decoder's hot loops runs: the compiled core
(``_ccore``, built from C at install) or its pure-Python twin.

The twin is the reference and always works; the compiled core is used
whenever it was built, unless ``LIVETRACE_PURE_PYTHON=1``. If it was not
built, livetrace warns once and carries on with the twin.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

    from ._ccore import Engine, LegacyEvents, SpanCore, WireError, WireRecords

try:
    from . import _ccore as _compiled
except ImportError as e:  # no compiler at install time, or a broken build
    _compiled = None  # type: ignore[assignment]  # mypy types the name as the module; None is its absence
    _why = str(e)
else:
    _why = ""

_warned = False
_tables_ready = False  # the format tables went over to the compiled core


class CompiledCore(Protocol):
    """The compiled core as the decoders use it: the module ``_ccore``
    (``_ccore.pyi`` types it; the type checker holds the module to this)."""

    @property
    def Engine(self) -> type[Engine]: ...
    @property
    def WireError(self) -> type[WireError]: ...
    @property
    def SpanCore(self) -> type[SpanCore]: ...
    @property
    def ERR_ORDER(self) -> int: ...
    @property
    def ERR_MEMORY(self) -> int: ...
    @property
    def WIRE_INVALID_TYPE(self) -> int: ...
    @property
    def WIRE_SHORT(self) -> int: ...
    @property
    def NARGS(self) -> int: ...
    @property
    def NEXTRA(self) -> int: ...

    def init_tables(
        self,
        timed: ReadableBuffer,
        nargs: ReadableBuffer,
        stack: ReadableBuffer,
        str0: ReadableBuffer,
        str1: ReadableBuffer,
        /,
    ) -> None: ...
    def wire_records(self, payload: ReadableBuffer, table: ReadableBuffer, /) -> WireRecords: ...
    def legacy_exact(
        self,
        data: ReadableBuffer,
        ver: int,
        counts: ReadableBuffer,
        stack_flags: ReadableBuffer,
        mask: ReadableBuffer,
        builtin: ReadableBuffer,
        msg_base: int,
        offset: int,
        syncs: int,
        /,
    ) -> LegacyEvents | None: ...
    def jsonl(
        self,
        codes: ReadableBuffer,
        times: ReadableBuffer,
        threads: ReadableBuffer,
        procs: ReadableBuffer,
        goroutines: ReadableBuffer,
        args: ReadableBuffer,
        extra: ReadableBuffer,
        wall_base: int | None,
        strings: dict[int, bytes],
        stacks: dict[int, bytes],
        miss: Callable[[str, int], bytes],
        other: Callable[[int], str],
        /,
    ) -> bytes: ...
    def select_indices(
        self,
        codes: ReadableBuffer,
        procs: ReadableBuffer,
        goroutines: ReadableBuffer,
        args: ReadableBuffer,
        kinds: ReadableBuffer | None,
        roles: ReadableBuffer,
        stack_arg: ReadableBuffer,
        goroutine_ids: ReadableBuffer | None,
        proc_ids: ReadableBuffer | None,
        region_ids: ReadableBuffer | None,
        log_ids: ReadableBuffer | None,
        stack_ids: ReadableBuffer | None,
        candidates: ReadableBuffer | None,
        /,
    ) -> bytes: ...
    def take_columns(
        self,
        indices: ReadableBuffer,
        codes: ReadableBuffer,
        times: ReadableBuffer,
        threads: ReadableBuffer,
        procs: ReadableBuffer,
        goroutines: ReadableBuffer,
        args: ReadableBuffer,
        extra: ReadableBuffer,
        /,
    ) -> tuple[bytes, bytes, bytes, bytes, bytes, bytes, bytes]: ...
    def handlers(self) -> dict[int, str]: ...
    def span_select(
        self,
        columns: list[memoryview],
        kind_mask: ReadableBuffer | None,
        goroutines: ReadableBuffer | None,
        procs: ReadableBuffer | None,
        task_mask: ReadableBuffer | None,
        region_mask: ReadableBuffer | None,
        min_duration: int,
        stack_pairs: ReadableBuffer | None,
        /,
    ) -> bytes: ...
    def span_take(self, columns: list[memoryview], rows: ReadableBuffer, /) -> list[bytes]: ...


def compiled_core(require: bool | None = None) -> CompiledCore | None:
    """The compiled core, or None for the pure-Python twin.

    require=True insists on the compiled core, False on the twin, None
    takes the compiled core when there is one (and the environment does
    not ask for the twin).
    """
    global _warned
    if require is False or (require is None and os.environ.get("LIVETRACE_PURE_PYTHON") == "1"):
        return None
    if _compiled is None:
        if require:
            raise RuntimeError(f"livetrace's compiled core is not available: {_why}")
        if not _warned:
            _warned = True
            warnings.warn(
                "livetrace: the compiled decoder core was not built, so decoding runs on the pure-Python twin "
                f"(correct, but about 30 times slower); reinstall livetrace where a C compiler and the Python "
                f"headers are present to build it ({_why})",
                RuntimeWarning,
                stacklevel=3,
            )
        return None
    if not _tables_ready:
        _hand_over_tables(_compiled)
    return _compiled


def _hand_over_tables(core: CompiledCore) -> None:
    """Every part of the core (the ordering engine, the JSON writer, spans,
    filters) reads the format tables: they go over before any is used,
    whichever a process happens to use first."""
    global _tables_ready
    _tables_ready = True
    from livetrace._trace.modern.decoder import init_core_tables  # imports this module

    init_core_tables(core)


def implementation() -> str:
    """'compiled' or 'python': what a decoder made now would run on."""
    return "python" if compiled_core() is None else "compiled"
