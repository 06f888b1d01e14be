"""Printing user-controlled names (file names, paths, op names, log lines) safely.

A file may be called `a\\n+++ b/evil.py` or carry a terminal escape (`\\x1b[2J`).  Printed as they
are, such names forge extra output lines (a second diff header, a fake finding) or drive the
terminal.  Everything that prints a name the user's files or data chose goes through
`printable()`: characters that are not printable become Python escapes (`\\n`, `\\r`, `\\t`,
`\\x1b`, `\\u202e`, and `\\udcff` for a byte that is not UTF-8), everything else is unchanged, so
ordinary names (spaces, `中文.py`) print as they are.  A backslash is printable and stays as it is.
Markdown gets the same care: `md_cell` for a table cell, `md_code` for a code span.
"""
from __future__ import annotations

import os
import re


def printable(name: object) -> str:
    """`name` (str, bytes, a path, or anything `str()` takes) on one line, its non-printable characters escaped."""
    text = os.fsdecode(name) if isinstance(name, (str, bytes, os.PathLike)) else str(name)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def md_cell(text: object) -> str:
    """Text for one Markdown table cell, escaped only where Markdown needs it: its line breaks become <br>,
    other control characters escapes, `|` is `\\|` (it would end the cell), and outside code spans a `<` that
    would open an HTML tag, an `&` that would spell an entity and a backslash before punctuation get a
    backslash.  `->`, `a < b`, `&` and backticks stay as they are (backticks make code spans)."""
    lines = str(text).replace("\r\n", "\n").split("\n")
    cells = "<br>".join(_md_inline(printable(line)) for line in lines)
    return cells.replace("|", "\\|")


_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
_MD_SPECIAL = re.compile(r"\\(?=[!-/:-@\[-`{-~])|<(?=[A-Za-z/!?])|&(?=#?\w+;)")


def _md_inline(text: str) -> str:
    """One line of text for Markdown: `<tag`, `&entity;` and `\\` before punctuation escaped outside code spans."""
    out: list[str] = []
    at = 0
    for m in _CODE_SPAN.finditer(text):
        out += [_MD_SPECIAL.sub(lambda c: "\\" + c.group(), text[at:m.start()]), m.group()]
        at = m.end()
    out.append(_MD_SPECIAL.sub(lambda c: "\\" + c.group(), text[at:]))
    return "".join(out)


def md_code(text: object) -> str:
    """Text as a one-line Markdown code span, whatever backticks it holds (a name, a path)."""
    shown = printable(text)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", shown)), default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"
