"""`torchport check`: fail when code still needs converting for a target (CI, pre-commit). Read-only.

The findings are `convert`'s own, produced exactly as `torchport analyze`
produces them for one target: the same scanner (analyze/scan.py) runs each
Python or shell file through the target's converter in find-only mode.

    problem = a change convert would make (insert / modify / delete), an API the
              target does not have (unsupported), or a file that cannot be read
              or parsed (error)                                  -> exit 1
    note    = advice: code convert leaves as is that may need a look -> no failure

Findings recorded in a baseline (`--write-baseline`) are suppressed by
`--baseline`.  A finding's fingerprint is its file, rule, code text (`old`,
whitespace-normalised) and occurrence counter among findings with the same
three, never its line: it survives unrelated edits above it.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Union

from ..analyze.scan import FileScan, guarded_scan, init_worker
from ..backends import Target, load_target
from ..converter import config
from ..converter.project import facts
from ..converter.run import kind_of
from ..core import codes, parallel, writes
from ..core import files as tree
from ..core.errors import UsageError
from ..core.finding import ADVICE, CHANGES, CUDA_ONLY_PATH, ERROR, KEPT_BRANCH, UNSUPPORTED, Finding, one_line
from ..core.names import printable
from ..core.suppress import Selection
from ..core.version import __version__
from ..core.words import counted

SCHEMA_VERSION = 1            # of `--format json`
BASELINE_VERSION = 1          # of baseline files
CHECKED_KINDS = ("python", "shell", "notebook")   # what convert rewrites; every other file is copied unchanged


# Findings that do not fail on a normal path, though the target lacks what they name (migrate lists them "to
# review", and both commands exit alike): a torch.cuda name no API list knows (its support is unverified), a CUDA
# question kept as CUDA's (it answers no, so its branch does not run), and a name the target lacks on a path that
# does not run there (after a CUDA-only package's import, under a kept question).
REVIEW_RULES = frozenset({codes.TP117.id, codes.TP210.id})
OFF_PATH = frozenset({CUDA_ONLY_PATH, KEPT_BRANCH})   # the findings' reasons, never words of their messages


def is_problem(finding: Finding) -> bool:
    """Does this finding fail the check? (advice does not, nor what REVIEW_RULES and OFF_PATH say)"""
    if finding.action == ADVICE:
        return False
    return not (finding.action == UNSUPPORTED and (finding.rule in REVIEW_RULES or OFF_PATH.intersection(finding.reasons)))


def _norm(text: str) -> str:
    return " ".join(text.split())


def fingerprints(findings: Sequence[Finding]) -> list[str]:
    """The fingerprint of each finding (same order): sha256 of file, rule, normalised `old` and the
    occurrence counter of that triple in file order (line, then column); never the line itself."""
    seen: Counter[tuple[str, str, str]] = Counter()
    out = [""] * len(findings)

    def place(i: int) -> tuple[str, int, int, str, str, str, str]:
        f = findings[i]
        return f.file, f.line, f.col, f.rule, f.action, f.old, f.new

    order = sorted(range(len(findings)), key=place)
    for i in order:
        f = findings[i]
        key = (f.file, f.rule, _norm(f.old))
        n = seen[key]
        seen[key] += 1
        out[i] = hashlib.sha256("\0".join((*key, str(n))).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return out


@dataclass
class CheckResult:
    target: str
    inputs: list[str]
    root: str                                     # paths in findings are relative to it (posix)
    files: list[FileScan] = field(default_factory=list)       # the Python and shell files checked
    findings: list[Finding] = field(default_factory=list)     # reported (not suppressed), sorted
    suppressed: list[Finding] = field(default_factory=list)   # by the baseline
    ignored: list[Finding] = field(default_factory=list)      # by `# torchport: ignore` comments or rule selection
    prints: dict[int, str] = field(default_factory=dict)      # id(Finding) -> fingerprint (reported and suppressed)
    baseline: Optional[str] = None
    elapsed: float = 0.0
    target_ref: str = ""                          # the key of FileScan.per_target / .edits

    def fingerprint(self, finding: Finding) -> str:
        return self.prints[id(finding)]

    def is_problem(self, finding: Finding) -> bool:
        """Does this finding fail the check (the module's is_problem)?"""
        return is_problem(finding)

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if is_problem(f)]

    @property
    def notes(self) -> list[Finding]:
        return [f for f in self.findings if not is_problem(f)]

    @property
    def exit_code(self) -> int:
        return 1 if self.problems else 0

    def summary(self) -> dict[str, Any]:
        actions = Counter(f.action for f in self.findings)
        return {
            "files": len(self.files),
            "problems": len(self.problems),
            "changes": sum(actions[a] for a in CHANGES),
            "unsupported": actions[UNSUPPORTED],
            "errors": actions[ERROR],
            "notes": len(self.notes),
            "to_review": len(self.notes),  # = notes, under the word every command prints
            "suppressed": len(self.suppressed),
            "ignored": len(self.ignored),
            "elapsed_seconds": round(self.elapsed, 3),
        }

    def summary_line(self, verdict: Optional[str] = None) -> str:
        """The last line of the text report; `verdict` replaces its `-> ok` / `-> FAILED` end."""
        s = self.summary()
        line = (f"torchport check --to {self.target}: {counted(s['files'], 'file')}, "
                f"{counted(s['problems'], 'problem')} ({counted(s['changes'], 'change')}, {s['unsupported']} "
                f"unsupported, {counted(s['errors'], 'error')}), {s['notes']} to review")
        if self.baseline is not None:
            line += f", {s['suppressed']} suppressed by the baseline"
        if s["ignored"]:
            line += f", {s['ignored']} suppressed by `# torchport: ignore` or rule selection"
        return line + " -> " + (verdict or ("FAILED" if self.exit_code else "ok"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "torchport", "version": __version__},
            "command": "check",
            "target": self.target,
            "root": self.root,
            "inputs": self.inputs,
            "baseline": self.baseline,
            "exit_code": self.exit_code,
            "summary": self.summary(),
            "findings": [dict(f.to_dict(), level="problem" if is_problem(f) else "note",
                              fingerprint=self.fingerprint(f)) for f in self.findings],
        }

    def text(self, verdict: Optional[str] = None) -> str:
        lines = [f"{printable(f.file)}:{f.line}:{f.col + 1}: {f.rule} {f.action}: {printable(one_line(f))}"
                 for f in self.findings]
        return "\n".join(lines + [self.summary_line(verdict)]) + "\n"


