"""How many threads ``export --to parquet`` writes a unit's tables in: the
cores this process may use, not the machine's, so that an export given
one core (taskset, a container's cpuset) writes in one thread."""

from __future__ import annotations

import os

import pytest

from livetrace._cli.export_parquet import MAX_WRITERS, writers

pytestmark = [pytest.mark.once, pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no affinity here")]


def test_one_thread_on_one_core() -> None:
    allowed = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(allowed)})  # (this thread's: pid 0)
        assert writers() == 1
    finally:
        os.sched_setaffinity(0, allowed)
    assert writers() == min(MAX_WRITERS, len(allowed))
