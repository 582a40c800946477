"""How long a pool thread takes to order a generation fresh (`compiled_fresh_generation`, what
`decode_batches(jobs=N)`'s workers run) while the main thread is idle, and while it runs Python
as the decoder's thread does when it parses frames: the pool thread's wall and CPU time, best of
--runs by wall time, summed over generations 2 to 4 of each trace.

    .venv/bin/python bench/pool_gil_wait.py --runs 5 TRACE [TRACE ...]

A pool thread that needs the GIL back while the main thread holds it waits up to the
interpreter's switch interval (5 ms) for it: the wall time above the CPU time with the main
thread busy is mostly that wait, the rest the machine's other load.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

from livetrace._trace.accel import use_compiled
from livetrace._trace.model.batch import kind_mask
from livetrace._trace.modern.carry_compiled import compiled_fresh_generation
from livetrace._trace.modern.generation import Generation

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' trace cutter
from tests.wirechunks import generations


def ordered_in_a_thread(gen: Generation, mask: bytes, busy: bool) -> tuple[float, float]:
    """(wall, CPU) seconds of the pool thread, the main thread spinning in Python if busy."""
    took: list[float] = []

    def work() -> None:
        c0, w0 = time.thread_time(), time.perf_counter()
        compiled_fresh_generation(gen, mask)
        took[:] = [time.perf_counter() - w0, time.thread_time() - c0]

    t = threading.Thread(target=work)
    t.start()
    while busy and t.is_alive():
        pass
    t.join()
    return took[0], took[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    if not use_compiled(None):
        raise SystemExit("the compiled core is not built: the twin's pool threads hold the GIL anyway")
    mask = kind_mask(None)
    for path in args.traces:
        gens = generations(path.read_bytes(), compiled=True)[1:4]
        events = 0
        print(f"{path.name}: generations {', '.join(str(g.gen) for g in gens)}")
        for busy in (False, True):
            best: list[tuple[float, float]] = []
            for _ in range(args.runs):
                for k, g in enumerate(gens):
                    r = ordered_in_a_thread(g, mask, busy)
                    if k == len(best):
                        best.append(r)
                    elif r < best[k]:
                        best[k] = r
            wall, cpu = sum(b[0] for b in best), sum(b[1] for b in best)
            events = events or sum(len(b) for g in gens for b in compiled_fresh_generation(g, mask).batches())
            print(
                f"  main thread {'busy' if busy else 'idle'}: {wall * 1000:5.0f} ms wall, {cpu * 1000:5.0f} ms CPU "
                f"for {events:,} events (best of {args.runs})"
            )


if __name__ == "__main__":
    main()
