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
    lines = 0

    async def read_tail(stream: trio.abc.ReceiveStream) -> None:
        # Read as it comes, beside the recording: a tail whose pipe filled up
        # would wait on it, and fall behind the trace.
        nonlocal lines
        async with stream:
            while piece := await stream.receive_some():
                lines += piece.count(b"\n")

    async with trio.open_nursery() as nursery:
        tail = await nursery.start(partial(trio.run_process, tail_cmd, stdout=subprocess.PIPE, check=False))
        assert tail.stdout is not None
        nursery.start_soon(read_tail, tail.stdout)
        async with livetrace.connect(address, duration=seconds) as session:
            rec = await livetrace.record(session, path)
    print(f"recorded {', '.join(map(str, rec.paths))} complete={rec.complete}; the tail printed {lines} log lines")
    print(f"tail exited with {tail.returncode}")


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 3.0)
