"""`torchport.convert(...)`: the Python API behind `torchport convert`, returning a ConvertResult."""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from .. import __version__
from ..core import files as tree
from ..core.errors import UsageError
from ..core.finding import ADVICE, CHANGES, ERROR, UNSUPPORTED
from ..core.parallel import default_jobs
from .run import Converter, run_jobs, timer

SCHEMA_VERSION = 1


@dataclass
class ConvertResult:
    """What a conversion did: per-file results, all findings, where things were written."""

    target: str
    input: str
    output: Optional[str]
    report_dir: Optional[str]
    mode: str                         # write | in-place | diff | dry-run
    files: list = field(default_factory=list)   # [FileResult]
    elapsed: float = 0.0
    backup: Optional[str] = None
    rule_files: list = field(default_factory=list)
    started: str = ""

    @property
    def findings(self) -> list:
        return [f for r in self.files for f in r.findings]

    @property
    def diff(self) -> str:
        return "".join(r.diff for r in self.files)

    def summary(self) -> dict:
        files = Counter(r.status for r in self.files)
        actions = Counter(f.action for f in self.findings)
        return {
            "files": len(self.files),
            "files_by_status": dict(sorted(files.items())),
            "python_files": sum(1 for r in self.files if r.kind == "python"),
            "lines": sum(r.lines for r in self.files),
            "changes": sum(actions[a] for a in CHANGES),
            "unsupported": actions[UNSUPPORTED],
            "advice": actions[ADVICE],
            "errors": actions[ERROR],
            "by_rule": dict(sorted(Counter(f.rule for f in self.findings).items())),
            "elapsed_seconds": round(self.elapsed, 3),
        }

    def to_dict(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "torchport", "version": __version__},
            "command": "convert",
            "started": self.started,
            "target": self.target,
            "input": self.input,
            "output": self.output,
            "report_dir": self.report_dir,
            "backup": self.backup,
            "mode": self.mode,
            "rule_files": self.rule_files,
            "summary": self.summary(),
            "files": [{"path": r.path, "kind": r.kind, "status": r.status, "lines": r.lines,
                       "message": r.message} for r in self.files],
            "findings": [f.to_dict() for f in self.findings],
        }


def convert(path, target: str, output=None, *, rules: Sequence[str] = (), exclude: Sequence[str] = (),
            launch: Optional[str] = None, jobs: Optional[int] = None, in_place: bool = False,
            diff: bool = False, dry_run: bool = False, force: bool = False, report_dir=None,
            write_reports: Optional[bool] = None, progress=None) -> ConvertResult:
    """Convert a file or directory for `target` (a bundled target name or a .toml file).

    Default: a mirrored tree `<name>_<target>` next to the input and reports in
    `<output>_report/`.  `in_place` rewrites the input and keeps a backup; `diff`
    and `dry_run` write nothing (reports only if `report_dir` is given).
    """
    if sum(map(bool, (in_place, diff, dry_run))) > 1:
        raise UsageError("choose only one of --in-place, --diff, --dry-run")
    src = Path(path)
    if not src.exists():
        raise UsageError(f"input not found: {src}")
    conv = Converter(target, rules)  # validates the target and the rule files early
    target_name = conv.target.name
    mode = "in-place" if in_place else "diff" if diff else "dry-run" if dry_run else "write"
    out = None
    if mode == "write":
        out = Path(output) if output else tree.default_output(src, target_name)
    elif output and mode != "in-place":
        raise UsageError(f"-o/--output does not go with --{mode}")
    if write_reports is None:
        write_reports = mode in ("write", "in-place") or report_dir is not None
    reports = None
    if write_reports:
        reports = Path(report_dir) if report_dir else tree.default_report_dir(src, out, target_name)
    tree.check_layout(src, out, reports, force)

    launch_rel = None
    if launch:
        lp = Path(launch)
        candidates = [lp, src / lp] if src.is_dir() else [lp]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            raise UsageError(f"launch script not found: {launch}")
        try:
            launch_rel = found.resolve().relative_to(src.resolve()).as_posix() if src.is_dir() else src.name
        except ValueError:
            raise UsageError(f"launch script {launch} is not inside the input") from None

    clock = timer()
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    entries = list(tree.walk(src, tuple(exclude)))
    backup = tree.backup_dir(src) if mode == "in-place" else None
    jobs_list = []
    made = set()
    for e in entries:
        dst = bak = None
        if out is not None:
            dst = out / e.rel if src.is_dir() else out
            parent = dst.parent
            if parent not in made:
                parent.mkdir(parents=True, exist_ok=True)
                made.add(parent)
        if backup is not None:
            bak = backup / e.rel if src.is_dir() else backup / src.name
        jobs_list.append((e, dst, bak))
    if out is not None and src.is_dir():
        out.mkdir(parents=True, exist_ok=True)
    target_ref = str(target) if str(target).endswith(".toml") else target_name
    results = run_jobs(jobs_list, target_ref, tuple(rules), launch_rel, mode, jobs or default_jobs(), progress,
                       tree.own_packages(entries))
    result = ConvertResult(target_name, str(src), str(out) if out else None, str(reports) if reports else None,
                           mode, results, clock(), str(backup) if backup and backup.exists() else None,
                           list(conv.user.paths), started)
    if reports is not None:
        from ..report import write_all

        write_all(result, reports)
    return result