# ------------------------------------------------------------------ inputs
def _inside(path: str, root: str) -> bool:
    try:
        rel = os.path.relpath(path, root)
    except ValueError:  # another drive
        return False
    return rel != ".." and not rel.startswith(".." + os.sep)


def find_root(inputs: Sequence[str], root: Optional[str] = None) -> str:
    """The folder paths are shown relative to: `root`, else the current folder when it holds
    every input (pre-commit and CI run from the repository root), else the inputs' common folder."""
    paths = [os.path.abspath(p) for p in inputs]
    if root is not None:
        r = os.path.abspath(root)
        if not os.path.isdir(r):
            raise UsageError(f"--root is not a folder: {root}")
        for given, p in zip(inputs, paths):
            if not _inside(p, r):
                raise UsageError(f"input {given} is not inside --root {root}")
        return r
    cwd = os.getcwd()
    if all(_inside(p, cwd) for p in paths):
        return cwd
    return os.path.commonpath([p if os.path.isdir(p) else os.path.dirname(p) for p in paths])


def _own_packages(root: str, dirs: list[str]) -> tuple[str, ...]:
    """The project's own top-level packages (not third-party imports): those of each folder
    given, as analyze finds them, and those at the root (pre-commit passes single files)."""
    own: set[str] = set()
    for d in dirs:
        own.update(tree.own_packages(tree.walk(Path(d))))
    for base in (Path(root), Path(root) / "src"):
        try:
            own.update(p.name for p in base.iterdir() if (p / "__init__.py").is_file())
        except OSError:
            pass
    return tuple(sorted(own))


