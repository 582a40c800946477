"""What Go's tools print for a trace, kept by what it depends on: the
toolchain, the command and the trace's bytes. Each pass of the suite (the
compiled core's, the twin's) compares its output with Go's on the same
corpus traces; Go's was made again for each, and for each run. Traces over
CACHED_INPUT_BYTES (the demo recordings, fresh in every pass) are not kept:
their dumps run to tens of MB.

The cache is .cache/go-output/; removing it is always safe. An output that
names the trace's path (which changes from run to run) is not kept.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
CACHE = Path(__file__).resolve().parents[1] / ".cache" / "go-output"
CACHED_INPUT_BYTES = 1 << 20


def go_output(go: Path, args: list[str], trace: Path, make: Callable[[], T]) -> T:
    """make(), which runs ``go`` with ``args`` on ``trace``: from the cache
    where it ran before on the same bytes with the same toolchain."""
    data = trace.read_bytes()
    if len(data) > CACHED_INPUT_BYTES:
        return make()
    st = os.stat(go)
    key = hashlib.sha256(
        "\0".join([str(go.resolve()), str(st.st_size), str(st.st_mtime_ns), *args]).encode() + b"\0" + data
    ).hexdigest()
    kept = CACHE / key
    try:
        return pickle.loads(kept.read_bytes())  # type: ignore[no-any-return]
    except FileNotFoundError:
        pass
    out = make()
    if _mentions(out, str(trace)):
        return out  # the path changes from run to run: the output is not the same
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = kept.with_name(f"{key}.{os.getpid()}.tmp")  # xdist's workers may make the same at once
    tmp.write_bytes(pickle.dumps(out))
    os.replace(tmp, kept)
    return out


def _mentions(out: object, path: str) -> bool:
    if isinstance(out, tuple):
        return any(_mentions(o, path) for o in out)
    if isinstance(out, bytes):
        return path.encode() in out
    return isinstance(out, str) and path in out
