"""report.html of `torchport convert`: summary cards, the finding lists with their filters, and each changed file
side by side (files left unchanged: excerpts around their findings)."""
from __future__ import annotations

from ...core.pipeline import ConvertedTree
from ...core.version import __version__
from .files import Files
from .findings import filters, group_lists
from .layout import _e, cards, document

CONVERT_NOTES = {
    "unsupported": "No counterpart on the target: left unchanged, change these by hand.",
    "advice": "Left unchanged; check whether they need attention.",
    "error": "These files could not be converted and were copied unchanged.",
    "change": "Made by torchport; line numbers refer to the original files.",
}


def convert_html(result: ConvertedTree) -> str:
    """The page of a ConvertResult; the file texts come through its `texts(file result)`."""
    s = result.summary()
    findings = result.findings
    files = Files()
    for r in result.files:
        changed = r.status in ("converted", "created")
        if not changed and not r.findings:
            continue
        pair = result.texts(r)
        old, new = pair if pair else (None, None)
        files.add(_e(r.path), r.findings, old, new, badges=(r.status,), hunks=r.hunks)
    body = [cards([("files", "files", s["files"], "muted"), ("changes", "changes", s["changes"], "change"),
                   ("unsupported", "unsupported", s["unsupported"], "unsupported"),
                   ("advice", "to review", s["advice"], "advice"), ("errors", "errors", s["errors"], "error"),
                   ("lines", "lines", s["lines"], "muted")])]
    if findings:
        body.append(filters(findings, lambda f: f.category))
    body += group_lists(findings, files, lambda f: f.category, CONVERT_NOTES)
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
