"""Writers for `torchport analyze`: analysis.md, analysis.json and Ascend-style CSVs.

    analysis.md                     readiness per target, touchpoints by group, extensions, packages
    analysis.json                   everything (schema_version 1)
    cuda_op_list.csv                every CUDA touchpoint: File, Start Line, End Line, OP, Tips
    unknown_api.csv                 torch.cuda names not in torch.cuda's API list (same columns)
    <target>/unsupported_api.csv    what convert would leave for that target (same columns)
    <target>/advice.csv             performance advice for that target: File, Line, Rule, Advice, Source
                                    (kb/advice.toml; each row names its source)
    report.html                     one self-contained page: grades, readiness, filterable lists, code (html/analyze.py)

The writers read the AnalysisResult only (and core.codes' categories, through assessment.py), never the analyze
command's module.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from ..core import codes, writes
from ..core.files import REPORT_MARKER
from ..core.names import md_code, printable
from ..core.pipeline import AssessedTree
from ..kb.packages import packages
from . import _csv, _table
from .assessment import READINESS_HEADER, TOUCHPOINT_GROUPS, readiness_rows, touchpoint_group

COLUMNS = ("File", "Start Line", "End Line", "OP", "Tips")


def _rows(findings, tips=lambda f: f.message):
    return [(f.file, f.line, f.end_line, f.old, tips(f)) for f in findings]


def write_analysis(result: AssessedTree, folder: Path) -> None:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    writes.write_text(folder / REPORT_MARKER, "written by torchport\n")
    touch = result.touchpoints()
    files = {
        "cuda_op_list.csv": _csv(COLUMNS, _rows(touch, lambda f: f"{touchpoint_group(f.category)}: "
                                                                 f"{f.message}".rstrip(": "))),
        "unknown_api.csv": _csv(COLUMNS, _rows(result.unknown_apis())),
    }
    from ..analyze.advice import COLUMNS as ADVICE_COLUMNS

    for t in result.targets:
        files[f"{t}/unsupported_api.csv"] = _csv(COLUMNS, _rows(result.unsupported(t)))
        files[f"{t}/advice.csv"] = _csv(ADVICE_COLUMNS, result.advice(t))
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        writes.write_text(path, text)
    # compact: the C encoder is several times faster than the indenting one on large results
    writes.write_text(folder / "analysis.json", json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
    writes.write_text(folder / "analysis.md", markdown(result))
    from .html.analyze import analysis_html
    from .html.layout import write

    write(folder, analysis_html(result))


def library_section(scan, targets) -> list:
    """Markdown lines: the installed libraries the project calls and the CUDA code on those paths."""
    if scan is None or not (scan.read or scan.missing):
        return []
    out = ["## Installed libraries the project calls", "",
           f"Looked up on `{printable(scan.interpreter)}`'s path (`--python PATH` for another interpreter): read "
           f"{', '.join(scan.read) or 'none'}" + (f"; not installed there: {', '.join(scan.missing)}"
                                                   if scan.missing else "")
           + (f"; {scan.unread} modules not read" if scan.unread else "") + ".", ""]
    rows = []
    for t in targets:
        for r in scan.reaches.get(t, []):
            rows.append((t, f"{printable(r.file)}:{r.line}", r.name, r.describe()))
    if rows:
        out += _table(("Target", "Used at", "Name", "CUDA code on its path (what convert would write there)"),
                      rows[:300]) + [""]
    else:
        out += ["No CUDA code on the paths the project calls.", ""]
    return out


def markdown(result: AssessedTree) -> str:
    s = result.summary()
    out = [f"# torchport analysis: {md_code(result.input)}", "",
           f"- files: {s['files']} ({s['python_files']} Python), lines read (C++ and configs too): {s['lines']}, "
           f"time: {s['elapsed_seconds']} s",
           f"- CUDA touchpoints: {s['touchpoints']}; CUDA source files: {s['cuda_files']}, kernels: {s['cuda_kernels']}, "
           f"exported extension ops: {s['exported_ops']} ({s['extension_call_sites']} Python call sites)"]
    if result.torch_version:
        out.append(f"- torch version of the project: {result.torch_version}")
    out += ["", "## Readiness per target", "",
            "Automatic: changes `torchport convert` makes. Manual: unsupported APIs, CUDA-only packages the target "
            "can replace, and CUDA kernels a tool ports (musa). Blocked: kernels that must be rewritten, inline PTX, "
            "packages with no replacement. Review: convert's advice findings (package imports aside: they count per "
            "package), C++ items to look at, and optional code (kernels, PTX and CUDA-only packages imported only "
            "under try/except ImportError: the project runs without them, so they never block). "
            "Effort = manual + review/4 + 10 x blocked, in fix units (1 = one manual API fix; relative, not hours); "
            "grade A < 1 <= B < 10 <= C < 50 <= D < 200 <= E.", ""]
    out += _table(READINESS_HEADER, readiness_rows(result)) + [""]
    out += ["What drives the effort (count, what, fix units), largest first:", ""]
    out += [f"- {t}: " + ("; ".join(f"{n} {what} = {u:g}" for n, what, u in r.drivers()) or "nothing counted")
            for t, r in result.readiness.items()] + [""]
    out += ["## Touchpoints by category", ""]
    out += _table(("Category", "Count"), sorted(s["touchpoints_by_group"].items())) + [""]
    for group in sorted(set(TOUCHPOINT_GROUPS.values())):
        rows = [f for f in result.touchpoints() if TOUCHPOINT_GROUPS.get(f.category) == group]
        if not rows:
            continue
        out += [f"### {group} ({len(rows)})", ""]
        out += _table(("File", "Code", "Note"), [(f"{printable(f.file)}:{f.line}", f.old, f.message)
                                                 for f in rows[:200]])
        if len(rows) > 200:
            out.append(f"\n... and {len(rows) - 200} more in cuda_op_list.csv")
        out.append("")
    pkgs = [f for f in result.common if f.rule in (codes.TP908.id, codes.TP909.id)]
    if pkgs:
        out += ["## CUDA-only and CUDA-first packages", ""]
        kb = packages()
        names = sorted({p.name for p in (result.package_of(f) for f in pkgs) if p is not None})
        rows = []
        for name in names:
            pkg = next(p for p in kb.packages if p.name == name)
            uses = [f for f in pkgs if (result.package_of(f) or pkg).name == name]
            per_target = "; ".join(f"{t}: {pkg.targets[t]['instead']}" for t in result.targets if t in pkg.targets)
            rows.append((name, pkg.kind, len(uses), pkg.instead + (f" | per target: {per_target}" if per_target else "")))
        out += _table(("Package", "Kind", "Uses", "Instead"), rows) + [""]
    out += library_section(result.libraries, result.targets)
    out += ["## Performance advice per target", "",
            "What to change so the code runs well on the target (DataLoader settings, environment variables, "
            "dynamic shapes, copies, the vendor's fused APIs, TF32/HF32, memory format): `<target>/advice.csv`, "
            "each row with its source. Not counted in the grade.", ""]
    out += _table(("Target", "Advice", "Rules"), [
        (t, len(rows), ", ".join(f"{rule} {n}" for rule, n in sorted(Counter(r[2] for r in rows).items())) or "-")
        for t, rows in ((t, result.advice(t)) for t in result.targets)]) + [""]
    for t in result.targets:
        unsupported = result.unsupported(t)
        out += [f"## {t}: {len(unsupported)} unsupported", ""]
        data = result.data.get(t, {})
        out.append(f"API data: {data.get('api')}; operator data: {data.get('ops')}"
                   + (f" ({data['note']})" if data.get("note") else ""))
        out.append("")
        if unsupported:
            counts = Counter(f.old for f in unsupported)
            out += _table(("API", "Uses", "Tip"), [(api, n, next(f.message for f in unsupported if f.old == api))
                                                   for api, n in counts.most_common(50)]) + [""]
    return "\n".join(out) + "\n"
