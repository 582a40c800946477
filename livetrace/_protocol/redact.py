"""Passwords out of addresses before they are shown: ``http://USER:PASSWORD@HOST``
becomes ``http://USER:***@HOST`` in every status line, error and record of
an address. Standard library only: the CLI's last line of output uses it."""

from __future__ import annotations

import re

__all__ = ["REDACTED", "redact"]

REDACTED = "***"
# scheme://user:password@ in any text. The password runs to the last "@"
# before whitespace, as a URL parser splits the authority at its last "@"
# (so a password holding a raw "@" is hidden whole).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]*):\S*@")


def redact(text: str) -> str:
    """text with the password of every address in it replaced by ***."""
    return _USERINFO.sub(lambda m: f"{m.group(1)}:{REDACTED}@", text)
