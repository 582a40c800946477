"""``livetrace export --to parquet`` names its files after what a peer chose
(the executable's name) through the one sanitizer, and two exports of one
running trace (whose start they share) into one dataset keep each other's
files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import cli, demo
from .test_sql_live import finish

pytestmark = [pytest.mark.slow, pytest.mark.once]


def written(err: str) -> int:
    match = re.search(r"wrote \S+: (\d+) files?, ", err)
    assert match, err
    return int(match.group(1))


async def test_two_exports_of_one_process_keep_each_others_files(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    async with demo("1.26", args=["-workers", "1"]) as d:
        first = cli("export", d.trace_address, "--duration", "3", "--to", "parquet", "-o", str(out))
        second = cli("export", d.trace_address, "--duration", "3", "--to", "parquet", "-o", str(out))
        _, err1 = await finish(first)
        _, err2 = await finish(second)
    files = [p for p in out.rglob("*.parquet") if p.is_file()]
    assert len(files) == written(err1) + written(err2), sorted(p.name for p in files)
    sessions = {re.search(r"-s(\d+)-\d{6}\.parquet$", p.name).group(1) for p in files}  # type: ignore[union-attr]
    assert len(sessions) == 2
