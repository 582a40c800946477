"""Which implementation of the decoder's hot loops runs: the compiled core
(``_ccore``, built from C at install) or its pure-Python twin.

The twin is the reference and always works; the compiled core is used
whenever it was built, unless ``LIVETRACE_PURE_PYTHON=1``. If it was not
built, livetrace warns once and carries on with the twin.
"""

from __future__ import annotations

import os
import warnings

try:
    # Callers reach the module through this name, typed by _ccore.pyi.
    from . import _ccore as ccore
except ImportError as e:  # no compiler at install time, or a broken build
    ccore = None  # type: ignore[assignment]  # the stub types the name as the module; None is its absence
    _why = str(e)
else:
    _why = ""

__all__ = ["ccore", "implementation", "use_compiled"]

_warned = False
_tables_ready = False  # the format tables went over to the compiled core


def use_compiled(require: bool | None = None) -> bool:
    """Whether to run on the compiled core (:data:`ccore`) rather than the
    pure-Python twin.

    require=True insists on the compiled core, False on the twin, None
    takes the compiled core when there is one (and the environment does
    not ask for the twin).
    """
    global _warned
    if require is False or (require is None and os.environ.get("LIVETRACE_PURE_PYTHON") == "1"):
        return False
    if ccore is None:
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
        return False
    if not _tables_ready:
        _hand_over_tables()
    return True


def _hand_over_tables() -> None:
    """Every part of the core (the ordering engine, the JSON writer, spans,
    filters) reads the format tables: they go over before any is used,
    whichever a process happens to use first. Made from the specs alone:
    a layer that never orders events (``decode --dump wire``) loads no
    decoder for them."""
    global _tables_ready
    _tables_ready = True
    from livetrace._trace.model.events import EVENT_NARGS, STACK_ARG, STRING_ARGS
    from livetrace._trace.spec.modern import timed_specs

    def table(values: list[int], none: int = 255) -> bytes:
        return bytes(none if v < 0 else v for v in values)

    timed = [0] * 256  # the argument counts of the codes a thread's batch may hold
    for spec in timed_specs():
        timed[spec.code] = len(spec.args)
    str0 = [-1] * 256
    str1 = [-1] * 256
    for code, idx in STRING_ARGS.items():
        str0[code] = idx[0]
        if len(idx) > 1:
            str1[code] = idx[1]
    ccore.init_tables(bytes(timed), bytes(EVENT_NARGS), table(STACK_ARG), table(str0), table(str1))


def implementation() -> str:
    """'compiled' or 'python': what a decoder made now would run on."""
    return "compiled" if use_compiled() else "python"
