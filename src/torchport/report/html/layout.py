"""The page every report.html (and migrate.html) is built on: escaping, the head with its Content-Security-Policy,
the inline style and script, the header, and the small pieces every page uses (summary cards, plain tables).

The CSS and the script are files of the package (report/assets/, package data in pyproject.toml).  They go inline,
so a page is one self-contained file, and the page's Content-Security-Policy allows exactly them, by their sha256,
computed here from the text written: nothing else runs or loads (no network, no remote fonts, no injected script).
"""
from __future__ import annotations

import base64
import hashlib
from functools import cache
from pathlib import Path

from ...core import writes

NAME = "report.html"
ASSETS = Path(__file__).resolve().parents[1] / "assets"   # report/assets


def escape(text: str, quote: bool = True) -> str:
    """html.escape, without importing `html` and its entity table: & < > (and " ') as character references."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace('"', "&quot;").replace("'", "&#x27;") if quote else text


def _e(value) -> str:
    return escape(str(value), quote=True)


def csp_hash(text: str) -> str:
    """How a Content-Security-Policy names an inline <style> or <script> whose text is `text`."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def inline(name: str) -> str:
    """The text of the inline element made of the asset `name`: a line break, then the file (read with its line
    ends as \\n, so the text and its hash do not depend on how the file was checked out)."""
    return "\n" + (ASSETS / name).read_text(encoding="utf-8")


@cache
def assets() -> tuple:
    """(style, script, Content-Security-Policy) of every page, read and hashed once per process."""
    style, script = inline("report.css"), inline("report.js")
    csp = (f"default-src 'none'; style-src {csp_hash(style)}; script-src {csp_hash(script)}; img-src data:; "
           "base-uri 'none'; form-action 'none'")
    return style, script, csp


def document(title: str, heading: str, meta: list, body: list, version: str = "",
             lines_of_what: str = "the original files") -> str:
    """The page: head (CSP, inline CSS), a header with `meta` (label, value) pairs, `body`, the inline script."""
    style, script, csp = assets()
    out = ['<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
           f'<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">\n',
           '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
           '<meta name="generator" content="torchport">\n<link rel="icon" href="data:,">\n',
           f"<title>{_e(title)}</title>\n<style>{style}</style>\n</head>\n<body>\n<main>\n",
           f'<header>\n<h1 id="title">{_e(heading)}</h1>\n<dl class="meta">\n']
    out += [f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>\n" for k, v in meta if v not in (None, "")]
    out.append("</dl>\n</header>\n")
    out += body
    out.append(f"<footer>written by torchport {_e(version)}; line numbers in the lists refer to "
               f"{_e(lines_of_what)}</footer>\n</main>\n")
    out.append(f"<script>{script}</script>\n</body>\n</html>\n")
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


def write(folder, text: str) -> Path:
    path = Path(folder) / NAME
    writes.write_text(path, text)
    return path
