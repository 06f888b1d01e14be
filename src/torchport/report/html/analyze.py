"""report.html of `torchport analyze`: summary cards, a grade per target, the readiness table, touchpoints by
category, kernels, the filterable finding lists, and code excerpts around the touchpoints."""
from __future__ import annotations

from pathlib import Path

from ...core.finding import ADVICE, ERROR
from ...core.pipeline import AssessedTree
from ...core.version import __version__
from ...core.words import counted
from ..assessment import READINESS_HEADER, readiness_rows, touchpoint_group
from .files import Files
from .findings import MAX_LIST_ROWS, RowFormat, action_cell, filters, finding_list
from .layout import _e, cards, document, table


def analysis_html(result: AssessedTree) -> str:
    """The page of an AnalysisResult; file texts come through its `source(relative path)`."""
    s = result.summary()

    def group(f):
        return touchpoint_group(f.category)

    touch = result.touchpoints()
    unsupported = [(t, f) for t in result.targets for f in result.unsupported(t)]
    review = [f for f in touch if f.action == ADVICE]
    errors = [f for f in result.common if f.action == ERROR]
    by_file: dict = {}
    for f in touch + [f for _, f in unsupported] + errors:
        by_file.setdefault(f.file, {})[id(f)] = f
    files = Files(group)
    for rel in sorted(by_file):
        text = result.source(rel)
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
    columns = (("Action", action_cell), ("Rule", lambda f: f'<span class="id">{_e(f.rule)}</span>'),
               ("Category", lambda f: _e(group(f))), ("Code", lambda f: f"<code>{_e(f.old)}</code>"),
               ("Note", lambda f: _e(f.message)))
    row_format = RowFormat(columns, group)
    per_target = RowFormat((("Target", lambda f: _e(target_of.get(id(f), ""))),) + columns, group,
                           attrs=lambda f: {"target": target_of.get(id(f), "")})
    body.append(finding_list("list-unsupported", "Unsupported per target",
                             "What torchport convert would leave for each target: change these by hand.",
                             [f for _, f in unsupported], files, per_target))
    body.append(finding_list("list-advice", "To review", "Left as is by convert; worth a look.", review, files, row_format))
    body.append(finding_list("list-error", "Errors", "Files that could not be analysed.", errors, files, row_format))
    body.append(finding_list("list-touchpoints", "CUDA touchpoints", "Every place the project touches CUDA.", touch,
                             files, row_format))
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
