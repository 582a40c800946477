"""Counts in messages: "1 gap", "2 gaps"."""

from __future__ import annotations


def plural(n: int, noun: str, nouns: str = "") -> str:
    """``n`` with thousands separators, and the noun for it: ``noun`` if
    ``n`` is 1, else ``nouns`` (by default ``noun`` + "s"). ``plural(1,
    "gap")`` is "1 gap", ``plural(1200, "process", "processes")`` "1,200
    processes"."""
    return f"{n:,} {noun if n == 1 else nouns or noun + 's'}"
