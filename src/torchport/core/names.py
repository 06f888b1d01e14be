"""Printing user-controlled names (file names, paths, op names, log lines) safely.

A file may be called `a\\n+++ b/evil.py` or carry a terminal escape (`\\x1b[2J`).  Printed as they
are, such names forge extra output lines (a second diff header, a fake finding) or drive the
terminal.  Everything that prints a name the user's files or data chose goes through
`printable()`: characters that are not printable become Python escapes (`\\n`, `\\r`, `\\t`,
`\\x1b`, `\\u202e`, and `\\udcff` for a byte that is not UTF-8), everything else is unchanged, so
ordinary names (spaces, `中文.py`) print as they are.  A backslash is printable and stays as it is.
"""
from __future__ import annotations

import os


def printable(name) -> str:
    """`name` (str, bytes, a path, or anything `str()` takes) on one line, its non-printable characters escaped."""
    text = os.fsdecode(name) if isinstance(name, (str, bytes, os.PathLike)) else str(name)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
