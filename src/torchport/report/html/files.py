"""The per-file sections of a page: a side-by-side diff of a changed file, or excerpts of an unchanged one around
its findings, with line-number cells marked by the findings on them and anchors the lists link to.  Big runs
stay bounded: unchanged stretches fold, and files and rows are capped with a note."""
from __future__ import annotations

import json
from collections import Counter

from .diff import align, code_html, collapse, excerpts, inline_diff, lines_of
from .findings import COUNTED, GROUPS, SEVERITY, group_of
from .layout import _e

MAX_TEXT_CHARS = 2_000_000   # a larger file gets a note instead of a diff
MAX_FILE_ROWS = 2_000        # rows of one file's diff or listing
MAX_ROWS = 40_000            # rows of all diffs and listings together
OPEN_ROWS = 5_000            # file sections start open until the page has shown this many rows


def _marks(findings, group=group_of, labels=COUNTED) -> tuple:
    """CSS class and tooltip of a line number cell, from the findings on that line."""
    worst = max((group(f) for f in findings), key=lambda g: SEVERITY.get(g, -1))
    tip = "\n".join(f"{f.rule} {labels[group(f)][0]}: " + (f.message or f.old or f.new) for f in findings[:8])
    return f" m-{worst}", f' title="{_e(tip)}"'


class Files:
    """The per-file sections of a page, and the anchors they define, under one row budget."""

    def __init__(self, category_of=lambda f: f.category, group=group_of, labels=COUNTED):
        """group: a finding -> one of GROUPS (its colour and filter key); labels: a group -> (one, many) words."""
        self.category_of = category_of
        self.group, self.labels = group, labels
        self.parts: list = []
        self.anchors: set = set()
        self.section_of: dict = {}   # id(finding) -> section id
        self.rows = 0
        self.count = 0

    def href(self, f, side: str = "o"):
        """#anchor of the finding's line, else of its file's section, else None."""
        sid = self.section_of.get(id(f))
        if sid is None:
            return None
        for s in (side, "o"):   # a new-side line shown in a listing (file not changed) has an "o" anchor
            if f"{sid}-{s}{f.line}" in self.anchors:
                return f"{sid}-{s}{f.line}"
        return sid

    def add(self, title: str, findings: list, old, new=None, badges=(), new_side=lambda f: False,
            hunks=None) -> None:
        """One file: a side-by-side diff when `new` differs from `old`, else excerpts around the findings.
        old None: the text could not be read back (a note says so).  new_side(f): the finding's line is in
        the new text (else the original)."""
        self.count += 1
        sid = f"F{self.count}"
        for f in findings:
            self.section_of[id(f)] = sid
        keys = sorted({(self.group(f), self.category_of(f)) for f in findings})
        counts = Counter(self.group(f) for f in findings)
        head = [f'<span class="path">{title}</span>']
        head += [f'<span class="tag status">{_e(b)}</span>' for b in badges]
        head += [f'<span class="tag {g}">{counts[g]} {_e(self.labels[g][counts[g] != 1])}</span>' for g in GROUPS
                 if counts[g]]
        is_open = " open" if self.rows < OPEN_ROWS else ""
        out = [f'<section class="file" id="{sid}" data-keys="{_e(json.dumps(keys))}">\n<details{is_open}>'
               f'<summary>{" ".join(head)}</summary>\n']
        if old is None:
            out.append('<p class="note">The text of this file could not be read back for this report.</p>\n')
        elif len(old) + len(new or "") > MAX_TEXT_CHARS:
            out.append(f'<p class="note">Too large to show here ({len(old):,} characters); see the file itself.</p>\n')
        elif self.rows >= MAX_ROWS:
            out.append(f'<p class="note">Not shown: this report shows at most {MAX_ROWS:,} lines of code in all; '
                       "see the file itself.</p>\n")
        else:
            out.append(self._rows(sid, findings, old, new, new_side, hunks))
        out.append("</details>\n</section>\n")
        self.parts.append("".join(out))

    def _rows(self, sid, findings, old, new, new_side, hunks=None) -> str:
        hot_old: dict = {}
        hot_new: dict = {}
        for f in findings:
            (hot_new if new_side(f) else hot_old).setdefault(f.line, []).append(f)
        a = lines_of(old)
        diff = new is not None and new != old
        if diff:
            b = lines_of(new)
            rows = align(a, b, hunks)
        else:
            b = a
            hot_old.update(hot_new)
            hot_new = {}
        shown = collapse(rows, hot_old, hot_new) if diff else excerpts(len(a), hot_old)
        if all(kind == "gap" for kind, _, _ in shown):
            return '<p class="note">No lines to show.</p>\n'
        limit = min(MAX_FILE_ROWS, MAX_ROWS - self.rows)
        cls = "diff" if diff else "listing"
        cols = '<col class="ln"><col><col class="ln"><col>' if diff else '<col class="ln"><col>'
        out = [f'<table class="{cls}"><colgroup>{cols}</colgroup>\n<tbody>\n']
        n = 0
        for kind, o, m in shown:
            if n >= limit:
                out.append(f'<tr class="diff-gap"><td colspan="4">[cut: this report shows at most {limit:,} lines '
                           "of this file]</td></tr>\n")
                break
            if kind == "gap":
                out.append(f'<tr class="diff-gap"><td colspan="4">&#8943; {o:,} unchanged line{"s" if o > 1 else ""}'
                           "</td></tr>\n")
                continue
            n += 1
            if not diff:
                out.append(f'<tr class="code-row">{self._ln(sid, "o", o, hot_old)}'
                           f'<td class="code">{code_html(a[o - 1])}</td></tr>\n')
                continue
            if kind == "chg":
                left, right = inline_diff(a[o - 1], b[m - 1])
            else:
                left = code_html(a[o - 1]) if o else ""
                right = code_html(b[m - 1]) if m else ""
            old_cells = (self._ln(sid, "o", o, hot_old) + f'<td class="code old">{left}</td>' if o
                         else '<td class="ln"></td><td class="code empty"></td>')
            new_cells = (self._ln(sid, "n", m, hot_new) + f'<td class="code new">{right}</td>' if m
                         else '<td class="ln"></td><td class="code empty"></td>')
            out.append(f'<tr class="diff-row {kind}">{old_cells}{new_cells}</tr>\n')
        self.rows += n
        out.append("</tbody></table>\n")
        return "".join(out)

    def _ln(self, sid, side, line, hot) -> str:
        aid = f"{sid}-{side}{line}"
        self.anchors.add(aid)
        cls, title = _marks(hot[line], self.group, self.labels) if line in hot else ("", "")
        return f'<td class="ln{cls}" id="{aid}"{title}>{line}</td>'

    def html(self) -> str:
        return "".join(self.parts)
