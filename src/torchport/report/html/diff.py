"""Rows of code for a page: a text's lines, the side-by-side pairing of an original and its converted text (from
the conversion's changed line ranges, else a diff), changed words highlighted, and the folding of unchanged
stretches.  Pure functions of the texts; files.py turns their rows into table rows."""
from __future__ import annotations

import difflib
import re

from .layout import _e

CONTEXT = 3                  # unchanged lines shown around a change or a finding
MAX_LINE_CHARS = 3_000       # longer lines (minified code) are cut

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def lines_of(text: str) -> list:
    """Lines as findings count them (split on newline), without their line ends."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if "\r" not in text:
        return lines
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def code_html(text: str, cls: str = "") -> str:
    """One line of code, escaped and cut at MAX_LINE_CHARS; `cls`: a span around it."""
    cut = len(text) > MAX_LINE_CHARS
    body = _e(text[:MAX_LINE_CHARS])
    if cls and text:
        body = f'<span class="{cls}">{body}</span>'
    return body + ('<span class="cut"> [line cut]</span>' if cut else "")


def inline_diff(a: str, b: str) -> tuple:
    """The two lines as HTML with the changed tokens (words, spaces, punctuation) in <span class="hl">."""
    if len(a) > MAX_LINE_CHARS or len(b) > MAX_LINE_CHARS:
        return code_html(a, "hl"), code_html(b, "hl")
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    left, right = [], []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        x, y = "".join(ta[i1:i2]), "".join(tb[j1:j2])
        if tag == "equal":
            left.append(_e(x))
            right.append(_e(y))
            continue
        if x:
            left.append(f'<span class="hl">{_e(x)}</span>')
        if y:
            right.append(f'<span class="hl">{_e(y)}</span>')
    return "".join(left), "".join(right)


def align(a: list, b: list, hunks=None) -> list:
    """Side-by-side rows (kind, old line number or None, new line number or None); kind eq|chg|del|add.
    `hunks`: where the conversion changed lines (core.edits.line_hunks), used when they fit the texts."""
    rows = _from_hunks(a, b, hunks) if hunks is not None else None
    if rows is not None:
        return rows
    # the common head and tail first: cheap, and it leaves SequenceMatcher the part that differs
    head, limit = 0, min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    rows = [("eq", k + 1, k + 1) for k in range(head)]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a[head:len(a) - tail], b[head:len(b) - tail]).get_opcodes():
        i1, i2, j1, j2 = i1 + head, i2 + head, j1 + head, j2 + head
        if tag == "equal":
            rows += [("eq", i1 + k + 1, j1 + k + 1) for k in range(i2 - i1)]
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            o = i1 + k + 1 if i1 + k < i2 else None
            n = j1 + k + 1 if j1 + k < j2 else None
            rows.append(("chg" if o and n else "del" if o else "add", o, n))
    rows += [("eq", len(a) - tail + k + 1, len(b) - tail + k + 1) for k in range(tail)]
    return rows


def _paired(rows: list, a: list, b: list, o1: int, o2: int, n1: int, n2: int) -> None:
    """Rows for old lines o1..o2 against new lines n1..n2: equal ends as eq, the rest paired line by line."""
    while o1 <= o2 and n1 <= n2 and a[o1 - 1] == b[n1 - 1]:
        rows.append(("eq", o1, n1))
        o1, n1 = o1 + 1, n1 + 1
    tail = []
    while o1 <= o2 and n1 <= n2 and a[o2 - 1] == b[n2 - 1]:
        tail.append(("eq", o2, n2))
        o2, n2 = o2 - 1, n2 - 1
    for k in range(max(o2 - o1 + 1, n2 - n1 + 1)):
        o = o1 + k if o1 + k <= o2 else None
        n = n1 + k if n1 + k <= n2 else None
        rows.append(("chg" if o and n else "del" if o else "add", o, n))
    rows += tail[::-1]


def _from_hunks(a: list, b: list, hunks: list):
    """align's rows from the changed line ranges, or None when they do not fit these texts (then a diff)."""
    rows: list = []
    o = n = 1
    for o1, o2, n1, n2 in [*hunks, (len(a) + 1, len(a), len(b) + 1, len(b))]:
        o2, n2 = min(o2, len(a)), min(n2, len(b))
        if o1 < o or n1 < n or o1 - o != n1 - n:
            return None
        for k in range(o1 - o):
            if a[o + k - 1] != b[n + k - 1]:
                return None
            rows.append(("eq", o + k, n + k))
        _paired(rows, a, b, o1, o2, n1, n2)
        o, n = max(o, o2 + 1), max(n, n2 + 1)
    return rows


def collapse(rows: list, hot_old, hot_new, context: int = CONTEXT) -> list:
    """Keep changed rows, rows of finding lines, and `context` rows around them; ("gap", n) for the rest."""
    keep = bytearray(len(rows))
    for i, (kind, o, n) in enumerate(rows):
        if kind != "eq" or o in hot_old or n in hot_new:
            keep[max(0, i - context):i + context + 1] = b"\1" * (min(len(rows), i + context + 1) - max(0, i - context))
    out, gap = [], 0
    for i, row in enumerate(rows):
        if keep[i]:
            if gap:
                out.append(("gap", gap, None))
                gap = 0
            out.append(row)
        else:
            gap += 1
    if gap:
        out.append(("gap", gap, None))
    return out


def excerpts(n_lines: int, hot, context: int = CONTEXT) -> list:
    """What collapse() keeps of an unchanged file of n_lines, computed from the hot lines alone."""
    out: list = []
    shown = 0   # the last line already out
    for line in sorted(h for h in hot if 1 <= h <= n_lines):
        first, last = max(shown + 1, line - context), min(n_lines, line + context)
        if first > shown + 1:
            out.append(("gap", first - shown - 1, None))
        out += [("eq", i, i) for i in range(first, last + 1)]
        shown = max(shown, last)
    if out and shown < n_lines:
        out.append(("gap", n_lines - shown, None))
    return out
