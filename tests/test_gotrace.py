"""gotrace streams, the format of the pre-release Go 1.5 runtime: no runtime
that writes them survives and no Go tool reads them, so there is no oracle but
that runtime's source. The streams here are built by hand following its
trace.go (golang/go's src/runtime/trace.go at git blob 9804092da37f, cited
below as "seed L<line of that file>"), and the expected events are derived by hand from it
and written out literally."""

from __future__ import annotations

import contextlib
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetrace import TraceFormatError, TruncatedTraceError
from livetrace._cli.render.dump import legacy_lines
from livetrace._trace.legacy.read import LegacyDecoder
from livetrace._trace.legacy.trace import LegacyEvent, LegacyTrace
from livetrace._trace.version import GOTRACE

from .conftest import examples
from .mutate import mutate
from .textform import uvarint  # traceAppend's (seed L1349-1355)

# Event types, seed L828-864 (the traceEv constants).
BATCH, FREQUENCY, STACK, GOMAXPROCS, PROC_START, PROC_STOP, GC_START, GC_DONE = 1, 2, 3, 4, 5, 6, 7, 8
GC_SCAN_START, GC_SCAN_DONE, GC_SWEEP_START, GC_SWEEP_DONE, GO_CREATE, GO_START, GO_END = 9, 10, 11, 12, 13, 14, 15
GO_SCHED, GO_SLEEP, GO_BLOCK, GO_UNBLOCK, GO_BLOCK_RECV = 17, 19, 20, 21, 23
GO_SYSCALL, GO_SYS_EXIT, GO_SYS_BLOCK, GO_WAITING = 28, 29, 30, 31
HEAP_ALLOC, NEXT_GC, TIMER_GOROUTINE, FUTILE_WAKEUP = 33, 34, 35, 36
ARG_COUNT_SHIFT = 6  # traceArgCountShift, seed L882

HEADER = b"gotrace\x00"  # ReadTrace's first chunk, 8 bytes, seed L1109
# Ticks per second: a 1 GHz cputicks clock divided by traceTickDiv = 64 (seed
# L872), so one tick is exactly 64 ns and an event's time is (ticks - 1000) * 64.
FREQ = 15_625_000
# The fake Ps Go's old parser moves events to.
TIMER_P, SYSCALL_P, GC_P = 1000001, 1000003, 1000004


