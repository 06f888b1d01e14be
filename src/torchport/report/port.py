"""Writers for `torchport port-ext`, in the spirit of HIPIFY's statistics.

    port_report.md    totals, per-file table (converted / left / needs review / lines changed),
                      most frequent APIs, unsupported names, needs-review sites; or the inventory
                      (kernels, launch sites, exported ops, Python callers) for npu/mlu
    port_report.json  everything (schema_version 1)
    port_stats.csv    API, Replacement, Count, Status  (converted and left references)
    report.html       one self-contained page: totals, filterable lists, side-by-side diffs (html/port.py)
"""
from __future__ import annotations

import json
from pathlib import Path

from ..core import codes, writes
from ..core.files import REPORT_MARKER
from ..core.names import md_code, printable
from ..core.pipeline import PortedTree
from . import _csv, _table


def write_port(result: PortedTree, folder: Path) -> None:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    writes.write_text(folder / REPORT_MARKER, "written by torchport\n")
    writes.write_text(folder / "port_report.json", json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
    writes.write_text(folder / "port_report.md", markdown(result))
    converted, left = result.api_counts()
    mapping: dict = {}
    for f in result.findings:
        if f.rule in (codes.TP950.id, codes.TP951.id):
            mapping.setdefault(f.old, f.new)
    rows = [(api, mapping.get(api, ""), n, "converted") for api, n in converted.most_common()]
    rows += [(api, "", n, "left") for api, n in left.most_common()]
    rows += [(f.old, "", 1, "unsupported") for f in result.findings if f.rule == codes.TP952.id]
    writes.write_text(folder / "port_stats.csv", _csv(("API", "Replacement", "Count", "Status"), rows))
    from .html.layout import write
    from .html.port import port_html

    write(folder, port_html(result))


def markdown(result: PortedTree) -> str:
    out = [f"# torchport port-ext: {printable(result.target)}", "", f"- input: {md_code(result.input)}",
           f"- output: {md_code(result.output or result.mode)}"]
    if result.map_source:
        maps = ", ".join(md_code(m) for m in result.user_maps)
        out.append(f"- mapping: {md_code(result.map_source)}" + (f" + {maps}" if maps else ""))
    if result.mode == "inventory":
        return "\n".join(out + [""] + _inventory(result.inventory, result.target)) + "\n"
    t = result.totals()
    out += ["", "## Totals", ""]
    out += _table(("What", "Count"), [
        ("files", t["files"]), ("ported or renamed", t["files_by_status"].get("ported", 0)),
        ("renamed files", t["renamed_files"]), ("references converted", t["converted_refs"]),
        ("CUDA references left (no mapping)", t["left_refs"]), ("unsupported names", t["unsupported"]),
        ("needs review", t["needs_review"]), ("lines changed", t["lines_changed"]),
        ("project includes checked", t["includes_checked"]), ("includes that no longer resolve", t["includes_broken"])]) + [""]
    touched = [r for r in result.files if r.converted or r.left or r.review or r.output != r.path]
    if touched:
        out += ["## Files", ""]
        out += _table(("File", "Written as", "Converted", "Left", "Review", "Lines changed"),
                      [(r.path, r.output if r.output != r.path else "", sum(r.converted.values()),
                        sum(r.left.values()), r.review, r.lines_changed) for r in touched]) + [""]
    converted, left = result.api_counts()
    if converted:
        out += ["## Most converted", ""] + _table(("API", "Count"), converted.most_common(40)) + [""]
    if left:
        out += ["## Left as they are (no mapping)", ""] + _table(("API", "Count"), left.most_common(40)) + [""]
    broken = [f for f in result.findings if f.rule == codes.TP957.id]
    if broken:
        out += ["## Broken includes", ""]
        out += _table(("File", "Include", "Named before"), [(f"{f.file}:{f.line}", f.old, f.new) for f in broken]) + [""]
    review = [f for f in result.findings if f.rule in (codes.TP952.id, codes.TP955.id, codes.TP956.id) and f.action != "modify"]
    if review:
        out += ["## Needs review", ""]
        out += _table(("File", "Code", "Why"), [(f"{f.file}:{f.line}", f.old, f.message) for f in review[:300]]) + [""]
    return "\n".join(out) + "\n"


def _inventory(inv: dict, target: str) -> list:
    how = {"npu": "Ascend C operators (or existing torch_npu ops)", "mlu": "BANG C kernels (or existing torch_mlu ops)"}
    out = [f"CUDA kernels cannot be ported to {target} mechanically: they are rewritten as {how.get(target, 'native kernels')}.",
           "This inventory lists what that work covers.", "",
           f"## Kernels ({len(inv['kernels'])}) in {inv['cuda_files']} CUDA files", ""]
    out += _table(("File", "Kernel", "Signature"), [(f"{k['file']}:{k['line']}", k["name"], k["signature"])
                                                    for k in inv["kernels"]]) + [""]
    out += [f"## Launch sites ({len(inv['launches'])})", ""]
    out += _table(("File", "Kernel"), [(f"{x['file']}:{x['line']}", x["kernel"]) for x in inv["launches"]]) + [""]
    ops = inv["pybind_ops"] + [f"{ns}::{op}" for ns, names in inv["library_ops"].items() for op in names]
    out += [f"## Ops registered to Python ({len(ops)})", "", ", ".join(md_code(op) for op in ops) or "none", ""]
    out += [f"## Python call sites ({len(inv['python_calls'])})", ""]
    out += _table(("File", "Call"), [(f"{c['file']}:{c['line']}", c["call"]) for c in inv["python_calls"]]) + [""]
    return out
