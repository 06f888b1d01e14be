"""Writers for `torchport migrate`: its one report folder, `OUT/torchport-report/`.

    migrate.md     "What's left" first (ordered by risk: would fail, needs review, advice), then what was
                   converted, ported, checked and verified
    migrate.json   the same, versioned (schema_version 1)
    verify.log     the whole output of the --verify command (when there was one)
    convert/       convert's own reports (report.md, report.html, change_list.csv, ...) for this run
    port-ext/      port-ext's reports, when C++/CUDA sources were ported or listed
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from ..core import writes
from ..core.files import REPORT_MARKER
from ..core.names import md_code, printable
from ..core.words import counted
from . import _table, write_all
from .port import write_port


def write_migrate(result, folder: Path) -> None:
    folder = Path(folder)
    if (folder / REPORT_MARKER).is_file():  # a report of an earlier run (--force): replaced whole
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    writes.write_text(folder / REPORT_MARKER, "written by torchport\n")
    write_all(result.convert, folder / "convert")
    if result.port is not None:
        write_port(result.port, folder / "port-ext")
    if result.verify is not None:
        writes.write_text(folder / "verify.log", result.verify.output)
    writes.write_text(folder / "migrate.json", json.dumps(result.to_dict(), indent=1, ensure_ascii=False) + "\n")
    writes.write_text(folder / "migrate.md", markdown(result))


def markdown(result) -> str:
    from ..migrate import EFFORTS, RISK_TITLES, RISKS

    counts = result.counts()
    target = printable(result.target)
    out = [f"# torchport migrate: {target}", ""]
    by_risk = ", ".join(f"{counts['by_risk'][r]} {RISK_TITLES[r]}" for r in RISKS)
    steps = ", ".join(f"{k} {v}" for k, v in counts["by_source"].items())
    out += ["## What's left", "", f"{counts['items']} items: {by_risk} (by step: {steps or 'none'}). Ordered by "
            "risk; file:line is in the "
            f"migrated tree {md_code(result.output)}."
            + (f" {counted(result.merged, 'finding')} reported by two steps "
               f"{'is' if result.merged == 1 else 'are'} counted once." if result.merged else ""), ""]
    if result.items:
        out += _table(("No.", "Risk", "Where", "Item", f"Why it matters on {target}", "Suggested fix", "Effort"),
                      [(n, RISK_TITLES[i.risk], i.where, i.item, i.why, i.fix, i.effort)
                       for n, i in enumerate(result.items, 1)])
        out += ["", "Effort: " + "; ".join(f"{k} = {v}" for k, v in EFFORTS.items()) + ".", ""]
    else:
        out += ["Nothing: no CUDA code, kernel or advice is left for this target.", ""]
    s = result.convert.summary()
    out += ["## Converted", "", f"- input: {md_code(result.input)}", f"- output: {md_code(result.output)}",
            f"- files: {s['files']} ({', '.join(f'{k} {v}' for k, v in s['files_by_status'].items())}), lines: "
            f"{s['lines']}", f"- {counted(s['changes'], 'change')}, {s['unsupported']} unsupported, {s['advice']} to "
            f"review, {counted(s['errors'], 'error')} (line by line: {md_code('convert/report.md')}, {md_code('convert/report.html')})",
            ""]
    out += ["## Ported (C++/CUDA)", "", f"- {printable(result.port_note)}"]
    if result.port is not None:
        out.append(f"- details: {md_code('port-ext/port_report.md')}")
    out.append("")
    c = result.check.summary()
    out += ["## Checked", "", f"`torchport check {printable(result.output)} --to {target}` on the migrated tree: "
            f"{counted(c['files'], 'file')}, {counted(c['problems'], 'problem')} ({counted(c['changes'], 'change')}, "
            f"{c['unsupported']} unsupported, {counted(c['errors'], 'error')}), {c['notes']} to review. They are the rows from `check` above.", ""]
    out += ["## Verified", ""]
    v = result.verify
    if v is None:
        out += ["Not verified: no `--verify -- COMMAND` was given.", ""]
    else:
        out += [f"- command: {md_code(' '.join(v.command))}, run in the migrated tree on {printable(v.where)}",
                f"- exit status: {v.exit_code} ({v.verdict}) in {v.seconds:.1f} s"]
        if v.processes is not None:
            out.append(f"- processes that started the simulated device: {v.processes}")
            if v.fallback_ops:
                ops = ", ".join(f"{md_code(e['op'])} x{e['calls']}" for e in v.fallback_ops[:10])
                out.append(f"- ops the target lacks that ran on the CPU: {ops}")
            out.append("- simulated device: numerics are the CPU's, performance is not the device's")
        elif v.off_target:
            out.append(f"- ran on this machine's PyTorch: no {target} device and no simulator here, so this shows "
                       f"the code runs, not that it runs on {target}")
        out += [f"- last lines of its output (all of it: {md_code('verify.log')}):", "", "```"]
        out += [printable(line) for line in v.tail] + ["```", ""]
    return "\n".join(out)
