"""Units built in threads of their own while the next are decoded
(livetrace/_tables/read.py's iter_tables with build_ahead, as tables()
reads them; units.py's feed_pending): a unit
made ready and built later is the unit built at once, though the span
builder's names table grew in between, and the rests of the units
(build.py's Built) made after every ordered part, in any order; a
malformed trace still gives the units before the problem, then its error."""

from __future__ import annotations

from pathlib import Path

import pytest

import livetrace
from livetrace import TraceFormatError
from livetrace._tables.build import Unit, UnitBuilder
from livetrace._tables.captures import Capture
from livetrace._tables.read import iter_tables
from livetrace._tables.units import CaptureUnits, PendingUnit

TRACE = Path(__file__).resolve().parent / "corpus" / "runtime" / "go126-generations.trace"


def _rows(unit: Unit) -> dict[str, object]:
    return {name: batch.to_pylist() for name, batch in unit.items()}


def _uncaptured(unit: Unit) -> dict[str, object]:
    """Its rows without their capture ids (which hash the source's head: a cut one's differs)."""
    return {
        name: [{k: v for k, v in row.items() if k not in ("capture", "session")} for row in batch.to_pylist()]
        for name, batch in unit.items()
    }


def _units(*, later: bool) -> list[Unit]:
    units = CaptureUnits(UnitBuilder(), Capture(1, "file", "t", "go1.26"))
    if not later:
        now = [units.feed(b) for b in livetrace.decode_batches(TRACE) if isinstance(b, livetrace.EventBatch)]
        return [u for u in now if u is not None] + [units.close()]
    fed = [units.feed_pending(b) for b in livetrace.decode_batches(TRACE) if isinstance(b, livetrace.EventBatch)]
    pending: list[PendingUnit] = [*(p for p in fed if p is not None), units.close_pending()]
    # The span builder's names table grows as later batches are fed (this
    # trace's later generations name nothing new: as if one did).
    units._spans.names.append(b"a name of a later unit")
    # Every one built after every batch was fed; each unit's ordered part
    # in order, then their rests in the reverse order (UnitBuilder.build).
    built = [p() for p in pending]
    return [b.whole() for b in reversed(built)][::-1]


def test_a_unit_built_later_is_the_unit_built_at_once() -> None:
    now, later = _units(later=False), _units(later=True)
    assert len(now) > 2
    assert [_rows(u) for u in later] == [_rows(u) for u in now]
    assert "a name of a later unit" not in later[-1]["spans"]["name"].dictionary.to_pylist()
    for a, b in zip(now, later, strict=True):  # the names' dictionaries too, not only the names
        assert a["spans"]["name"].dictionary.equals(b["spans"]["name"].dictionary)


@pytest.mark.parametrize("cut", [0.5, 0.8])
def test_a_cut_trace_gives_its_whole_units_then_its_error(cut: float) -> None:
    data = TRACE.read_bytes()
    whole = [_uncaptured(u) for u in livetrace.iter_tables(data)]
    got: list[dict[str, object]] = []
    units = iter_tables(data[: int(len(data) * cut)], build_ahead=True)
    with pytest.raises(TraceFormatError):
        got.extend(_uncaptured(u) for u in units)
    assert got and got == whole[: len(got)]
    assert all(not u["captures"] for u in got)  # (the capture's row comes with its last unit, never made)
