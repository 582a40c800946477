"""Record a service to disk while a second process tails the same service
(the helper serves both from one runtime trace).

Run it with: python examples/record_and_tail.py unix:/tmp/svc.sock trace.out [SECONDS]
"""

import subprocess
import sys
from functools import partial

import trio

import livetrace


async def main(address: str, path: str, seconds: float) -> None:
    tail_cmd = [sys.executable, "-m", "livetrace", "tail", address, "--duration", str(seconds), "-k", "Log"]
    async with trio.open_nursery() as nursery:
        tail = await nursery.start(partial(trio.run_process, tail_cmd, stdout=subprocess.PIPE, check=False))
        async with livetrace.connect(address, duration=seconds) as session:
            rec = await livetrace.record(session, path)
        out = b""
        while tail.stdout is not None and (piece := await tail.stdout.receive_some()):
            out += piece
    print(f"recorded {rec.paths} complete={rec.complete}; the tail printed {len(out.splitlines())} log lines")


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 3.0)
