"""report.html of `torchport port-ext`: totals, the finding lists, CUDA references left, and each ported file
side by side; for npu/mlu (mode inventory) the kernels, launch sites, ops and Python callers to rewrite."""
from __future__ import annotations

from ...core import codes
from ...core.pipeline import PortedTree
from ...core.version import __version__
from .files import Files
from .findings import MAX_LIST_ROWS, filters, group_lists
from .layout import _e, cards, document, table

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


def port_html(result: PortedTree) -> str:
    """The page of a PortResult; the file texts come through its `texts(file result)`."""
    meta = [("input", result.input), ("output", result.output or result.mode), ("mode", result.mode),
            ("mapping", result.map_source + (f" + {', '.join(result.user_maps)}" if result.user_maps else "")),
            ("backup", result.backup)]
    title = f"torchport port-ext: {result.target}"
    if result.mode == "inventory":
        return document(title, title, meta, _inventory(result.inventory, result.target), __version__)
    t = result.totals()
    findings = result.findings
    files = Files(_port_category)
    for r in result.files:
        if r.status != "ported" and not r.findings:
            continue
        pair = result.texts(r)
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
    body += group_lists(findings, files, _port_category, PORT_NOTES, side=lambda f: "n" if _new_side(f) else "o")
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
