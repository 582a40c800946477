"""How a command ends: its exit status, and what it says on standard error.
Standard library only: the dispatcher uses it before any command is imported."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from livetrace._protocol.redact import redact

EXIT_OK, EXIT_INCOMPLETE, EXIT_ERROR = 0, 1, 2


def say(err: TextIO, msg: str) -> None:
    """One line on standard error. Passwords in addresses are redacted here
    too, whatever layer wrote the message."""
    print(f"livetrace: {redact(msg)}", file=err, flush=True)


def silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush of a broken
    pipe does not complain."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
