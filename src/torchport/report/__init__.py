"""Report writers: they read a run's result (findings + summary) and never look at rules.

A conversion writes, into its report folder:
  report.md            human-readable: summary, then one row per change (Cambricon's
                       `No. | File | Description` layout, valid Markdown; the change's note
                       under its description), unsupported APIs, things to review, errors
  change_list.csv      File, Start Line, End Line, Operation Type, Message   (Ascend's columns)
  unsupported_api.csv  File, Start Line, End Line, OP, Tips                 (Ascend's columns)
  report.json          everything, versioned schema (schema_version)
  torchport.log        one line per file and per finding
  report.html          one self-contained page: summary, filterable lists, side-by-side diffs (html/convert.py)
"""
from __future__ import annotations

import json
from pathlib import Path

from ..core import writes
from ..core.csvfile import csv_text
from ..core.files import REPORT_MARKER
from ..core.finding import ADVICE, CHANGES, DELETE, ERROR, INSERT, MODIFY, UNSUPPORTED
from ..core.names import md_cell, md_code, printable
from ..core.pipeline import ConvertedTree
from ..core.words import counted
from .wording import describe

FILES = ("report.md", "change_list.csv", "unsupported_api.csv", "report.json", "torchport.log", "report.html")


def write_all(result: ConvertedTree, folder: Path) -> None:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    writes.write_text(folder / REPORT_MARKER, "written by torchport\n")
    writes.write_text(folder / "report.md", markdown(result))
    for name, text in (("change_list.csv", change_list_csv(result.findings)),
                       ("unsupported_api.csv", unsupported_csv(result.findings))):
        writes.write_text(folder / name, text)  # the CSV text has its own CRLFs
    writes.write_text(folder / "report.json", json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
    writes.write_text(folder / "torchport.log", log_text(result))
    from .html.convert import convert_html
    from .html.layout import write

    write(folder, convert_html(result))


# ------------------------------------------------------------ CSV
_csv = csv_text  # report CSVs: formulas neutralised (core/csvfile.py)


OPERATION = {INSERT: "INSERT", MODIFY: "MODIFY", DELETE: "DELETE"}


def change_list_csv(findings) -> str:
    rows = [(f.file, f.line, f.end_line, OPERATION[f.action], describe(f) + (f"; {f.message}" if f.message else ""))
            for f in findings if f.action in CHANGES]
    return _csv(("File", "Start Line", "End Line", "Operation Type", "Message"), rows)


def unsupported_csv(findings) -> str:
    rows = [(f.file, f.line, f.end_line, f.old, f.message) for f in findings if f.action == UNSUPPORTED]
    return _csv(("File", "Start Line", "End Line", "OP", "Tips"), rows)


# ------------------------------------------------------------ Markdown
def _table(header, rows) -> list:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return lines


def markdown(result: ConvertedTree) -> str:
    s = result.summary()
    findings = result.findings
    out = [f"# torchport conversion report: {printable(result.target)}", ""]
    out += [f"- input: {md_code(result.input)}",
            f"- output: {md_code(result.output or result.mode)}"]
    if result.backup:
        out.append(f"- backup of the originals: {md_code(result.backup)}")
    out += [f"- files: {s['files']} ({', '.join(f'{k} {v}' for k, v in s['files_by_status'].items())}), "
            f"lines of code inspected: {s['lines']}, time: {s['elapsed_seconds']} s", ""]
    out += ["## Summary", ""] + _table(("What", "Count"), [
        ("changes made", s["changes"]), ("unsupported APIs (left unchanged)", s["unsupported"]),
        ("to review (advice)", s["advice"]), ("files that could not be converted", s["errors"])]
        + ([("suppressed (`# torchport: ignore`, --select/--ignore; left as written)", s["suppressed"])]
           if s.get("suppressed") else [])) + [""]
    sections = (
        ("Changes", "Line numbers refer to the original files.", CHANGES,
         ("No.", "File", "Description", "Rule"), lambda f: (describe(f) + (f"\n{f.message}" if f.message else ""),
                                                           f.rule)),
        ("Unsupported (left unchanged)", "No counterpart on the target: change these by hand.", (UNSUPPORTED,),
         ("No.", "File", "API", "Tip", "Rule"), lambda f: (f.old, f.message, f.rule)),
        ("To review", "Left unchanged; check whether they need attention.", (ADVICE,),
         ("No.", "File", "Code", "Advice", "Rule"), lambda f: (f.old, f.message, f.rule)),
        ("Errors", "These files were copied unchanged.", (ERROR,),
         ("No.", "File", "Problem"), lambda f: (f.message,)),
        ("Suppressed", "Left as written: a `# torchport: ignore` comment or --select/--ignore says so.", None,
         ("No.", "File", "Description", "Rule"), lambda f: (describe(f), f.rule)),
    )
    for title, note, actions, header, cells in sections:
        rows = [f for f in findings if f.action in actions] if actions else list(result.suppressed)
        if not rows:
            continue
        out += [f"## {title} ({len(rows)})", "", note, ""]
        out += _table(header, [(i, f"{printable(f.file)}:{f.line}", *cells(f)) for i, f in enumerate(rows, 1)]) + [""]
    mentions = [r.path for r in result.files if r.mentions_cuda]
    if mentions:
        out += [f"## Other files that mention CUDA ({len(mentions)})", "",
                "Copied unchanged and not converted (documentation, configs, Dockerfiles, requirements...): "
                "check what they say.", ""] + [f"- {md_code(p)}" for p in mentions] + [""]
    if s["by_rule"]:
        out += ["## By rule", ""] + _table(("Rule", "Findings"), sorted(s["by_rule"].items())) + [""]
    return "\n".join(out)


def log_text(result: ConvertedTree) -> str:
    """torchport.log: one line per file and per finding (names and messages escaped: one line each)."""
    lines = [f"torchport convert --to {printable(result.target)} {printable(result.input)} ({result.mode})"]
    for r in result.files:
        lines.append(f"{r.status:10} {printable(r.path)}" + (f"  [{printable(r.message)}]" if r.message else ""))
        for f in r.findings:
            what = printable(describe(f) if f.action in CHANGES else f.old)
            lines.append(f"    {printable(f.file)}:{f.line}: {f.rule} {f.action}: {what}"
                         + (f" -- {printable(f.message)}" if f.message else ""))
        if r.trace:
            lines.extend("    | " + line for line in r.trace.rstrip().splitlines())
    s = result.summary()
    lines.append(f"done: {counted(s['files'], 'file')}, {counted(s['changes'], 'change')}, {s['unsupported']} "
                 f"unsupported, {s['advice']} to review, {counted(s['errors'], 'error')} in {s['elapsed_seconds']} s")
    return "\n".join(lines) + "\n"
