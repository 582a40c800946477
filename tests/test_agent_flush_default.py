"""The agent flushes its rows every 5 s unless told otherwise: each flush
writes a spool entry and a lake file per table and service (some 3 ms of
CPU each, whatever their rows): every second, 0.65% of a core for one
continuous or flight process (bench/agent.py measures the whole)."""

from __future__ import annotations

from pathlib import Path

from livetrace._agent.config import parse_config


def test_the_rows_are_flushed_every_5_s_by_default(tmp_path: Path) -> None:
    config = parse_config(f'[agent]\nstate_dir = "{tmp_path}"\n[[target]]\nexecutable = "api"\n')
    assert config.flush_interval == 5.0
    told = parse_config(f'[agent]\nstate_dir = "{tmp_path}"\nflush_interval = "1s"\n[[target]]\nexecutable = "api"\n')
    assert told.flush_interval == 1.0
