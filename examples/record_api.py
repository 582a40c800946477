"""Record a live service's trace from Python, reporting each generation as it arrives.

Run it with: python examples/record_api.py unix:/tmp/svc.sock out.trace 10
"""

import sys

import trio

import livetrace


async def main(address: str, path: str, seconds: float) -> int:
    async with livetrace.connect(address, duration=seconds) as session:
        info = session.info
        print(f"tracing pid {info.pid} ({info.go_version}), started {info.start_unix_ns}")
        rec = await livetrace.record(session, path)
    c = rec.counters
    print(f"{c.bytes} bytes in {c.chunks} chunks, {rec.generations} generations, complete={rec.complete}")
    for gap in rec.gaps:
        print(f"shed generations {gap.first_generation}-{gap.last_generation} ({gap.bytes} bytes)")
    return 0 if rec.complete else 1


if __name__ == "__main__":
    sys.exit(trio.run(main, sys.argv[1], sys.argv[2], float(sys.argv[3])))
