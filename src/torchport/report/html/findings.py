"""Findings on a page: the action groups (their colour and filter key), the filter bar, and the filterable
finding lists whose location cells link to the finding's line in the file sections (files.py)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...core.finding import ADVICE, DELETE, ERROR, INSERT, MODIFY, UNSUPPORTED
from ..wording import describe
from .layout import _e

GROUP = {INSERT: "change", MODIFY: "change", DELETE: "change", UNSUPPORTED: "unsupported", ADVICE: "advice",
         ERROR: "error"}
GROUPS = ("change", "unsupported", "advice", "error")
GROUP_LABEL = {"change": "Changes", "unsupported": "Unsupported", "advice": "To review", "error": "Errors"}
SEVERITY = {"error": 3, "unsupported": 2, "advice": 1, "change": 0}
COUNTED = {"change": ("change", "changes"), "unsupported": ("unsupported", "unsupported"),
           "advice": ("to review", "to review"), "error": ("error", "errors")}   # a group -> (one, many) words

MAX_LIST_ROWS = 5_000        # rows of one finding list


def group_of(finding) -> str:
    return GROUP.get(finding.action, "advice")


def filters(findings, category_of) -> str:
    groups = Counter(group_of(f) for f in findings)
    cats = Counter(category_of(f) for f in findings)
    out = ['<nav class="filters" id="filters" aria-label="filters">\n<span class="what">show</span>\n',
           f'<button type="button" data-filter-action="" aria-pressed="true">all '
           f'<span class="n">{sum(groups.values())}</span></button>\n']
    for g in GROUPS:
        if groups[g]:
            out.append(f'<button type="button" data-filter-action="{g}" aria-pressed="false">{_e(GROUP_LABEL[g])} '
                       f'<span class="n">{groups[g]}</span></button>\n')
    out.append('<label><span class="what">category</span> <select id="filter-category">'
               '<option value="">all categories</option>')
    out += [f'<option value="{_e(c)}">{_e(c)} ({n})</option>' for c, n in sorted(cats.items())]
    out.append("</select></label>\n</nav>\n")
    return "".join(out)


def _original_side(f) -> str:
    return "o"


def _no_attrs(f) -> dict:
    return {}


@dataclass(frozen=True)
class RowFormat:
    """How a finding list writes its rows: `columns` after No. and Location, each (header, finding -> escaped
    cell HTML); `category_of` (finding -> its data-category); `side` (finding -> the side of the file section its
    location links to: "o" the original, "n" the new text); `attrs` (finding -> more data-* attributes)."""

    columns: tuple[tuple[str, Callable[[Any], str]], ...]
    category_of: Callable[[Any], str]
    side: Callable[[Any], str] = _original_side
    attrs: Callable[[Any], dict] = _no_attrs


def finding_list(sid: str, title: str, note: str, findings: list, files, rows: RowFormat) -> str:
    """A filterable list: rows tr.finding with data-action (change|unsupported|advice|error) and data-category,
    written as `rows` says; the location cell links to the finding's line (files: a Files)."""
    columns, category_of, side, attrs = rows.columns, rows.category_of, rows.side, rows.attrs
    if not findings:
        return ""
    out = [f'<section class="findings" id="{_e(sid)}">\n<h2>{_e(title)} ({len(findings)})</h2>\n']
    if note:
        out.append(f'<p class="sub">{_e(note)}</p>\n')
    out.append('<table class="list">\n<thead><tr><th>No.</th><th>Location</th>'
               + "".join(f"<th>{_e(h)}</th>" for h, _ in columns) + "</tr></thead>\n<tbody>\n")
    for i, f in enumerate(findings[:MAX_LIST_ROWS], 1):
        where = _e(f"{f.file}:{f.line}")
        href = files.href(f, side(f))
        loc = f'<a href="#{_e(href)}">{where}</a>' if href else where
        extra = "".join(f' data-{k}="{_e(v)}"' for k, v in attrs(f).items())
        out.append(f'<tr class="finding" data-action="{group_of(f)}" data-category="{_e(category_of(f))}" '
                   f'data-rule="{_e(f.rule)}"{extra}><td class="num">{i}</td><td><code>{loc}</code></td>'
                   + "".join(f"<td>{cell(f)}</td>" for _, cell in columns) + "</tr>\n")
    out.append("</tbody>\n</table>\n")
    if len(findings) > MAX_LIST_ROWS:
        out.append(f'<p class="note">... and {len(findings) - MAX_LIST_ROWS:,} more (see the JSON report).</p>\n')
    out.append("</section>\n")
    return "".join(out)


def action_cell(f) -> str:
    return f'<span class="tag {group_of(f)}">{_e(f.action)}</span>'


def _what(f) -> str:
    return f"<code>{_e(describe(f) if group_of(f) == 'change' else f.old)}</code>"


COLUMNS = (("Action", action_cell), ("Rule", lambda f: f'<span class="id">{_e(f.rule)}</span>'),
           ("Category", lambda f: _e(f.category)), ("Code", _what), ("Message", lambda f: _e(f.message)))


def group_lists(findings, files, category_of, notes, side=_original_side, columns=COLUMNS) -> list:
    """One list per action group, the ones to act on first."""
    order = ("unsupported", "advice", "error", "change")
    rows = RowFormat(columns, category_of, side)
    return [finding_list(f"list-{g}", GROUP_LABEL[g], notes.get(g, ""), [f for f in findings if group_of(f) == g],
                         files, rows) for g in order]
