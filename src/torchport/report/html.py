"""report.html: one self-contained page per convert / analyze / port-ext run.

This module owns the HTML rendering of a run's result: summary cards, the
readiness table (analyze), the finding lists with category and action filters,
and per-file side-by-side diffs (convert, port-ext) or code excerpts around
findings (files left unchanged, and analyze).  It reads the same result objects
as the other writers, and the file texts through them (`texts()`, `source()`).

Plain string building with every piece of user text through `escape` (what html.escape does).  The
only CSS and script are inline, and the page's Content-Security-Policy allows
them by hash and nothing else: no network, no remote fonts, no injected script.
Big runs stay bounded: only changed files (and excerpts around findings) are
shown, unchanged stretches collapse, and files, rows and lists are capped with a note.
"""
from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from pathlib import Path

from ..core import codes
from ..core import writes
from ..core.finding import ADVICE, DELETE, ERROR, INSERT, MODIFY, UNSUPPORTED
from ..core.words import counted


def escape(text: str, quote: bool = True) -> str:
    """html.escape, without importing `html` and its entity table: & < > (and " ') as character references."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace('"', "&quot;").replace("'", "&#x27;") if quote else text

NAME = "report.html"
GROUP = {INSERT: "change", MODIFY: "change", DELETE: "change", UNSUPPORTED: "unsupported", ADVICE: "advice",
         ERROR: "error"}
GROUPS = ("change", "unsupported", "advice", "error")
GROUP_LABEL = {"change": "Changes", "unsupported": "Unsupported", "advice": "To review", "error": "Errors"}
_SEVERITY = {"error": 3, "unsupported": 2, "advice": 1, "change": 0}
_COUNTED = {"change": ("change", "changes"), "unsupported": ("unsupported", "unsupported"),
            "advice": ("to review", "to review"), "error": ("error", "errors")}

CONTEXT = 3                  # unchanged lines shown around a change or a finding
MAX_TEXT_CHARS = 2_000_000   # a larger file gets a note instead of a diff
MAX_FILE_ROWS = 2_000        # rows of one file's diff or listing
MAX_ROWS = 40_000            # rows of all diffs and listings together
MAX_LIST_ROWS = 5_000        # rows of one finding list
MAX_LINE_CHARS = 3_000       # longer lines (minified code) are cut
OPEN_ROWS = 5_000            # file sections start open until the page has shown this many rows

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def _e(value) -> str:
    return escape(str(value), quote=True)


def group_of(finding) -> str:
    return GROUP.get(finding.action, "advice")


# ------------------------------------------------------------------ page
CSS = """
:root{--bg:#f6f7f9;--fg:#1d2330;--muted:#667085;--card:#fff;--line:#e3e6ea;--accent:#3b5bdb;--gap:#f1f3f5;
--add:#e6ffec;--addhl:#abf2bc;--del:#ffebe9;--delhl:#ffc1bc;--change:#3b5bdb;--unsupported:#d9480f;
--advice:#b7791f;--error:#c92a2a;--target:#ffe066}
@media (prefers-color-scheme:dark){:root{--bg:#14161a;--fg:#e4e6eb;--muted:#98a2b3;--card:#1d2026;--line:#2e323a;
--accent:#7c9cff;--gap:#1a1d22;--add:#12301d;--addhl:#1f6b3a;--del:#3a1618;--delhl:#8a2a2e;--change:#7c9cff;
--unsupported:#ff8a4c;--advice:#f0b429;--error:#ff6b6b;--target:#8a6d00}}
*{box-sizing:border-box}
[hidden]{display:none!important}
body{margin:0;background:var(--bg);color:var(--fg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;overflow-wrap:anywhere}
main{max-width:1500px;margin:0 auto;padding:20px 24px 60px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:28px 0 8px}
.sub{color:var(--muted)}
.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:10px 0 6px;color:var(--muted)}
.meta dt{font-weight:600}
.meta dd{margin:0;word-break:break-all}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.card{background:var(--card);border:1px solid var(--line);border-left:4px solid var(--accent);border-radius:8px;
padding:10px 16px;min-width:130px}
.card .num{font-size:26px;font-weight:700;line-height:1.15}
.card .label{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.card.k-unsupported{border-left-color:var(--unsupported)}
.card.k-advice{border-left-color:var(--advice)}
.card.k-error{border-left-color:var(--error)}
.card.k-muted{border-left-color:var(--line)}
.grade{font-weight:700}
.grade-A{color:#2b8a3e}.grade-B{color:#5c940d}.grade-C{color:#e67700}.grade-D{color:#d9480f}.grade-E{color:#c92a2a}
.card.grade-A{border-left-color:#2b8a3e}.card.grade-B{border-left-color:#5c940d}.card.grade-C{border-left-color:#e67700}
.card.grade-D{border-left-color:#d9480f}.card.grade-E{border-left-color:#c92a2a}
.filters{position:sticky;top:0;z-index:5;background:var(--bg);padding:10px 0;border-bottom:1px solid var(--line);
display:flex;flex-wrap:wrap;gap:8px;align-items:center}
.filters .what{color:var(--muted);font-size:12px;text-transform:uppercase;margin-right:2px}
.filters button,.filters select{font:inherit;border:1px solid var(--line);background:var(--card);color:var(--fg);
border-radius:999px;padding:3px 12px;cursor:pointer}
.filters button[aria-pressed=true]{background:var(--accent);color:#fff;border-color:var(--accent)}
.filters .n{opacity:.7;font-size:12px}
table{border-collapse:collapse;width:100%;max-width:100%}
table.list{background:var(--card);border:1px solid var(--line);border-radius:8px}
table.list th,table.list td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
table.list th{font-size:12px;color:var(--muted);text-transform:uppercase;font-weight:600}
table.list.narrow{width:auto;min-width:40%}
table.list td.num{text-align:right;font-variant-numeric:tabular-nums}
table.list th,table.list td.num,.id{white-space:nowrap}
table.list tr:hover td{background:var(--gap)}
a{color:var(--accent)}
code{white-space:pre-wrap}
code,td.code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:12.5px}
td.msg{color:var(--muted)}
.tag{display:inline-block;border-radius:4px;padding:0 6px;font-size:12px;font-weight:600;color:#fff;white-space:nowrap}
.tag.change{background:var(--change)}.tag.unsupported{background:var(--unsupported)}
.tag.advice{background:var(--advice)}.tag.error{background:var(--error)}
.tag.status{background:var(--muted)}
section.file{margin:14px 0;background:var(--card);border:1px solid var(--line);border-radius:8px;overflow:hidden}
section.file summary{padding:8px 12px;cursor:pointer;background:var(--gap);border-bottom:1px solid var(--line)}
section.file summary .path{font-weight:600;font-family:ui-monospace,Menlo,Consolas,monospace}
section.file summary .tag{margin-left:6px}
table.diff,table.listing{table-layout:fixed}
col.ln{width:4.5em}
td.ln{color:var(--muted);text-align:right;padding:0 8px;user-select:none;border-right:1px solid var(--line);
vertical-align:top;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;scroll-margin-top:80px}
td.code{white-space:pre-wrap;word-break:break-all;overflow-wrap:anywhere;padding:0 8px;tab-size:4;vertical-align:top}
tr.chg td.old,tr.del td.old{background:var(--del)}
tr.chg td.new,tr.add td.new{background:var(--add)}
td.old .hl{background:var(--delhl);border-radius:2px}
td.new .hl{background:var(--addhl);border-radius:2px}
td.empty{background:var(--gap)}
tr.diff-gap td{background:var(--gap);color:var(--muted);text-align:center;font-size:12px;padding:2px}
td.ln.m-change{box-shadow:inset 3px 0 var(--change)}
td.ln.m-advice{box-shadow:inset 3px 0 var(--advice)}
td.ln.m-unsupported{box-shadow:inset 3px 0 var(--unsupported);color:var(--unsupported);font-weight:700}
td.ln.m-error{box-shadow:inset 3px 0 var(--error);color:var(--error);font-weight:700}
td.ln:target,td.ln.flash{background:var(--target);color:#000}
.cut{color:var(--muted)}
.note{color:var(--muted);font-style:italic;padding:8px 12px;margin:0}
footer{margin-top:40px;color:var(--muted);font-size:12px}
"""

JS = """
(function () {
  "use strict";
  var action = "", category = "";
  function match(a, c) { return (!action || a === action) && (!category || c === category); }
  function apply() {
    var i, j, rows = document.querySelectorAll("tr.finding");
    for (i = 0; i < rows.length; i++) {
      rows[i].hidden = !match(rows[i].getAttribute("data-action"), rows[i].getAttribute("data-category"));
    }
    var lists = document.querySelectorAll("section.findings");
    for (i = 0; i < lists.length; i++) {
      var all = lists[i].querySelectorAll("tr.finding"), shown = 0;
      for (j = 0; j < all.length; j++) { if (!all[j].hidden) { shown++; } }
      lists[i].hidden = all.length > 0 && shown === 0;
    }
    var files = document.querySelectorAll("section.file");
    for (i = 0; i < files.length; i++) {
      var keys = JSON.parse(files[i].getAttribute("data-keys") || "[]"), any = !action && !category;
      for (j = 0; !any && j < keys.length; j++) { any = match(keys[j][0], keys[j][1]); }
      files[i].hidden = !any;
    }
  }
  function reveal(id) {
    var el = id && document.getElementById(id);
    if (!el) { return; }
    var section = el.closest("section");
    if (section) { section.hidden = false; }
    for (var d = el.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) { d.open = true; }
  }
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest("[data-filter-action]");
    if (b) {
      action = b.getAttribute("data-filter-action");
      var all = document.querySelectorAll("[data-filter-action]");
      for (var i = 0; i < all.length; i++) { all[i].setAttribute("aria-pressed", String(all[i] === b)); }
      apply();
      return;
    }
    var a = ev.target.closest("a[href^='#']");
    if (a) { reveal(decodeURIComponent(a.getAttribute("href").slice(1))); }
  });
  var select = document.getElementById("filter-category");
  if (select) { select.addEventListener("change", function () { category = select.value; apply(); }); }
  window.addEventListener("hashchange", function () { reveal(location.hash.slice(1)); });
  if (location.hash) {
    reveal(location.hash.slice(1));
    var t = document.getElementById(location.hash.slice(1));
    if (t) { t.scrollIntoView(); }
  }
})();
"""


# sha256 of CSS and JS, as the Content-Security-Policy names them: constants, because loading hashlib costs a
# small conversion more than writing its page; tests/test_html_report.py recomputes them (edit CSS/JS -> update).
CSS_HASH = "'sha256-D6zCp88d0kyrVmWNlw/1rd13xTjkm+m3XXfEJTR+Lx0='"
JS_HASH = "'sha256-JsivlVFLgas+sElb23go270JJosKNbG303ZbzuMWoo4='"
CSP = (f"default-src 'none'; style-src {CSS_HASH}; script-src {JS_HASH}; img-src data:; "
       "base-uri 'none'; form-action 'none'")


def document(title: str, heading: str, meta: list, body: list, version: str = "",
             lines_of_what: str = "the original files") -> str:
    """The page: head (CSP, inline CSS), a header with `meta` (label, value) pairs, `body`, the inline script."""
    out = ['<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
           f'<meta http-equiv="Content-Security-Policy" content="{_e(CSP)}">\n',
           '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
           '<meta name="generator" content="torchport">\n<link rel="icon" href="data:,">\n',
           f"<title>{_e(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n",
           f'<header>\n<h1 id="title">{_e(heading)}</h1>\n<dl class="meta">\n']
    out += [f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>\n" for k, v in meta if v not in (None, "")]
    out.append("</dl>\n</header>\n")
    out += body
    out.append(f"<footer>written by torchport {_e(version)}; line numbers in the lists refer to "
               f"{_e(lines_of_what)}</footer>\n</main>\n")
    out.append(f"<script>{JS}</script>\n</body>\n</html>\n")
    return "".join(out)


def cards(items) -> str:
    """items: (key, label, value, kind); key goes to data-count."""
    out = ['<section class="cards" id="summary">\n']
    for key, label, value, kind in items:
        out.append(f'<div class="card k-{_e(kind)}" data-count="{_e(key)}"><div class="num">{_e(value)}</div>'
                   f'<div class="label">{_e(label)}</div></div>\n')
    out.append("</section>\n")
    return "".join(out)


def table(header, rows, cls="list", attrs="") -> str:
    """A plain table of already escaped cells."""
    out = [f'<table class="{cls}"{attrs}>\n<thead><tr>', "".join(f"<th>{_e(h)}</th>" for h in header),
           "</tr></thead>\n<tbody>\n"]
    out += ["<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>\n" for row in rows]
    out.append("</tbody>\n</table>\n")
    return "".join(out)


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


# ------------------------------------------------------------------ diffs and listings
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


def _code(text: str, cls: str = "") -> str:
    cut = len(text) > MAX_LINE_CHARS
    body = _e(text[:MAX_LINE_CHARS])
    if cls and text:
        body = f'<span class="{cls}">{body}</span>'
    return body + ('<span class="cut"> [line cut]</span>' if cut else "")


def inline_diff(a: str, b: str) -> tuple:
    """The two lines as HTML with the changed tokens (words, spaces, punctuation) in <span class="hl">."""
    if len(a) > MAX_LINE_CHARS or len(b) > MAX_LINE_CHARS:
        return _code(a, "hl"), _code(b, "hl")
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
    out, shown = [], 0   # shown: the last line already out
    for line in sorted(h for h in hot if 1 <= h <= n_lines):
        first, last = max(shown + 1, line - context), min(n_lines, line + context)
        if first > shown + 1:
            out.append(("gap", first - shown - 1, None))
        out += [("eq", i, i) for i in range(first, last + 1)]
        shown = max(shown, last)
    if out and shown < n_lines:
        out.append(("gap", n_lines - shown, None))
    return out


def _marks(findings, group=group_of, labels=_COUNTED) -> tuple:
    """CSS class and tooltip of a line number cell, from the findings on that line."""
    worst = max((group(f) for f in findings), key=_SEVERITY.get)
    tip = "\n".join(f"{f.rule} {labels[group(f)][0]}: " + (f.message or f.old or f.new) for f in findings[:8])
    return f" m-{worst}", f' title="{_e(tip)}"'


class Files:
    """The per-file sections of a page, and the anchors they define, under one row budget."""

    def __init__(self, category_of=lambda f: f.category, group=group_of, labels=_COUNTED):
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
        hot_old, hot_new = {}, {}
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
                           f'<td class="code">{_code(a[o - 1])}</td></tr>\n')
                continue
            if kind == "chg":
                left, right = inline_diff(a[o - 1], b[m - 1])
            else:
                left = _code(a[o - 1]) if o else ""
                right = _code(b[m - 1]) if m else ""
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


def finding_list(sid: str, title: str, note: str, findings: list, columns, files: Files, category_of,
                 side=lambda f: "o", attrs=lambda f: {}) -> str:
    """A filterable list: rows tr.finding with data-action (change|unsupported|advice|error) and data-category;
    columns: (header, f -> escaped cell HTML); the location cell links to the finding's line."""
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


def _action(f) -> str:
    return f'<span class="tag {group_of(f)}">{_e(f.action)}</span>'


def _what(f) -> str:
    from . import describe

    return f"<code>{_e(describe(f) if group_of(f) == 'change' else f.old)}</code>"


COLUMNS = (("Action", _action), ("Rule", lambda f: f'<span class="id">{_e(f.rule)}</span>'),
           ("Category", lambda f: _e(f.category)), ("Code", _what), ("Message", lambda f: _e(f.message)))


def _lists(findings, files, category_of, notes, side=lambda f: "o", columns=COLUMNS) -> list:
    """One list per action group, the ones to act on first."""
    order = ("unsupported", "advice", "error", "change")
    return [finding_list(f"list-{g}", GROUP_LABEL[g], notes.get(g, ""), [f for f in findings if group_of(f) == g],
                         columns, files, category_of, side) for g in order]


def write(folder, text: str) -> Path:
    path = Path(folder) / NAME
    writes.write_text(path, text)
    return path


# ------------------------------------------------------------------ convert
CONVERT_NOTES = {
    "unsupported": "No counterpart on the target: left unchanged, change these by hand.",
    "advice": "Left unchanged; check whether they need attention.",
    "error": "These files could not be converted and were copied unchanged.",
    "change": "Made by torchport; line numbers refer to the original files.",
}


def convert_html(result) -> str:
    from ..core.version import __version__

    s = result.summary()
    findings = result.findings
    files = Files()
    texts = getattr(result, "texts", None)
    for r in result.files:
        changed = r.status in ("converted", "created")
        if not changed and not r.findings:
            continue
        pair = texts(r) if texts else None
        old, new = pair if pair else (None, None)
        files.add(_e(r.path), r.findings, old, new, badges=(r.status,), hunks=getattr(r, "hunks", None))
    body = [cards([("files", "files", s["files"], "muted"), ("changes", "changes", s["changes"], "change"),
                   ("unsupported", "unsupported", s["unsupported"], "unsupported"),
                   ("advice", "to review", s["advice"], "advice"), ("errors", "errors", s["errors"], "error"),
                   ("lines", "lines", s["lines"], "muted")])]
    if findings:
        body.append(filters(findings, lambda f: f.category))
    body += _lists(findings, files, lambda f: f.category, CONVERT_NOTES)
    if files.count:
        body.append('<h2 id="files">Files</h2>\n<p class="sub">Original on the left, converted on the right; '
                    "unchanged stretches are folded.</p>\n")
        body.append(files.html())
    status = ", ".join(f"{k} {v}" for k, v in s["files_by_status"].items())
    meta = [("input", result.input), ("output", result.output or result.mode), ("mode", result.mode),
            ("backup", result.backup), ("files", f"{s['files']} ({status})"), ("started", result.started),
            ("time", f"{s['elapsed_seconds']} s")]
    return document(f"torchport convert: {result.target}", f"torchport conversion report: {result.target}",
                    meta, body, __version__)


# ------------------------------------------------------------------ analyze
def analysis_html(result) -> str:
    from ..core.version import __version__
    from ..analyze.api import TOUCHPOINT_GROUPS
    from .analysis import READINESS_HEADER, readiness_rows

    s = result.summary()

    def group(f):
        return TOUCHPOINT_GROUPS.get(f.category, f.category)

    touch = result.touchpoints()
    unsupported = [(t, f) for t in result.targets for f in result.unsupported(t)]
    review = [f for f in touch if f.action == ADVICE]
    errors = [f for f in result.common if f.action == ERROR]
    by_file: dict = {}
    for f in touch + [f for _, f in unsupported] + errors:
        by_file.setdefault(f.file, {})[id(f)] = f
    files = Files(group)
    source = getattr(result, "source", None)
    for rel in sorted(by_file):
        text = source(rel) if source else None
        files.add(_e(rel), list(by_file[rel].values()), text)

    body = [cards([("files", "files", s["files"], "muted"), ("python_files", "Python files", s["python_files"], "muted"),
                   ("lines", "lines", s["lines"], "muted"), ("touchpoints", "CUDA touchpoints", s["touchpoints"], "change"),
                   ("cuda_kernels", "CUDA kernels", s["cuda_kernels"], "advice"),
                   ("exported_ops", "exported ops", s["exported_ops"], "muted"), ("errors", "errors", s["errors"], "error")])]
    body.append('<section class="cards" id="grades">\n')
    for t in result.targets:
        r = result.readiness[t]
        body.append(f'<div class="card grade-{_e(r.grade)}" data-target="{_e(t)}" data-grade="{_e(r.grade)}">'
                    f'<div class="num grade grade-{_e(r.grade)}">{_e(r.grade)}</div>'
                    f'<div class="label">{_e(t)} &middot; effort <span class="effort">{r.effort:g}</span> fix units'
                    f'</div><div class="label drivers" title="what drives the grade">{_e(r.drivers_text())}</div>'
                    '</div>\n')
    body.append("</section>\n")
    body.append('<h2 id="readiness-title">Readiness per target</h2>\n<p class="sub">Automatic: changes torchport convert '
                "makes. Manual: unsupported APIs, replaceable CUDA-only packages, kernels a tool ports. Blocked: kernels "
                "to rewrite, inline PTX, packages with no replacement. Review: convert's advice findings (package "
                "imports aside), C++ items to look at, and optional code (imported only under try/except ImportError: "
                "never blocked). Effort = manual + review/4 + 10 &times; blocked, in fix units (1 = one manual API "
                "fix; relative, not hours); grade A &lt; 1 &le; B &lt; 10 &le; C &lt; 50 &le; D &lt; 200 &le; E.</p>\n")
    rows = []
    for row in readiness_rows(result):
        cells = [f'<td data-col="{_e(h.lower())}"' + (f' class="grade grade-{_e(c)}"' if h == "Grade" else "")
                 + f">{_e(c)}</td>" for h, c in zip(READINESS_HEADER, row)]
        rows.append(f'<tr data-target="{_e(row[0])}">' + "".join(cells) + "</tr>\n")
    body.append('<table class="list" id="readiness">\n<thead><tr>' + "".join(f"<th>{_e(h)}</th>" for h in READINESS_HEADER)
                + "</tr></thead>\n<tbody>\n" + "".join(rows) + "</tbody>\n</table>\n")
    if s["touchpoints_by_group"]:
        body.append('<h2 id="groups">Touchpoints by category</h2>\n')
        body.append(table(("Category", "Count"), [(_e(k), _e(v)) for k, v in s["touchpoints_by_group"].items()],
                          cls="list narrow", attrs=' id="touchpoint-groups"'))
    if result.native.kernels:
        body.append(f'<h2 id="kernels">CUDA kernels ({len(result.native.kernels)})</h2>\n')
        body.append(table(("File", "Kernel"), [(f"<code>{_e(f'{fl}:{ln}')}</code>", f"<code>{_e(n)}</code>")
                                               for fl, ln, n in result.native.kernels[:MAX_LIST_ROWS]]))
    shown = touch + [f for _, f in unsupported] + errors
    if shown:
        body.append(filters(shown, group))
    target_of = {id(f): t for t, f in unsupported}
    columns = (("Action", _action), ("Rule", lambda f: f'<span class="id">{_e(f.rule)}</span>'), ("Category", lambda f: _e(group(f))),
               ("Code", lambda f: f"<code>{_e(f.old)}</code>"), ("Note", lambda f: _e(f.message)))
    body.append(finding_list("list-unsupported", "Unsupported per target",
                             "What torchport convert would leave for each target: change these by hand.",
                             [f for _, f in unsupported],
                             (("Target", lambda f: _e(target_of.get(id(f), ""))),) + columns, files, group,
                             attrs=lambda f: {"target": target_of.get(id(f), "")}))
    body.append(finding_list("list-advice", "To review", "Left as is by convert; worth a look.", review,
                             columns, files, group))
    body.append(finding_list("list-error", "Errors", "Files that could not be analysed.", errors, columns, files, group))
    body.append(finding_list("list-touchpoints", "CUDA touchpoints", "Every place the project touches CUDA.", touch,
                             columns, files, group))
    if files.count:
        body.append('<h2 id="files">Code</h2>\n<p class="sub">Excerpts around the touchpoints.</p>\n')
        body.append(files.html())
    meta = [("input", result.input), ("targets", ", ".join(result.targets)), ("torch version", result.torch_version),
            ("files", f"{s['files']} ({s['python_files']} Python), {counted(s['lines'], 'line')}"),
            ("C++/CUDA", f"{counted(s['cuda_files'], 'CUDA file')}, {counted(s['cuda_kernels'], 'kernel')}, "
                         f"{counted(s['exported_ops'], 'exported op')}, "
                         f"{counted(s['extension_call_sites'], 'Python call site')}"),
            ("started", result.started), ("time", f"{s['elapsed_seconds']} s")]
    return document(f"torchport analyze: {Path(result.input).name}", f"torchport analysis: {result.input}", meta, body,
                    __version__)


# ------------------------------------------------------------------ port-ext
PORT_NOTES = {
    "unsupported": "No counterpart on the target: rewrite these by hand.",
    "advice": "Left as is; check them on the target (warp size, intrinsics, build settings).",
    "error": "Files that could not be read, and includes that no longer resolve.",
    "change": "References converted; line numbers refer to the original files (broken includes: to the ported file).",
}


def _new_side(f) -> bool:
    return f.rule == codes.TP957.id   # a broken include is reported in the ported file


def _port_category(f) -> str:
    return f.rule if f.category == "port" else f.category   # every port-ext rule has category "port"


def port_html(result) -> str:
    from ..core.version import __version__

    meta = [("input", result.input), ("output", result.output or result.mode), ("mode", result.mode),
            ("mapping", result.map_source + (f" + {', '.join(result.user_maps)}" if result.user_maps else "")),
            ("backup", result.backup)]
    title = f"torchport port-ext: {result.target}"
    if result.mode == "inventory":
        return document(title, title, meta, _inventory(result.inventory, result.target), __version__)
    t = result.totals()
    findings = result.findings
    files = Files(_port_category)
    texts = getattr(result, "texts", None)
    for r in result.files:
        if r.status != "ported" and not r.findings:
            continue
        pair = texts(r) if texts else None
        old, new = pair if pair else (None, None)
        name = _e(r.path) + (f" &rarr; {_e(r.output)}" if r.output != r.path else "")
        files.add(name, r.findings, old, new, badges=(r.status,), new_side=_new_side)
    body = [cards([("files", "files", t["files"], "muted"),
                   ("ported", "ported", t["files_by_status"].get("ported", 0), "change"),
                   ("renamed_files", "renamed", t["renamed_files"], "muted"),
                   ("converted_refs", "references converted", t["converted_refs"], "change"),
                   ("left_refs", "CUDA references left", t["left_refs"], "advice"),
                   ("unsupported", "unsupported", t["unsupported"], "unsupported"),
                   ("needs_review", "needs review", t["needs_review"], "advice"),
                   ("lines_changed", "lines changed", t["lines_changed"], "muted"),
                   ("includes_broken", "broken includes", t["includes_broken"], "error")])]
    if findings:
        body.append(filters(findings, _port_category))
    body += _lists(findings, files, _port_category, PORT_NOTES, side=lambda f: "n" if _new_side(f) else "o")
    converted, left = result.api_counts()
    if left:
        body.append('<h2 id="left">CUDA references left (no mapping)</h2>\n')
        body.append(table(("API", "Count"), [(f"<code>{_e(a)}</code>", _e(n)) for a, n in left.most_common(100)],
                          cls="list narrow"))
    if files.count:
        body.append('<h2 id="files">Files</h2>\n<p class="sub">Original on the left, ported on the right; '
                    "unchanged stretches are folded.</p>\n")
        body.append(files.html())
    return document(title, title, meta, body, __version__)


def _inventory(inv: dict, target: str) -> list:
    ops = inv["pybind_ops"] + [f"{ns}::{op}" for ns, names in inv["library_ops"].items() for op in names]
    body = [f'<p class="sub">CUDA kernels cannot be ported to {_e(target)} mechanically; this inventory lists what '
            "the rewrite covers.</p>\n",
            cards([("kernels", "kernels", len(inv["kernels"]), "advice"), ("cuda_files", "CUDA files", inv["cuda_files"], "muted"),
                   ("launches", "launch sites", len(inv["launches"]), "muted"), ("ops", "ops registered", len(ops), "muted"),
                   ("python_calls", "Python call sites", len(inv["python_calls"]), "muted")])]
    sections = (("kernels", "Kernels", ("File", "Kernel", "Signature"),
                 [(f"{k['file']}:{k['line']}", k["name"], k["signature"]) for k in inv["kernels"]]),
                ("launches", "Launch sites", ("File", "Kernel"), [(f"{x['file']}:{x['line']}", x["kernel"])
                                                                  for x in inv["launches"]]),
                ("ops", "Ops registered to Python", ("Op",), [(op,) for op in ops]),
                ("calls", "Python call sites", ("File", "Call"), [(f"{c['file']}:{c['line']}", c["call"])
                                                                  for c in inv["python_calls"]]))
    for sid, title, header, rows in sections:
        body.append(f'<h2 id="{sid}">{_e(title)} ({len(rows)})</h2>\n')
        body.append(table(header, [[f"<code>{_e(c)}</code>" for c in row] for row in rows[:MAX_LIST_ROWS]]))
    return body


# ------------------------------------------------------------------ migrate
MIGRATE_NAME = "migrate.html"
RISK_GROUP = {"fail": "unsupported", "review": "advice", "advice": "change"}   # a risk's colour and filter key
ROW_LINKS = 12                 # line links in a row's Where cell before "+N more"
_URL = re.compile(r"https?://[^\s;,)]+")


def _linked(text: str) -> str:
    """Escaped text whose URLs are links."""
    out, at = [], 0
    for m in _URL.finditer(text):
        out += [_e(text[at:m.start()]), f'<a href="{_e(m.group())}" rel="noreferrer">{_e(m.group())}</a>']
        at = m.end()
    return "".join(out) + _e(text[at:])


def migrate_html(result) -> str:
    """OUT/torchport-report/migrate.html: What's left (filterable by risk and kind, rows linked to excerpts of the
    migrated files), then what each step did, with links to its own report."""
    from types import SimpleNamespace

    from ..core.version import __version__
    from ..migrate import EFFORTS, RISK_TITLES, RISKS, rows

    labels = {RISK_GROUP[r]: (RISK_TITLES[r], RISK_TITLES[r]) for r in RISKS}
    labels["error"] = _COUNTED["error"]
    grouped = rows(result.items)
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
    c, k = result.convert.summary(), result.check.summary()
    body = [cards([("items", "items left", counts["items"], "muted"),
                   ("fail", RISK_TITLES["fail"], n["fail"], "unsupported"),
                   ("review", RISK_TITLES["review"], n["review"], "advice"),
                   ("advice", RISK_TITLES["advice"], n["advice"], "change"),
                   ("changes", "changes made", c["changes"], "change"),
                   ("exit", "exit status", result.exit_code, "error" if result.exit_code else "muted")])]
    kinds = Counter(i.kind for i in result.items)
    if result.items:
        body.append('<nav class="filters" id="filters" aria-label="filters">\n<span class="what">show</span>\n'
                    f'<button type="button" data-filter-action="" aria-pressed="true">all <span class="n">'
                    f'{len(result.items)}</span></button>\n')
        body += [f'<button type="button" data-filter-action="{RISK_GROUP[r]}" aria-pressed="false">'
                 f'{_e(RISK_TITLES[r])} <span class="n">{n[r]}</span></button>\n' for r in RISKS if n[r]]
        body.append('<label><span class="what">kind</span> <select id="filter-category">'
                    '<option value="">all kinds</option>'
                    + "".join(f'<option value="{_e(x)}">{_e(x)} ({m})</option>' for x, m in sorted(kinds.items()))
                    + "</select></label>\n</nav>\n")
    body.append(f'<h2 id="left">What\'s left</h2>\n<p class="sub">{_e(counted(counts["items"], "item"))} in '
                f'{_e(counted(len(grouped), "row"))}: items that differ only by line share a row. Ordered by risk. '
                "Lines are the migrated tree's; convert's report gives the project's own lines (they differ by the "
                "lines convert inserted; hover a line for both). Effort: "
                + _e("; ".join(f"{x} = {v}" for x, v in EFFORTS.items())) + ".</p>\n")
    if not result.items:
        body.append('<p class="note">Nothing: no CUDA code, kernel or advice is left for this target.</p>\n')
    number = 0
    for risk in RISKS:
        mine = [r for r in grouped if r.first.risk == risk]
        if not mine:
            continue
        body.append(f'<section class="findings" id="risk-{risk}">\n<h2>{_e(RISK_TITLES[risk].capitalize())} '
                    f'({sum(len(r.items) for r in mine)})</h2>\n<table class="list">\n<thead><tr><th>No.</th>'
                    "<th>Where</th><th>Item</th><th>Why it matters</th><th>Suggested fix</th><th>Effort</th>"
                    "</tr></thead>\n<tbody>\n")
        for r in mine:
            number += 1
            i = r.first
            fix = _e(i.fix) + (f'<div class="sub">source: {_linked(i.cite)}</div>' if i.cite else "")
            body.append(f'<tr class="finding" data-action="{RISK_GROUP[risk]}" data-category="{_e(i.kind)}" '
                        f'data-rule="{_e(i.rule)}" data-items="{len(r.items)}"><td class="num">{number}</td>'
                        f"<td>{_where(r, files, marks)}</td><td><code>{_e(r.item)}</code>"
                        + (f' <span class="id">({_e(i.rule)})</span>' if i.rule and i.rule not in r.item else "")
                        + f'</td><td class="msg">{_e(i.why)}</td><td>{fix}</td>'
                        f'<td><span class="tag status">{_e(i.effort)}</span></td></tr>\n')
        body.append("</tbody>\n</table>\n</section>\n")
    body.append('<h2 id="steps">Steps</h2>\n')
    v = result.verify
    steps = [("analyze", _e(f"{counted(result.analysis.summary()['touchpoints'], 'CUDA touchpoint')} in "
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
    body.append(table(("Step", "Result"), [(f'<span class="id">{name}</span>', text) for name, text in steps],
                      attrs=' id="step-table"'))
    if files.count:
        body.append('<h2 id="files">Code</h2>\n<p class="sub">The migrated files around each item.</p>\n')
        body.append(files.html())
    meta = [("input", result.input), ("output", result.output), ("target", f"{result.target} ({result.title})"),
            ("started", result.started), ("time", f"{result.elapsed:.2f} s")]
    return document(f"torchport migrate: {result.target}", f"torchport migrate: {result.target}", meta, body,
                    __version__, lines_of_what="the migrated tree (OUT)")


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
