"""Generations ordered apart, then carried (livetrace/_trace/modern/carry.py),
against the sequential decoder, on the pure-Python twin or (--compiled) the
compiled engine: CPU seconds of the sequential ordering, of each
generation's fresh ordering (the part a pool runs side by side, its notes
read included), and of the in-order carry step, with how many generations
were ordered again.

    .venv/bin/python bench/carry.py [--compiled] TRACE [TRACE ...]

A trace's generations are assembled first (not timed); every phase runs
on one thread, so its CPU time is its own.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from livetrace._trace.accel import use_compiled
from livetrace._trace.model.batch import kind_mask
from livetrace._trace.modern.carry import Carried, Carrier, fresh_generation
from livetrace._trace.modern.carry_compiled import compiled_fresh_generation
from livetrace._trace.modern.decoder import _CompiledEngine


def generations(data: bytes) -> list[Any]:
    """The trace's generations, cut as the tests cut them (tests/wirechunks.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.wirechunks import generations as cut

    return cut(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+", type=Path)
    ap.add_argument("--compiled", action="store_true", help="the compiled engine (default: the twin)")
    args = ap.parse_args()
    mask = kind_mask(None)
    compiled = use_compiled(True) if args.compiled else False
    fresh = compiled_fresh_generation if compiled else fresh_generation
    for path in args.traces:
        data = path.read_bytes()
        gens = generations(data)
        t0 = time.process_time()
        eng = _CompiledEngine(mask) if compiled else Carried().engine(mask)
        events = sum(len(b) for g in gens for b in eng.generation(g))
        seq = time.process_time() - t0
        gens = generations(data)
        fresh_s = carry_s = 0.0
        carrier = Carrier(mask, compiled=compiled)
        carried_events = longest = 0
        for g in gens:
            t0 = time.process_time()
            f = fresh(g, mask)
            t1 = time.process_time()
            carried_events += sum(len(b) for b in carrier.take(f))
            t2 = time.process_time()
            fresh_s += t1 - t0
            carry_s += t2 - t1
            longest = max(longest, round((t1 - t0) * 1000))
        assert carried_events == events, (carried_events, events)
        print(
            f"{path.name}: {len(gens)} generations, {events:,} events; sequential {seq:.2f} s of CPU "
            f"({events / seq / 1e6:.3f}M events/CPU-s); fresh {fresh_s:.2f} s "
            f"({events / fresh_s / 1e6:.3f}M/CPU-s, longest generation {longest} ms); "
            f"carry {carry_s * 1000:.1f} ms ({carry_s / fresh_s:.2%} of fresh); "
            f"{carrier.reordered} of {carrier.generations} ordered again"
        )


if __name__ == "__main__":
    main()