def collect(inputs: Sequence[str], root: str, exclude: Sequence[str] = ()) -> list[tree.Entry]:
    """The Python and shell files under the inputs as scanner entries whose `rel` is relative to root;
    `-e GLOB` matches paths relative to the folder given or to the root, or file names."""
    patterns = tuple(exclude)
    entries: list[tree.Entry] = []
    seen: set[str] = set()
    excluded = 0
    for given in inputs:
        src = Path(given)
        base = os.path.relpath(os.path.abspath(given), root)
        for e in tree.walk(src, patterns):
            if e.kind in ("link", "link-outside"):
                continue  # symlinks: convert recreates them and never follows them
            where = Path(base if src.is_file() or e.rel == src.name and e.src == src else os.path.join(base, e.rel))
            rel = where.as_posix().removeprefix("./")
            checked = kind_of(rel) in CHECKED_KINDS or config.is_config(rel)
            if rel in seen or not checked and e.kind != "unreadable":  # a folder it cannot list may hold some
                continue
            if e.excluded or tree._excluded(rel, patterns):
                excluded += 1
                continue
            seen.add(rel)
            entries.append(tree.Entry(rel, e.src, e.kind, problem=e.problem))
    if not entries and excluded:   # a pass that checked nothing is no pass
        raise UsageError(f"every file to check ({excluded}) is excluded (`exclude` in [tool.torchport] or -e): "
                         "nothing was checked")
    return sorted(entries, key=lambda e: e.rel)


def _weight(entry: tree.Entry) -> int:
    try:
        return entry.src.stat().st_size
    except OSError:
        return 0


