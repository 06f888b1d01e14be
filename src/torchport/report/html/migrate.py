"""migrate.html, `torchport migrate`'s page: What's left (filterable by risk and kind, rows linked to excerpts of the
migrated files), then what each step did, with links to its own report.  The risk classes, their titles, the
effort classes and the rows come from the MigrateResult (risks, risk_titles, efforts, rows()): this module does
not import the migrate command."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

from ...core.version import __version__
from ...core.words import counted
from .files import Files
from .findings import COUNTED
from .layout import _e, cards, document, table

MIGRATE_NAME = "migrate.html"
RISK_GROUP = {"fail": "unsupported", "review": "advice", "advice": "change"}   # a risk's colour and filter key
ROW_LINKS = 12                 # line links in a row's Where cell before "+N more"
_URL = re.compile(r"https?://[^\s;,)]+")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")   # a `command` or `name` in a suggested fix's words


def _marked(text: str, pattern: re.Pattern[str], render: Callable[[re.Match[str]], str]) -> str:
    """Escaped text whose matches of `pattern` are `render(match)` (HTML)."""
    out, at = [], 0
    for m in pattern.finditer(text):
        out += [_e(text[at:m.start()]), render(m)]
        at = m.end()
    return "".join(out) + _e(text[at:])


def _linked(text: str) -> str:
    """Escaped text whose URLs are links."""
    return _marked(text, _URL, lambda m: f'<a href="{_e(m.group())}" rel="noreferrer">{_e(m.group())}</a>')


def _coded(text: str) -> str:
    """Escaped text whose `backquoted` spans are <code> (a fix's words name commands and options that way)."""
    return _marked(text, _CODE_SPAN, lambda m: f"<code>{_e(m.group(1))}</code>")


def migrate_html(result) -> str:
    """OUT/torchport-report/migrate.html of a MigrateResult."""
    risks, titles = result.risks, result.risk_titles
    labels = {RISK_GROUP[r]: (titles[r], titles[r]) for r in risks}
    labels["error"] = COUNTED["error"]
    grouped = result.rows()
    marks = {}                    # id(item) -> a finding-like mark for the code excerpts
    by_file: dict = {}
    for i in result.items:
        if i.file and i.line:
            marks[id(i)] = SimpleNamespace(file=i.file, line=i.line, rule=i.rule, message=f"{i.item}: {i.why}",
                                           old=i.item, new="", category=i.kind, group=RISK_GROUP[i.risk])
            by_file.setdefault(i.file, []).append(marks[id(i)])
    files = Files(lambda f: f.category, group=lambda f: f.group, labels=labels)
    root = Path(result.output)
    for rel in sorted(by_file):
        try:
            text = (root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = None
        files.add(_e(rel), by_file[rel], text)
    counts = result.counts()
    n = counts["by_risk"]
    c = result.convert.summary()
    body = [cards([("items", "items left", counts["items"], "muted"),
                   ("fail", titles["fail"], n["fail"], "unsupported"),
                   ("review", titles["review"], n["review"], "advice"),
                   ("advice", titles["advice"], n["advice"], "change"),
                   ("changes", "changes made", c["changes"], "change"),
                   ("exit", "exit status", result.exit_code, "error" if result.exit_code else "muted")])]
    kinds = Counter(i.kind for i in result.items)
    if result.items:
        body.append('<nav class="filters" id="filters" aria-label="filters">\n<span class="what">show</span>\n'
                    f'<button type="button" data-filter-action="" aria-pressed="true">all <span class="n">'
                    f'{len(result.items)}</span></button>\n')
        body += [f'<button type="button" data-filter-action="{RISK_GROUP[r]}" aria-pressed="false">'
                 f'{_e(titles[r])} <span class="n">{n[r]}</span></button>\n' for r in risks if n[r]]
        body.append('<label><span class="what">kind</span> <select id="filter-category">'
                    '<option value="">all kinds</option>'
                    + "".join(f'<option value="{_e(x)}">{_e(x)} ({m})</option>' for x, m in sorted(kinds.items()))
                    + "</select></label>\n</nav>\n")
    body.append(f'<h2 id="left">What\'s left</h2>\n<p class="sub">{_e(counted(counts["items"], "item"))} in '
                f'{_e(counted(len(grouped), "row"))}: items that differ only by line share a row. Ordered by risk. '
                "Lines are the migrated tree's; convert's report gives the project's own lines (they differ by the "
                "lines convert inserted; hover a line for both). Effort: "
                + _e("; ".join(f"{x} = {v}" for x, v in result.efforts.items())) + ".</p>\n")
    if not result.items:
        body.append('<p class="note">Nothing: no CUDA code, kernel or advice is left for this target.</p>\n')
    number = 0
    for risk in risks:
        mine = [r for r in grouped if r.first.risk == risk]
        if not mine:
            continue
        body.append(f'<section class="findings" id="risk-{risk}">\n<h2>{_e(titles[risk].capitalize())} '
                    f'({sum(len(r.items) for r in mine)})</h2>\n<table class="list">\n<thead><tr><th>No.</th>'
                    "<th>Where</th><th>Item</th><th>Why it matters</th><th>Suggested fix</th><th>Effort</th>"
                    "</tr></thead>\n<tbody>\n")
        for r in mine:
            number += 1
            i = r.first
            fix = _coded(i.fix) + (f'<div class="sub">source: {_linked(i.cite)}</div>' if i.cite else "")
            body.append(f'<tr class="finding" data-action="{RISK_GROUP[risk]}" data-category="{_e(i.kind)}" '
                        f'data-rule="{_e(i.rule)}" data-items="{len(r.items)}"><td class="num">{number}</td>'
                        f"<td>{_where(r, files, marks)}</td><td><code>{_e(r.item)}</code>"
                        + (f' <span class="id">({_e(i.rule)})</span>' if i.rule and i.rule not in r.item else "")
                        + f'</td><td class="msg">{_e(i.why)}</td><td>{fix}</td>'
                        f'<td><span class="tag status">{_e(i.effort)}</span></td></tr>\n')
        body.append("</tbody>\n</table>\n</section>\n")
    body.append('<h2 id="steps">Steps</h2>\n')
    body.append(table(("Step", "Result"), [(f'<span class="id">{name}</span>', text) for name, text in _steps(result)],
                      attrs=' id="step-table"'))
    if files.count:
        body.append('<h2 id="files">Code</h2>\n<p class="sub">The migrated files around each item.</p>\n')
        body.append(files.html())
    meta = [("input", result.input), ("output", result.output), ("target", f"{result.target} ({result.title})"),
            ("started", result.started), ("time", f"{result.elapsed:.2f} s")]
    return document(f"torchport migrate: {result.target}", f"torchport migrate: {result.target}", meta, body,
                    __version__, lines_of_what="the migrated tree (OUT)")


def _steps(result) -> list:
    """(step, escaped HTML of what it did) for the Steps table."""
    c, k, v = result.convert.summary(), result.check.summary(), result.verify
    return [("analyze", _e(f"{counted(result.analysis.summary()['touchpoints'], 'CUDA touchpoint')} in "
                           f"{counted(result.analysis.summary()['files'], 'file')}, "
                           f"{len(result.analysis.advice(result.target))} performance advice")),
            ("convert", _e(f"{counted(c['changes'], 'change')}, {c['unsupported']} unsupported, {c['advice']} to "
                           f"review, {counted(c['errors'], 'error')} in {counted(c['files'], 'file')}") +
             ' (<a href="convert/report.html">convert/report.html</a>)'),
            ("port-ext", _e(result.port_note) + (' (<a href="port-ext/report.html">port-ext/report.html</a>)'
                                                 if result.port is not None else "")),
            ("check", _e(f"{counted(k['problems'], 'problem')} ({counted(k['changes'], 'change')}, "
                         f"{k['unsupported']} unsupported, {counted(k['errors'], 'error')}), {k['notes']} to review "
                         "in the migrated tree: the rows from check above")),
            ("verify", _e("not verified: no --verify -- COMMAND was given") if v is None else
             _e(f"{' '.join(v.command)} on {v.where}: exit {v.exit_code} ({v.verdict}) in {v.seconds:.1f} s")
             + ' (<a href="verify.log">verify.log</a>)')]


def _where(row, files, marks) -> str:
    """file:line links (to the excerpts), each line's tooltip naming the project's own line where it differs."""
    first = row.first
    if not first.file:
        return "<code>(project)</code>"
    if not first.line:
        return f"<code>{_e(first.file)}</code>"
    links, seen = [], set()
    for i in row.items:
        if i.line in seen:
            continue
        seen.add(i.line)
        href = files.href(marks[id(i)]) if id(i) in marks else None
        tip = f' title="line {i.input_line} in the project"' if i.input_line and i.input_line != i.line else ""
        text = _e(i.line)
        links.append(f'<a class="id" href="#{_e(href)}"{tip}>{text}</a>' if href else  # .id: a number keeps its line
                     f'<span class="id"{tip}>{text}</span>')
    more = len(links) - ROW_LINKS
    path = _e(first.file).replace("/", "/<wbr>")   # a narrow column breaks the path after a folder first
    return (f"<code>{path}:" + ", ".join(links[:ROW_LINKS]) + "</code>"
            + (f' <span class="sub">(+{more} more)</span>' if more > 0 else ""))
