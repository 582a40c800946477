"""Watch the raw chunk stream of a live service: bytes per generation, live.

Run it with: python examples/chunk_rate.py unix:/tmp/svc.sock
"""

import sys

import trio

import livetrace


async def main(address: str) -> None:
    async with livetrace.connect(address) as session:
        gen, size = 0, 0
        async for frame in session.chunks():
            if isinstance(frame, livetrace.Gap):
                print(f"gap: generations {frame.first_generation}-{frame.last_generation} shed")
            elif isinstance(frame, livetrace.Chunk):
                if frame.generation != gen:
                    if gen:
                        print(f"generation {gen}: {size:,} bytes")
                    gen, size = frame.generation, 0
                size += len(frame.data)


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