# ------------------------------------------------------------------ baselines
def load_baseline(path: Union[str, os.PathLike[str]]) -> tuple[set[str], object]:
    """(the fingerprints a baseline file records, its target); UsageError (exit 2) when it is missing or malformed."""
    if not os.path.exists(path):
        raise UsageError(f"baseline not found: {path}")
    try:
        data = json.loads(tree.read_data(path, "baseline").decode("utf-8"))
    except RecursionError:
        raise UsageError(f"malformed baseline {path}: nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise UsageError(f"malformed baseline {path}: not JSON ({e})") from None
    if not isinstance(data, dict) or data.get("tool") != "torchport check" or not isinstance(data.get("findings"), list):
        raise UsageError(f"malformed baseline {path}: not a torchport check baseline (write one with --write-baseline)")
    if data.get("baseline_version") != BASELINE_VERSION:
        raise UsageError(f"malformed baseline {path}: baseline_version {data.get('baseline_version')!r}, "
                         f"this torchport reads {BASELINE_VERSION}")
    prints: set[str] = set()
    for row in data["findings"]:
        fp = row.get("fingerprint") if isinstance(row, dict) else None
        if not isinstance(fp, str) or not fp:
            raise UsageError(f"malformed baseline {path}: a finding without a fingerprint")
        prints.add(fp)
    return prints, data.get("target")


def write_baseline(result: CheckResult, path: Union[str, os.PathLike[str]]) -> int:
    """Record the current findings (reported and suppressed; not errors: a file that cannot be
    parsed hides its findings, so it is never accepted). Returns how many were recorded."""
    rows = sorted(({"fingerprint": result.fingerprint(f), "file": f.file, "rule": f.rule, "action": f.action,
                    "old": f.old, "line": f.line} for f in result.findings + result.suppressed if f.action != ERROR),
                  key=lambda r: (r["file"], r["line"], r["rule"], r["fingerprint"]))
    data = {"tool": "torchport check", "baseline_version": BASELINE_VERSION, "torchport_version": __version__,
            "target": result.target, "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "note": "fingerprint = sha256(file, rule, code text, occurrence); line is informational",
            "findings": rows}
    write_output(result, path, json.dumps(data, indent=1, ensure_ascii=False) + "\n", "baseline")
    return len(rows)


def write_output(result: CheckResult, path: Union[str, os.PathLike[str]], text: str, what: str = "report") -> None:
    """Write a report or baseline: never over a file this check read (`-o train.py` would replace the
    user's code), never through a link at `path`, whole or not at all."""
    dest = Path(path)
    read = {os.path.realpath(os.path.join(result.root, s.path)) for s in result.files}
    if os.path.realpath(dest) in read:
        raise UsageError(f"{what} {path} is one of the files being checked; choose another name")
    try:
        writes.write_text(dest, text)
    except OSError as e:
        raise UsageError(f"cannot write {what} {path}: {e.strerror or e}") from None


# ------------------------------------------------------------------ the check
@dataclass(frozen=True)
class CheckRequest:
    """One check: files and folders, the (loaded) target, and how.  `root`: the folder paths are reported
    relative to (default: found from the inputs); `baseline`: a baseline file's path, whose findings are
    suppressed; `keep_edits` keeps convert's edits (FileScan.edits) for SARIF fixes; `selection` the codes
    reported (core/suppress.py; `# torchport: ignore` comments are always honoured)."""

    inputs: tuple[str, ...]
    target: Target
    exclude: tuple[str, ...] = ()
    root: Optional[str] = None
    baseline: Optional[str] = None
    jobs: Optional[int] = None
    keep_edits: bool = False
    selection: Optional[Selection] = None
    progress: Optional[Callable[[int, int], object]] = None   # progress(done, total)

    @classmethod
    def of(cls, inputs: Union[str, os.PathLike[str], Iterable[Union[str, os.PathLike[str]]]],
           target: Union[str, Target], **options: Any) -> CheckRequest:
        """A request from one input or a list of them, a target by name, alias or .toml path (loaded here) or a
        Target, and the fields above as keywords."""
        paths = tuple(str(p) for p in ([inputs] if isinstance(inputs, (str, os.PathLike)) else inputs))
        if not paths:
            raise UsageError("check needs at least one INPUT file or folder")
        for p in paths:
            if not os.path.exists(p):
                raise UsageError(f"input not found: {p}")
        if options.get("baseline") is not None:
            options["baseline"] = str(options["baseline"])
        options["exclude"] = tuple(options.get("exclude") or ())
        return cls(paths, target if isinstance(target, Target) else load_target(target), **options)


def check(request: CheckRequest) -> CheckResult:
    """Check the request's files and folders for its target; never writes anything."""
    inputs, t = list(request.inputs), request.target
    exclude, root, baseline, jobs = request.exclude, request.root, request.baseline, request.jobs
    keep_edits, progress, selection = request.keep_edits, request.progress, request.selection
    if not inputs:
        raise UsageError("check needs at least one INPUT file or folder")
    for p in inputs:
        if not os.path.exists(p):
            raise UsageError(f"input not found: {p}")
    ref = t.ref
    known: Optional[set[str]] = None
    if baseline is not None:
        known, made_for = load_baseline(baseline)
        if made_for not in (None, t.name):
            raise UsageError(f"baseline {baseline} was written for --to {made_for}, not {t.name}")
    start = time.perf_counter()
    top = find_root(inputs, root)
    entries = collect(inputs, top, exclude)
    own = _own_packages(top, [p for p in inputs if os.path.isdir(p)])
    scans = parallel.run(entries, init_worker, ((ref,), (), (), own, keep_edits, False, selection, facts(entries)),
                         guarded_scan, jobs or parallel.default_jobs(), _weight, progress)
    found = [f for s in scans for f in s.per_target.get(ref, []) + [c for c in s.common
                                                                     if c.action == ERROR or c.rule == codes.TP000.id]]
    ignored = [f for s in scans for f in s.suppressed.get(ref, [])]
    if selection:  # what the converter does not see: config files' values
        ignored += [f for f in found if not selection.allows(f.rule, f.file)]
        found = [f for f in found if selection.allows(f.rule, f.file)]
    found.sort(key=lambda f: (f.file, f.line, f.col, f.rule))
    prints = fingerprints(found)
    result = CheckResult(t.name, inputs, top, scans, prints={id(f): fp for f, fp in zip(found, prints)},
                         target_ref=ref, baseline=str(baseline) if baseline is not None else None,
                         ignored=sorted(ignored, key=lambda f: (f.file, f.line, f.col, f.rule)))
    for f, fp in zip(found, prints):
        if known is not None and f.action != ERROR and fp in known:
            result.suppressed.append(f)
        else:
            result.findings.append(f)
    result.elapsed = time.perf_counter() - start
    return result
