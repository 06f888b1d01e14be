"""Writers for `torchport migrate`: its one report folder, `OUT/torchport-report/`.

    migrate.html   the same as one page: What's left, filterable by risk and kind, linked to excerpts of OUT
    migrate.md     "What's left" first (ordered by risk: would fail, needs review, advice), then what was
                   converted, ported, checked and verified
    migrate.json   the same, versioned (schema_version 1)
    verify.log     the whole output of the --verify command (when there was one)
    convert/       convert's own reports (report.md, report.html, change_list.csv, ...) for this run
    port-ext/      port-ext's reports, when C++/CUDA sources were ported or listed

The risk classes, their titles, the effort classes and the rows of What's left come from the MigrateResult
(risks, risk_titles, efforts, rows()): the writers do not import the migrate command.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..core import files as tree
from ..core import writes
from ..core.errors import UsageError
from ..core.files import REPORT_MARKER
from ..core.names import md_code, printable
from ..core.words import counted
from . import _table, write_all
from .port import write_port

# What a migrate run writes in its report folder: these files, and the two folders of the steps' own reports.
OWN_FILES = ("migrate.json", "migrate.md", "migrate.html", "verify.log")
OWN_DIRS = ("convert", "port-ext")


def clear_earlier(folder: Path) -> None:
    """--force over an earlier migrate's report: remove what it wrote (the files its marker lists; for a marker
    that lists none, only OWN_FILES: the steps' own files are replaced by name), nothing a user saved beside
    them, nothing behind a link."""
    marker = folder / REPORT_MARKER
    try:
        listed = [ln for ln in marker.read_text(encoding="utf-8").splitlines()[1:] if ln.strip()]
    except (OSError, UnicodeError):
        return
    if not listed:   # an older marker, or a run that stopped before it listed its files
        listed = list(OWN_FILES)
    for rel in listed:
        path = tree.inside(folder, rel)
        if path is not None and path.is_file() and not path.is_symlink():
            path.unlink()
    for d in OWN_DIRS:
        if tree.inside(folder, d) is not None and (folder / d).is_dir():
            writes.remove_empty_dirs(folder / d)


def write_migrate(result, folder: Path) -> None:
    folder = Path(folder)
    for place in (folder, *(folder / d for d in OWN_DIRS)):
        if place.is_symlink():   # written through, the report would land wherever the link points
            raise UsageError(f"{place} is a link: migrate writes its report only into folders of its own")
    if (folder / REPORT_MARKER).is_file():  # a report of an earlier run (--force): what it wrote is replaced
        clear_earlier(folder)
    folder.mkdir(parents=True, exist_ok=True)
    writes.write_text(folder / REPORT_MARKER, "written by torchport; its files:\n")   # listed once written
    before = _files_of(folder)   # a user's notes in convert/ or port-ext/ are not this run's to list (or remove)
    write_all(result.convert, folder / "convert")
    if result.port is not None:
        write_port(result.port, folder / "port-ext")
    if result.verify is not None:
        writes.write_text(folder / "verify.log", result.verify.output)
    writes.write_text(folder / "migrate.json", json.dumps(result.to_dict(), indent=1, ensure_ascii=False) + "\n")
    writes.write_text(folder / "migrate.md", markdown(result))
    from .html.migrate import MIGRATE_NAME, migrate_html

    writes.write_text(folder / MIGRATE_NAME, migrate_html(result))
    after = _files_of(folder)
    written = [name for name in OWN_FILES if (folder / name).is_file()] + \
        sorted(rel for rel, seen in after.items() if before.get(rel) != seen)   # new, or replaced by this run
    writes.write_text(folder / REPORT_MARKER, "written by torchport; its files:\n" + "".join(f"{w}\n" for w in written))


def _files_of(folder: Path) -> dict:
    """{path under convert/ and port-ext/: (inode, mtime)} of the plain files there (a file this run writes is a new
    inode: writes replace files whole)."""
    out = {}
    for d in OWN_DIRS:
        if (folder / d).is_dir() and not (folder / d).is_symlink():
            for p in (folder / d).rglob("*"):
                if p.is_file() and not p.is_symlink():
                    info = p.lstat()
                    out[p.relative_to(folder).as_posix()] = (info.st_ino, info.st_mtime_ns)
    return out


def markdown(result) -> str:
    risks, titles = result.risks, result.risk_titles
    counts = result.counts()
    target = printable(result.target)
    out = [f"# torchport migrate: {target}", ""]
    by_risk = ", ".join(f"{counts['by_risk'][r]} {titles[r]}" for r in risks)
    steps = ", ".join(f"{k} {v}" for k, v in counts["by_source"].items())
    grouped = result.rows()
    out += ["## What's left", "",
            f"{counted(counts['items'], 'item')}: {by_risk} (by step: {steps or 'none'})"
            + (f", in {counted(len(grouped), 'row')} (items that differ only by line share one)"
               if len(grouped) != len(result.items) else "") + ". "
            "Ordered by risk. Lines are the migrated tree's "
            f"({md_code(result.output)}); `convert/report.md` gives the project's own lines, which differ by the "
            "lines convert inserted (`migrate.json` has both: `line`, `input_line`)."
            + (f" {counted(result.merged, 'finding')} reported by two steps "
               f"{'is' if result.merged == 1 else 'are'} counted once." if result.merged else ""), ""]
    if not result.items:
        out += ["Nothing: no CUDA code, kernel or advice is left for this target.", ""]
    sources: dict = {}
    n = 0
    for risk in risks:
        mine = [r for r in grouped if r.first.risk == risk]
        if not mine:
            continue
        out += [f"### {titles[risk].capitalize()} ({counted(sum(len(r.items) for r in mine), 'item')})", ""]
        table = []
        for r in mine:
            n += 1
            i = r.first
            fix = i.fix
            if i.cite:
                fix += f" [{sources.setdefault(i.cite, len(sources) + 1)}]"
            table.append((n, r.where, r.item, i.why, fix, i.effort))
        out += _table(("No.", "Where", "Item", f"Why it matters on {target}", "Suggested fix", "Effort"), table)
        out.append("")
    if sources:
        out += ["Sources of the advice:", ""] + [f"{k}. {printable(text)}" for text, k in sources.items()] + [""]
    if result.items:
        out += ["Effort: " + "; ".join(f"{k} = {v}" for k, v in result.efforts.items()) + ".", ""]
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
