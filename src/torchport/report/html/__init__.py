"""report.html: one self-contained page per convert / analyze / port-ext run, and migrate's migrate.html.

    layout.py     the page: escaping, head with its Content-Security-Policy (hashes of the assets), cards, tables
    findings.py   action groups, the filter bar, the filterable finding lists
    diff.py       lines, side-by-side rows, changed words, folding (pure functions of the texts)
    files.py      the per-file sections (diffs, excerpts) and their anchors, under one row budget
    convert.py, analyze.py, port.py, migrate.py   one writer per command, over the above
    ../assets/    report.css and report.js, inlined into every page (package data)

A writer reads the result object its command returns (and the file texts through it: `texts()`, `source()`),
never the command's module.  Every piece of user text goes through `escape`.  The names below are the ones other
code and the tests use.
"""
from .analyze import analysis_html
from .convert import convert_html
from .diff import _TOKEN, CONTEXT, _from_hunks, align, collapse, excerpts, inline_diff, lines_of
from .findings import GROUP, GROUPS, group_of
from .layout import NAME, assets, csp_hash, document, escape, write
from .migrate import _URL, MIGRATE_NAME, migrate_html
from .port import port_html

__all__ = ["CONTEXT", "GROUP", "GROUPS", "MIGRATE_NAME", "NAME", "_TOKEN", "_URL", "_from_hunks", "align",
           "analysis_html", "assets", "collapse", "convert_html", "csp_hash", "document", "escape", "excerpts",
           "group_of", "inline_diff", "lines_of", "migrate_html", "port_html", "write"]
