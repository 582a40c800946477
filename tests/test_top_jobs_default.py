"""`top` runs with one job unless told otherwise: more build whole generations' spans in the pool,
which on 16 cores made it no faster and held 3.4 GiB against 0.4 (docs/decoder.md, "On 16 cores");
the other views keep the cores-less-one default."""

from __future__ import annotations

from livetrace._cli.parser import build_parser


def test_top_has_one_job_by_default_and_takes_more_when_asked() -> None:
    parser = build_parser()
    assert parser.parse_args(["top", "unix:/x"]).jobs == 1
    assert parser.parse_args(["top", "unix:/x", "--jobs", "4"]).jobs == 4
    assert parser.parse_args(["tail", "unix:/x"]).jobs is None  # the session's default: the cores less one
