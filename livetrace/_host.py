"""What this process may use of its host: the cores it may run on, how
its C library keeps the memory it is given back (a tuning for a program
that decodes batch after batch, where every page given back is faulted in
again), and where pyarrow's buffers come from."""

from __future__ import annotations

import ctypes
import functools
import os

__all__ = ["arrow_from_malloc", "keep_freed_memory", "one_blas_thread", "usable_cores", "usable_memory"]


def usable_cores() -> int:
    """The cores this process may run on (its affinity; the machine's where
    there is none to ask, as on macOS)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# Where a container's memory limit is read: cgroup v2's, then v1's ("max", or a v1 figure near 2**63,
# is no limit).
_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def usable_memory() -> int | None:
    """The bytes this process may use: the machine's, or its container's
    limit where that is less; None where neither can be read."""
    try:
        found: list[int] = [os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")]
    except (ValueError, OSError, AttributeError):
        found = []
    for path in _CGROUP_LIMITS:
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:
            found.append(int(text))
        break
    return min(found) if found else None


# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


@functools.cache
def keep_freed_memory() -> None:
    """Once per process, where the C library is glibc: keep freed memory for
    the next allocation rather than give it back to the system at once.

    Each thread allocates in an arena of its own, and glibc trims each
    heap, and unmaps each buffer past its mmap threshold, as soon as it is
    freed: every batch's columns and lines then fault their pages in again.
    `tail --format jsonl --jobs 2` spent 60% more CPU than with one job so,
    11% more with these settings, and one job's `tail --format text` 12%
    more than with them (docs/decoder.md): the CLI calls it for every
    command but the agent, a pool when it starts. What is kept is bounded
    by what the pipeline holds at once, but stays the process's: a
    program that watches its own RSS comes down after a peak only
    without it."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to tune
        return
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    mallopt(_M_TRIM_THRESHOLD, 1 << 30)
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)


# pyarrow reads it when its default pool is first asked for (apache/arrow's memory_pool.cc).
ARROW_POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"


def arrow_from_malloc() -> None:
    """Before pyarrow is imported: its buffers come from the C library's
    malloc ("system"), unless the user chose a pool in the environment.

    pyarrow's default on Linux, mimalloc, commits its arenas whole, and the
    kernel backs them with transparent huge pages, which cost more to fault
    in than the 4 KiB pages malloc's buffers fault in as they are written
    (docs/sql.md, "A sixth pass"). The tables' kernels take their columns
    from malloc's pool in any process (``_tables.kernels._alloc``); this is
    for the rest of what pyarrow allocates, where `livetrace sql` and
    `export --to parquet` then took 10% less. For this process alone (the
    CLI calls it; a program that uses the API chooses its own pool): its
    children inherit the variable, and only pyarrow reads it."""
    os.environ.setdefault(ARROW_POOL_VARIABLE, "system")


# OpenBLAS (numpy's, which pyarrow, pandas and DuckDB's results bring in) reads it when it loads.
BLAS_THREADS_VARIABLE = "OPENBLAS_NUM_THREADS"


def one_blas_thread() -> None:
    """Before numpy is imported: its OpenBLAS starts no threads of its own,
    unless the user chose a count in the environment.

    livetrace does no linear algebra, but OpenBLAS starts a thread for every
    core when numpy loads, and they spin a while: 0.08 to 0.1 s of CPU for
    each `livetrace sql` or `export` on two cores, and on a host of 64 cores
    an agent that holds 63 threads it never uses. For this process alone
    (the CLI calls it), as :func:`arrow_from_malloc`."""
    os.environ.setdefault(BLAS_THREADS_VARIABLE, "1")
