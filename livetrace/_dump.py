"""Text dumps of a trace, line for line what Go's ``go tool trace -d=...`` prints."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ._gostr import go_quote
from ._modern_spec import SPECS, EventSpec
from ._modern_wire import Batch, EndOfGeneration, Frame, decode_records

_FRAME_FIELDS = ("pc", "func", "file", "line")


def _arg_format(spec: EventSpec) -> str:
    return spec.name + "".join(f" {a}=%d" for a in spec.args)


_FORMATS = {s.code: _arg_format(s) for s in SPECS if s is not None}


def wire_lines(frames: Iterable[Frame], minor: int) -> Iterator[str]:
    """``go tool trace -d=wire``: one line per record (Stack frames and
    string data on tab-indented continuation lines)."""
    batch_fmt, exp_fmt = _FORMATS[1], _FORMATS[49]
    for f in frames:
        if isinstance(f, EndOfGeneration):
            yield "EndOfGeneration"
            continue
        if f.exp >= 0:
            line = exp_fmt % (f.exp, f.gen, f.m, f.time)
            yield line + "\n\tdata=" + go_quote(f.payload) if f.payload else line
            continue
        yield batch_fmt % (f.gen, f.m, f.time, len(f.payload))
        yield from _record_lines(f, minor)


def _record_lines(batch: Batch, minor: int) -> Iterator[str]:
    formats = _FORMATS
    for rec in decode_records(batch.payload, minor, batch.payload_offset, batch.gen):
        spec = rec.spec
        n = len(spec.args)
        line = formats[spec.code] % rec.args[:n] if n else spec.name
        if spec.is_stack:
            frames = rec.args[n:]
            line += "".join(
                f"\n\tpc={frames[k]} func={frames[k + 1]} file={frames[k + 2]} line={frames[k + 3]}"
                for k in range(0, len(frames), 4))
        if rec.data is not None:
            line += "\n\tdata=" + go_quote(rec.data)
        yield line