class Buffer:
    """One traceBuf, filled as traceEvent (seed L1218-1297) fills it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.data = bytearray()
        self.last = 0

    def ev(self, typ: int, ticks: int, *args: int, stk: int | None = None) -> Buffer:
        if not self.data:
            # The batch header goes in with the buffer's first event, whose
            # delta is then 0 (seed L1242-1249); its count says 1 but it has
            # two values, pid and ticks. pid is an int32 made uint64 (L1245).
            self.data += bytes([BATCH | 1 << ARG_COUNT_SHIFT]) + uvarint(self.pid % 2**64) + uvarint(ticks)
            self.last = ticks
        # The tick delta to the buffer's previous event, the arguments, then
        # the stack id (seed L1268-1286).
        values = [(ticks - self.last) % 2**64, *args, *([] if stk is None else [stk])]
        self.last = ticks
        # The count in the type byte is arguments plus stack, the delta not
        # counted, capped at 3 (seed L1251-1261); at 3 one byte for the
        # length of the values follows (L1262-1267, filled in at L1291-1294).
        narg = min(len(values) - 1, 3)
        body = b"".join(map(uvarint, values))
        self.data.append(typ | narg << ARG_COUNT_SHIFT)
        if narg == 3:
            self.data.append(len(body))
        self.data += body
        return self


def stack_dump(stacks: list[tuple[int, tuple[int, ...]]]) -> bytes:
    """traceStackTable.dump (seed L1438-1469): a fresh buffer with no batch
    header (traceFlush(nil)); each stack is type|3<<6, a varint length, then
    id, number of PCs, the PCs."""
    out = bytearray()
    for sid, pcs in stacks:
        body = uvarint(sid) + uvarint(len(pcs)) + b"".join(map(uvarint, pcs))
        out += bytes([STACK | 3 << ARG_COUNT_SHIFT]) + uvarint(len(body)) + body
    return bytes(out)


def footer(freq: int, timer_g: int) -> bytes:
    """ReadTrace's last chunk (seed L1126-1138): Frequency, then the timer
    goroutine if there is one; count 0, one value each, no time delta."""
    return bytes([FREQUENCY]) + uvarint(freq) + bytes([TIMER_GOROUTINE]) + uvarint(timer_g)


# The stack table, in the order the dump's hash-table walk might give.
STACKS = [
    (8, (0x4512A0, 0x401C00)),
    (3, (0x401500, 0x4A1B2C)),
    (14, (0x4313F0, 0x401480)),
    (1, (0x4301D0, 0x401234, 0x400F00)),
    (12, (0x42D000,)),
    (5, (0x405A10, 0x401300)),
    (10, (0x44F2C0,)),
    (7, (0x451290, 0x403040)),
    (2, (0x405000,)),
    (13, (0x405B00, 0x403080)),
    (4, (0x4059E0, 0x401280)),
    (11, (0x42F1A8, 0x42E000)),
    (6, (0x40C3F0, 0x402100)),
    (9, (0x410A00, 0x402140)),
]


def scenario() -> tuple[bytes, int]:
    """g1 starts the trace while g2 waits and g4 (the timer goroutine) is
    runnable; g1 creates g3, wakes g2 and waits for g3; g2 runs a GC and
    sleeps until g4 wakes it; g3 makes a syscall that loses its P (P1), comes
    back with no P, then wakes g1 and ends; g1 stops the trace. Returns the
    stream and where the TimerGoroutine record starts."""
    # StartTrace (seed L929-979), on P0: a GoCreate per live goroutine with
    # StartTrace's stack, GoWaiting for a waiting one, ProcStart, GoStart of
    # the caller. Buffers reach the reader as they fill: these two first.
    p0a = (
        Buffer(0)
        .ev(GO_CREATE, 1000, 1, 0x401000, stk=1)
        .ev(GO_CREATE, 1001, 2, 0x402000, stk=1)
        .ev(GO_WAITING, 1002, 2)
        .ev(GO_CREATE, 1003, 4, 0x404000, stk=1)
        .ev(PROC_START, 1004)
        .ev(GO_START, 1005, 1)
        .ev(GOMAXPROCS, 1010, 2, stk=2)
        .ev(GO_CREATE, 1020, 3, 0x403000, stk=3)
        .ev(GO_UNBLOCK, 1030, 2, stk=4)
        .ev(GO_BLOCK_RECV, 1040, stk=5)
        .ev(GO_START, 1045, 2)
    )
    # The syscall blocks and sysmon takes P1 away: traceGoSysBlock and
    # traceProcStop write into P1's buffer (seed L714-723, L789-798).
    p1a = (
        Buffer(1)
        .ev(PROC_START, 1025)
        .ev(GO_START, 1026, 3)
        .ev(GO_SYSCALL, 1035, stk=7)
        .ev(GO_SYS_BLOCK, 1047, stk=8)
        .ev(PROC_STOP, 1048)
    )
    # P0's next buffer goes on with g2, still running. GC scan start/done are
    # types 9/10. StopTrace ends it with g1's GoSched (seed L1001).
    p0b = (
        Buffer(0)
        .ev(HEAP_ALLOC, 1050, 4 << 20)
        .ev(GC_START, 1052, stk=6)
        .ev(GC_SCAN_START, 1053)
        .ev(GC_SCAN_DONE, 1054)
        .ev(GC_DONE, 1055)
        .ev(NEXT_GC, 1056, 8 << 20)
        .ev(GC_SWEEP_START, 1057, stk=9)
        .ev(GC_SWEEP_DONE, 1058)
        .ev(GO_SLEEP, 1060, stk=10)
        .ev(GO_START, 1062, 4)
        .ev(GO_UNBLOCK, 1064, 2, stk=11)
        .ev(GO_BLOCK, 1066, stk=12)
        .ev(GO_START, 1068, 2)
        .ev(GO_END, 1070)
        .ev(GO_START, 1086, 1)
        .ev(GO_SCHED, 1095, stk=14)
    )
    p1b = (
        Buffer(1)
        .ev(PROC_START, 1074)
        .ev(GO_START, 1075, 3)
        .ev(GO_UNBLOCK, 1080, 1, stk=13)
        .ev(GO_END, 1085)
        .ev(PROC_STOP, 1086)
    )
    # g3 leaves its syscall holding no P: its GoSysExit goes to the global
    # buffer, pid traceGlobProc = -1 (seed L878, L1300-1307).
    glob = Buffer(-1).ev(GO_SYS_EXIT, 1072, 3)
    # StopTrace queues every P's buffer in P order, then the global one (seed
    # L1003-1017), then dumps the stacks (L1025); the footer comes last.
    body = HEADER + p0a.data + p1a.data + p0b.data + p1b.data + glob.data + stack_dump(STACKS)
    return body + footer(FREQ, 4), len(body) + 1 + len(uvarint(FREQ))


DATA, TIMER_RECORD_AT = scenario()

# (name, ns, p, g, args, stack id) in the decoder's order: the Ps' streams
# merged by ticks. ns = (ticks - 1000) * 64. Names are Go 1.21's (9/10 print
# as STWStart/STWDone). p and g are the batch's pid and the goroutine last
# started on it, but: GoWaiting and GoSysExit are about their argument's
# goroutine; GCStart moves to the GC P, GoSysExit to the syscall P, and g4's
# GoUnblock to the timer P (g4 is the footer's timer goroutine). Missing
# arguments are 0: GoCreate's second is the start PC; no seq anywhere.
EXPECTED = [
    ("GoCreate", 0, 0, 0, [1, 0x401000, 0], 1),
    ("GoCreate", 64, 0, 0, [2, 0x402000, 0], 1),
    ("GoWaiting", 128, 0, 2, [2, 0, 0], 0),
    ("GoCreate", 192, 0, 0, [4, 0x404000, 0], 1),
    ("ProcStart", 256, 0, 0, [0, 0, 0], 0),
    ("GoStart", 320, 0, 1, [1, 0, 0], 0),
    ("Gomaxprocs", 640, 0, 1, [2, 0, 0], 2),
    ("GoCreate", 1280, 0, 1, [3, 0x403000, 0], 3),
    ("ProcStart", 1600, 1, 0, [0, 0, 0], 0),  # 1025: P1's first event falls between P0's
    ("GoStart", 1664, 1, 3, [3, 0, 0], 0),
    ("GoUnblock", 1920, 0, 1, [2, 0, 0], 4),
    ("GoSysCall", 2240, 1, 3, [0, 0, 0], 7),
    ("GoBlockRecv", 2560, 0, 1, [0, 0, 0], 5),
    ("GoStart", 2880, 0, 2, [2, 0, 0], 0),
    ("GoSysBlock", 3008, 1, 3, [0, 0, 0], 8),  # gotrace's GoSysBlock has a stack
    ("ProcStop", 3072, 1, 0, [0, 0, 0], 0),
    ("HeapAlloc", 3200, 0, 2, [4194304, 0, 0], 0),  # g2 still runs in P0's next buffer
    ("GCStart", 3328, GC_P, 2, [0, 0, 0], 6),
    ("STWStart", 3392, 0, 2, [0, 0, 0], 0),
    ("STWDone", 3456, 0, 2, [0, 0, 0], 0),
    ("GCDone", 3520, 0, 2, [0, 0, 0], 0),
    ("HeapGoal", 3584, 0, 2, [8388608, 0, 0], 0),
    ("GCSweepStart", 3648, 0, 2, [0, 0, 0], 9),
    ("GCSweepDone", 3712, 0, 2, [0, 0, 0], 0),
    ("GoSleep", 3840, 0, 2, [0, 0, 0], 10),
    ("GoStart", 3968, 0, 4, [4, 0, 0], 0),
    ("GoUnblock", 4096, TIMER_P, 4, [2, 0, 0], 11),
    ("GoBlock", 4224, 0, 4, [0, 0, 0], 12),
    ("GoStart", 4352, 0, 2, [2, 0, 0], 0),
    ("GoEnd", 4480, 0, 2, [0, 0, 0], 0),
    ("GoSysExit", 4608, SYSCALL_P, 3, [3, 0, 0], 0),  # from the global buffer, which came last
    ("ProcStart", 4736, 1, 0, [0, 0, 0], 0),
    ("GoStart", 4800, 1, 3, [3, 0, 0], 0),
    ("GoUnblock", 5120, 1, 3, [1, 0, 0], 13),
    ("GoEnd", 5440, 1, 3, [0, 0, 0], 0),
    ("GoStart", 5504, 0, 1, [1, 0, 0], 0),  # 1086 on both Ps: P0 came first in the stream
    ("ProcStop", 5504, 1, 0, [0, 0, 0], 0),
    ("GoSched", 6080, 0, 1, [0, 0, 0], 14),
]


def decode(data: bytes, step: int | None = None) -> LegacyTrace:
    d = LegacyDecoder()
    step = step or len(data) or 1
    for i in range(0, len(data), step):
        d.feed(data[i : i + step])
    return d.close()


def rows(events: list[LegacyEvent]) -> list[tuple[object, ...]]:
    return [(e.name, e.ts, e.p, e.g, list(e.args), e.stk) for e in events]


def everything(trace: LegacyTrace) -> tuple[object, ...]:
    return (
        [(e.off, e.typ, e.seq, e.ts, e.p, e.g, e.stk, list(e.args), list(e.sargs)) for e in trace.events],
        trace.stacks,
        trace.strings,
        trace.ticks_per_sec,
        trace.timer_goroutines,
        trace.version,
    )


def test_encoder_writes_what_the_seed_writes() -> None:
    """The encoder above against bytes worked out by hand from the seed."""
    assert Buffer(0).ev(GO_CREATE, 1000, 1, 0x401000, stk=1).ev(GO_WAITING, 1002, 2).data == bytes(
        [
            0x41,
            0x00,
            0xE8,
            0x07,  # Batch|1<<6, pid 0, ticks 1000 = 0x68|0x80, 7
            0xCD,
            0x07,  # GoCreate (13) | 3<<6, then the values' length: 7 bytes
            0x00,
            0x01,
            0x80,
            0xA0,
            0x80,
            0x02,
            0x01,  # delta 0, g 1, PC 0x401000 in 4 bytes, stack 1
            0x5F,
            0x02,
            0x02,  # GoWaiting (31) | 1<<6, delta 2, g 2
        ]
    )
    assert Buffer(-1).ev(GO_SYS_EXIT, 5, 3).data == bytes([0x41, *[0xFF] * 9, 0x01, 0x05, 0x5D, 0x00, 0x03])
    assert stack_dump([(2, (0x405000,))]) == bytes([0xC3, 0x06, 0x02, 0x01, 0x80, 0xA0, 0x81, 0x02])
    assert footer(FREQ, 4) == bytes([0x02, 0xA8, 0xD6, 0xB9, 0x07, 0x23, 0x04])  # 15625000 = 0xEE6B28


def test_gotrace_stream_decodes_as_derived_from_the_seed() -> None:
    trace = decode(DATA)
    assert trace.version == GOTRACE
    assert rows(trace.events) == EXPECTED
    stw = trace.events[18]
    assert stw.name == "STWStart" and stw.sargs == [b"mark termination"]  # what Go 1.21 says for 1.5's kindless one
    assert trace.stacks == dict(STACKS)  # PCs only
    assert trace.frames == {} and trace.strings == {}
    assert trace.ticks_per_sec == FREQ
    assert trace.timer_goroutines == {4}


def test_feed_gives_each_ps_events_in_stream_order_in_ticks() -> None:
    events = LegacyDecoder().feed(DATA)
    assert [(e.p, e.ts) for e in events] == [
        *[(0, t) for t in (1000, 1001, 1002, 1003, 1004, 1005, 1010, 1020, 1030, 1040, 1045)],
        *[(1, t) for t in (1025, 1026, 1035, 1047, 1048)],
        *[
            (0, t)
            for t in (1050, 1052, 1053, 1054, 1055, 1056, 1057, 1058, 1060, 1062, 1064, 1066, 1068, 1070, 1086, 1095)
        ],
        *[(1, t) for t in (1074, 1075, 1080, 1085, 1086)],
        (-1, 1072),
    ]


def test_any_chunking_gives_the_same_trace() -> None:
    whole = everything(decode(DATA))
    assert everything(decode(DATA, step=1)) == whole
    rng = random.Random(5)
    for _ in range(20):
        d = LegacyDecoder()
        cuts = sorted(rng.sample(range(1, len(DATA)), rng.randint(1, 12)))
        for a, b in zip([0, *cuts], [*cuts, len(DATA)], strict=True):
            d.feed(DATA[a:b])
        assert everything(d.close()) == whole


def test_every_truncation_is_a_typed_error() -> None:
    for cut in range(len(DATA)):
        if cut == TIMER_RECORD_AT:
            # A whole footer but for the optional timer goroutine: g4's
            # wakeup then stays on P0, which runs g4, so this one decodes.
            assert decode(DATA[:cut]).events[26].p == 0
            continue
        with pytest.raises(TraceFormatError):
            decode(DATA[:cut])
    with pytest.raises(TruncatedTraceError, match="inside its 8-byte header"):
        decode(DATA[:5])
    with pytest.raises(TruncatedTraceError, match="middle of an event"):
        decode(DATA[:14])  # inside the first GoCreate
    with pytest.raises(TraceFormatError, match=r"^trace is empty$"):
        decode(HEADER)
    with pytest.raises(TruncatedTraceError, match=r"^trace ends early: its footer .* is missing"):
        decode(DATA[: TIMER_RECORD_AT - 5])  # everything before the footer


def test_what_gotrace_did_not_have_is_an_error() -> None:
    start = HEADER + Buffer(0).ev(GO_CREATE, 1, 1, 0x401000, stk=1).ev(PROC_START, 2).ev(GO_START, 3, 1).data
    end = stack_dump(STACKS[3:4]) + footer(FREQ, 4)
    assert len(decode(start + end).events) == 3
    # FutileWakeup (36) came with Go 1.5: traceEvCount is 36 here (seed L864).
    with pytest.raises(TraceFormatError, match="unknown event type 36 at offset 0x"):
        decode(start + bytes([FUTILE_WAKEUP, 0x01]) + end)
    # Go 1.5's GoSysExit: g, seq, ts; gotrace's has only g.
    with pytest.raises(TraceFormatError, match="GoSysExit has wrong number of arguments"):
        decode(start + bytes([GO_SYS_EXIT | 3 << 6, 0x04, 0x01, 0x03, 0x07, 0x00]) + end)
    with pytest.raises(TraceFormatError, match="not a Go execution trace"):
        decode(b"gotrace!" + start[8:] + end)


def test_a_ps_clock_running_backwards_is_out_of_order() -> None:
    """Without sequence numbers the ticks are all there is: a P's next
    buffer starting before its previous one ended cannot be ordered."""
    first = Buffer(0).ev(GO_CREATE, 100, 1, 0x401000, stk=1).ev(PROC_START, 101).ev(GO_START, 110, 1)
    second = Buffer(0).ev(GO_SCHED, 105, stk=1)
    with pytest.raises(TraceFormatError, match=r"^time stamps out of order$"):
        decode(HEADER + first.data + second.data + footer(FREQ, 4))


@settings(max_examples=examples(300))
@given(st.data())
def test_fuzz_mutated_gotrace_streams_decode_or_fail_cleanly(data: st.DataObject) -> None:
    buf = mutate(data, DATA, keep=len(HEADER))
    with contextlib.suppress(TraceFormatError):
        decode(buf, step=data.draw(st.integers(1, len(buf) + 1)))


def test_cli_dumps_a_gotrace_file(tmp_path: Path) -> None:
    path = tmp_path / "old.gotrace"
    path.write_bytes(DATA)
    out = subprocess.run(
        [sys.executable, "-m", "livetrace", "decode", str(path), "--dump", "legacy"], capture_output=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines == list(legacy_lines(decode(DATA).events))
    # Offsets: the 8-byte header, then P0's 4-byte batch header; the GoCreates
    # are 9 bytes, GoWaiting 3, ProcStart 2. GC and STW events print g=0.
    assert lines[:6] == [
        b"0 GoCreate p=0 g=0 off=12 g=1 stack=4198400",
        b"64 GoCreate p=0 g=0 off=21 g=2 stack=4202496",
        b"128 GoWaiting p=0 g=2 off=30 g=2",
        b"192 GoCreate p=0 g=0 off=33 g=4 stack=4210688",
        b"256 ProcStart p=0 g=0 off=42 thread=0",
        b"320 GoStart p=0 g=1 off=44 g=1 seq=0",
    ]
    assert lines[17].startswith(b"3328 GCStart p=1000004 g=0 off=") and lines[17].endswith(b" seq=0")
    assert lines[18].endswith(b" kindid=0 kind=mark termination") and b" g=0 " in lines[18]
    assert lines[30].startswith(b"4608 GoSysExit p=1000003 g=3 off=") and lines[30].endswith(b" g=3 seq=0 ts=0")
