"""A small C/C++/CUDA lexer: comments, string and char literals (raw strings too), numbers,
identifiers (`::`-qualified chains as one token), `#include` lines, and everything else.

Token kinds: comment, string, char, number, include, ident, punct.  Offsets are character
offsets into the text.  `code_regions` gives the same split cheaply for the porter: the spans
outside comments, literals and include lines, where identifiers may be rewritten.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

# The path between <> holds no `<`: a line of unclosed `#include <` is then scanned once, not once per `#`.
_INCLUDE = r"\#[ \t]*include[ \t]*(?:<[^<>\n]*>|\"[^\"\n]*\")"
# Alternatives in priority order: the first that matches at a position wins.
_PARTS = [
    ("comment", r"//(?:\\\r?\n|[^\n])*|/\*.*?(?:\*/|\Z)"),
    # a raw string (like a comment) never closed runs to the end: each unclosed `R"(` would rescan the rest
    ("raw", r"(?:u8|[uUL])?R\"(?P<delim>[^()\\\s\"]{0,16})\(.*?(?:\)(?P=delim)\"|\Z)"),
    ("string", r"(?:u8|[uUL])?\"(?:\\.|\\\r?\n|[^\"\\\n])*\"?"),
    ("sepnum", r"[0-9][0-9A-Za-z_.]*'(?=[0-9A-Za-z_])[0-9A-Za-z_.']*"),  # 1'000'000: not a char literal
    ("char", r"(?:u8|[uUL])?'(?:\\.|[^'\\\n])*'?"),
    ("include", r"(?<![^\n])[ \t]*" + _INCLUDE),
]
_REST = [
    ("number", r"\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.])*"),
    ("ident", r"(?:::)?[A-Za-z_]\w*(?:[ \t]*::[ \t]*[A-Za-z_]\w*)*"),
    ("punct", r"\S"),
]


def _compile(parts):
    return re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in parts), re.DOTALL)


_TOKEN = _compile(_PARTS + _REST)
# The same alternatives for `scan`, behind a lookahead of their possible first characters: that lets the
# regex engine skip ahead at C speed (5x faster).  Its include branch starts at the `#`; `scan` checks
# that only blanks precede it on its line, as the lookbehind of _PARTS does.
# Its number branch takes the whole number, separators or not (scan skips it): tried at every digit of a
# long word or number, the sepnum branch would rescan the rest of it each time.
_SKIP_NUMBER = r"[0-9][0-9A-Za-z_.]*(?:'(?=[0-9A-Za-z_])[0-9A-Za-z_.']*)?"
_SKIP = re.compile(r"(?=[/uULR\"'0-9#])(?:" + "|".join(
    f"(?P<{name}>{dict(include=_INCLUDE, sepnum=_SKIP_NUMBER).get(name, pattern)})" for name, pattern in _PARTS) + ")",
    re.DOTALL)
_KIND = {"raw": "string", "sepnum": "number", "delim": "string"}
_INCLUDE_PATH = re.compile(r'([<"])([^>"\n]*)[>"]\s*$')


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    start: int
    end: int


def tokens(text: str) -> Iterator[Token]:
    """Every token of `text`, in order (whitespace is not a token)."""
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        yield Token(_KIND.get(kind, kind), m.group(0), m.start(), m.end())


def include_path(text: str, start: int = 0):
    """(path, quote char '<' or '"', offset of the path) of an `#include` line's text."""
    # The path ends at the last character, a `>` or `"`; it starts after the last `>`, `"` or newline before
    # that (or at it, for a `"`).  Searched from there: a start before it cannot match, and each would read on.
    end = len(text.rstrip()) - 1
    if text[end:end + 1] not in ('>', '"'):
        return None
    m = _INCLUDE_PATH.search(text, max(0, *(text.rfind(c, 0, end) for c in '>"\n')))
    if not m:
        return None
    return m.group(2), m.group(1), start + m.start(2)


def scan(text: str) -> tuple:
    """(code regions, include spans, comment spans): the spans outside comments, literals and include
    lines; the include lines; the comments.  One regex pass that never visits identifiers."""
    regions, includes, comments, pos = [], [], [], 0
    for m in _SKIP.finditer(text):
        kind = m.lastgroup
        if kind == "sepnum":
            continue
        if kind == "include":
            line_start = text.rfind("\n", 0, m.start()) + 1
            if text[line_start:m.start()].strip(" \t"):
                continue  # a `#` inside a line (stringizing), not an include directive
        if m.start() > pos:
            regions.append((pos, m.start()))
        pos = m.end()
        if kind == "include":
            includes.append((m.start(), m.end()))
        elif kind == "comment":
            comments.append((m.start(), m.end()))
    if pos < len(text):
        regions.append((pos, len(text)))
    return regions, includes, comments
