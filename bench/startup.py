"""Start-up: `livetrace --help`, and `livetrace decode` of a small modern
trace file (its parsed and wire dumps) and of a small legacy one, as whole
commands as a user runs them (interpreter start included), best of --runs
each (default 10), each against the 150 ms target.

    .venv/bin/python bench/startup.py [--modern FILE] [--legacy FILE] [--runs 10]
                                      [--livetrace COMMAND] [--target-ms 150]

The traces default to two from tests/corpus: Go's go122-annotations-stress
test (Go 1.22, turned into its 8 KB binary form) and http_1_21_good (Go
1.21, 7 KB). The command defaults to `python -m livetrace` of this checkout;
--livetrace times another (say .venv/bin/livetrace, the console script).
python3 -X importtime -m livetrace --help shows where the time goes.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import best_of  # bench/, the script's directory

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"
MODERN_TEST = CORPUS / "modern" / "go122-annotations-stress.test"
LEGACY_TRACE = CORPUS / "legacy" / "go-testdata" / "http_1_21_good"


def modern_corpus_trace(path: Path) -> Path:
    """The modern test trace in its binary form (the corpus holds Go's text form)."""
    sys.path.insert(0, str(ROOT))
    from tests import textform  # the tests' reader of Go's text form

    path.write_bytes(textform.load(MODERN_TEST).data)
    return path


def run(cmd: list[str]) -> None:
    # cwd: `python -m livetrace` imports this checkout's package
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modern", type=Path, help="a Go 1.22+ trace (default: tests/corpus's annotations stress test)")
    p.add_argument("--legacy", type=Path, help=f"a Go 1.5-1.21 trace (default: {LEGACY_TRACE.relative_to(ROOT)})")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--livetrace", help="the command to time (default: python -m livetrace, from this checkout)")
    p.add_argument("--target-ms", type=float, default=150.0)
    args = p.parse_args()
    livetrace = shlex.split(args.livetrace) if args.livetrace else [sys.executable, "-m", "livetrace"]
    with tempfile.TemporaryDirectory() as tmp:
        modern = args.modern or modern_corpus_trace(Path(tmp) / "modern.trace")
        legacy = args.legacy or LEGACY_TRACE
        cases = [
            ("python -c pass (the interpreter alone)", [sys.executable, "-c", "pass"]),
            ("livetrace --help", [*livetrace, "--help"]),
            (
                f"livetrace decode --dump parsed ({modern.stat().st_size / 1e3:.1f} KB modern)",
                [*livetrace, "decode", "--dump", "parsed", str(modern)],
            ),
            (
                f"livetrace decode --dump wire ({modern.stat().st_size / 1e3:.1f} KB modern)",
                [*livetrace, "decode", "--dump", "wire", str(modern)],
            ),
            (
                f"livetrace decode --dump legacy ({legacy.stat().st_size / 1e3:.1f} KB legacy)",
                [*livetrace, "decode", "--dump", "legacy", str(legacy)],
            ),
        ]
        times = [(name, best_of(args.runs, run, cmd)[0]) for name, cmd in cases]
    print(f"{shlex.join(livetrace)}; best of {args.runs}, whole commands; target {args.target_ms:g} ms")
    for name, t in times:
        ms = t * 1e3
        print(f"{name:<52} {ms:7.1f} ms  {ms / args.target_ms:5.2f}x target")


if __name__ == "__main__":
    main()
