"""`torchport migrate`: one project, one target, one output tree, one report.

It composes the other commands, in this order:

    analyze   the input, for the target (read-only): C++/CUDA sources, packages, performance advice
    convert   the input into OUT (convert's default: `<name>_<target>` beside it), writing no report of its own
    port-ext  the C++/CUDA sources of OUT, in place (only torchport's copies): ported for musa, listed for
              rewriting for npu/mlu; nothing when there are none, or only CPU C++
    check     OUT, as `torchport check OUT --to T` does: what is still CUDA in the Python that was written
    verify    optional: a command run in OUT on the simulated device (npu, mlu, musa) or on this machine

and returns a MigrateResult whose `items` are "What's left": every remaining item once, with file:line, why it
matters on this target, the fix and an effort class, ordered by risk.  How each kind of item is judged is the
table KINDS below (data, not branches); which kind a finding is comes from its code (the catalogue's `left_as`) or
its action.
The report itself (`OUT/torchport-report/`) is written a layer up, by report/migrate.py.
"""
from __future__ import annotations

import collections
import contextlib
import difflib
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Optional, Union, cast

from ...backends import Target
from ...core import codes
from ...core import files as tree
from ...core.errors import UsageError
from ...core.finding import (
    ADVICE,
    CHANGES,
    CUDA_ONLY_PATH,
    ERROR,
    KEPT_BRANCH,
    OPTIONAL_IMPORT,
    UNSUPPORTED,
    Finding,
    change_of,
)
from ...core.suppress import Selection
from ...core.words import counted
from ...porting.native import NATIVE_SUFFIXES, NativeScan

if TYPE_CHECKING:
    import io
    from types import FrameType

    from ...doctor.explain import KnownError, Match
    from ..analyze import AnalysisResult
    from ..check import CheckResult
    from ..convert import ConvertResult
    from ..port import PortResult

REPORT_FOLDER = "torchport-report"   # the one report folder, at the top of OUT
TAIL_LINES = 20                      # lines of the verify command's output kept in the report
ROW_LINES = 6                        # line numbers a report row names before "(+N more)"
SCHEMA_VERSION = 1

# Risk classes, in report order: what would fail on a normal path, then what needs a look, then advice.
RISKS = ("fail", "review", "advice")
RISK_TITLES = {"fail": "would fail on a normal path", "review": "to review", "advice": "advice (performance)"}
EFFORTS = {"small": "under an hour: one line or one call",
           "medium": "under a day: an API, package or build change, or a failure to diagnose",
           "large": "days: a kernel rewritten for the target"}

# kind -> (risk, effort, why it matters on {target}, suggested fix).  Templates take {target} (its title),
# {name}, {message}, {change}, {what}.
KINDS = {
    "change": ("fail", "small", "still CUDA code that convert rewrites: on {target} this line fails or runs on the "
               "wrong device", "{change} (run `torchport convert` on the file again, or edit it)"),
    "unsupported": ("fail", "medium", "{target} has no counterpart: when the line runs, it fails or gives nothing "
                    "usable",
                    "{message}"),
    "cuda-only-path": ("review", "small", "{target} has no counterpart, but the line is on the path of a CUDA-only "
                       "package imported above it (TensorRT, CuPy...): that path runs only where the package "
                       "does, so the package's own item decides", "{message}"),
    "not-processed": ("fail", "medium", "torchport could not read or convert this file: whatever CUDA it uses is "
                      "left as it was", "{message}"),
    "kernel": ("fail", "large", "{target} cannot run CUDA kernels: the extension does not build, and importing its "
               "ops fails", "{message}"),
    "ptx": ("fail", "large", "inline NVIDIA PTX: no tool translates it for {target}", "rewrite the code around it "
            "without inline assembly"),
    "cuda-calls": ("fail", "medium", "CUDA runtime/library calls in C++ do not build for {target}", "{message}"),
    "port-unsupported": ("fail", "medium", "the mapping marks this name unsupported on {target}: the port does not "
                         "build or run as it is", "{message}"),
    "port-left": ("fail", "medium", "CUDA names the mapping does not know are left: the port does not build for "
                  "{target} as it is", "{message}"),
    "broken-include": ("fail", "small", "an include no longer resolves after porting: the extension does not build",
                       "{message}"),
    "blocked-package": ("fail", "large", "a CUDA-only package with no {target} replacement: it does not install or "
                        "import there", "{message}"),
    "verify-failed": ("fail", "medium", "the verify command failed: {message}", "read the output (verify.log in "
                      "the report folder); `torchport explain --file` matches known error messages"),
    "unknown-api": ("review", "small", "a torch.cuda name outside torch.cuda's public API list (private, removed "
                    "or misspelled): whether {target} has it is unverified, so this is not counted as a failure",
                    "look the name up in {target}'s package (a private helper often has a counterpart: "
                    "torch.cuda._sleep is torch.npu._sleep in recent torch_npu); `torchport rules {rule}`"),
    "own-target": ("review", "medium", "{message}", "run the project's own {target} path (its device option) and check "
                   "which branch it takes; keep a CUDA branch as it was with `# torchport: ignore` on its line"),
    "kept-branch": ("review", "medium", "{target} lacks it, but it runs only when a CUDA question that convert kept "
                    "says yes, which it does not on {target}: that path is not taken there (multi-GPU DataParallel, a "
                    "capability check)", "{message}; to use that path on {target}, convert the call, then the question"),
    "kept-question": ("review", "small", "a question whether CUDA is there, kept as CUDA's: on {target} it answers no, "
                      "so what it guards does not run there (nothing fails; the device goes unused): {message}",
                      "convert the call it names (its own row), then this test"),
    "note": ("review", "small", "{message}", "check that this line does what you want on {target} "
             "(`torchport rules {rule}` explains the finding)"),
    "port-review": ("review", "medium", "code no mapping ports faithfully to {target}", "{message}"),
    "native-review": ("review", "medium", "{what}", "{message}"),
    "package-swap": ("review", "medium", "a CUDA-first package: {target} has a replacement", "{message}"),
    "optional-package": ("review", "small", "a CUDA-only package imported only under try/except ImportError: the "
                         "project runs without it on {target}", "{message}"),
    "cuda-torch": ("review", "small", "a CUDA build of PyTorch is pinned: it is not {target}'s", "{message}"),
    "verify-traced": ("fail", "small", "the verify failed through this line: {message}", "{what}"),
    "known-error": ("fail", "medium", "the verify output holds a known error: {message}", "{what}"),
    "verify-unused": ("review", "small", "the verify command never started the simulated {target} device, so the "
                      "run proves nothing about it", "import the target's package in the entry script (convert "
                      "adds it to the launch script: `-l SCRIPT`)"),
    "verify-off-target": ("review", "small", "the verify command ran on this machine's PyTorch: no {target} device "
                          "and no simulator here, so it shows the code runs, not that it runs on {target}",
                          "run it on a {target} machine (`torchport doctor --to {name}` checks the setup)"),
    "optional-native": ("review", "medium", "an optional extension: every Python import of it is under try/except "
                        "ImportError and the project runs without it, but its CUDA code does not build for {target}",
                        "{message}; or leave it off on {target} (its fallback runs)"),
    "library": ("fail", "medium", "an installed library the project calls runs CUDA code on that path: on {target} "
                "it fails there, runs on the CPU, or guards nothing (an `autocast('cuda', enabled=False)` around "
                "fp32 math) ({message})", "pass the device where the call takes one, or "
                "run migrate with --runtime-shim (entry scripts import the run-time mapping), or convert the "
                "library itself"),
    "library-shimmed": ("review", "small", "an installed library the project calls runs CUDA code on that path "
                        "({message}); the run-time mapping --runtime-shim added to the entry scripts maps it on "
                        "{target}", "nothing, where a run on {target} (--verify) went through it"),
    "mentions-cuda": ("review", "small", "a file convert does not rewrite (docs, Dockerfile, config) mentions CUDA",
                      "read it and change what concerns the device"),
    "advice": ("advice", "small", "performance on {target}", "{message}"),
}

# Finding codes whose kind is not the one their action gives, from the catalogue (core/codes.py `left_as`):
# analyze's and port-ext's C++ findings, the CUDA-torch pin; of check's, a torch.cuda name no list knows (not known
# to fail) and a question kept as CUDA's (it answers no on the target; what it guards is reported on its own).
CODE_KINDS = {c.id: c.left_as for c in codes.CODES.values() if c.left_as}
# what convert says of a name the target lacks on a path that does not run there -> its kind (to review)
OFF_PATH_KINDS = {CUDA_ONLY_PATH: "cuda-only-path", KEPT_BRANCH: "kept-branch"}   # by the finding's reasons
ACTION_KINDS = {UNSUPPORTED: "unsupported", ERROR: "not-processed", ADVICE: "note",
                **{a: "change" for a in CHANGES}}


@dataclass
class Item:
    """One remaining item of "What's left"."""

    kind: str                 # a key of KINDS
    file: str                 # relative to OUT ("" for the project as a whole)
    line: int                 # in OUT's file (0: not a line)
    item: str                 # what it is: code text, a kernel's name, a command
    rule: str                 # the finding code, advice rule or "verify"
    source: str               # check | port-ext | analyze | convert | advice | verify
    why: str
    fix: str
    action: str = ""          # the finding's action, for check's findings
    cite: str = ""            # where the advice comes from (a document section or URL)
    input_line: int = 0       # the line in the project's own file (differs where convert inserted lines above)

    @property
    def risk(self) -> str:
        return KINDS[self.kind][0]

    @property
    def effort(self) -> str:
        return KINDS[self.kind][1]

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file and self.line else self.file or "(project)"

    def to_dict(self) -> dict[str, Any]:
        return {"risk": self.risk, "kind": self.kind, "file": self.file, "line": self.line, "item": self.item,
                "rule": self.rule, "source": self.source, "why": self.why, "fix": self.fix, "effort": self.effort,
                "action": self.action, "cite": self.cite, "input_line": self.input_line}


@dataclass
class Row:
    """Items that differ only by line and code text (one optional export path's 20 uses of `trt.`): one row of
    the report.  The counts stay counts of items."""

    items: list[Item]

    @property
    def first(self) -> Item:
        return self.items[0]

    @property
    def lines(self) -> list[tuple[int, int]]:
        """[(line, how many items on it)], in order."""
        return sorted(collections.Counter(i.line for i in self.items if i.line).items())

    @property
    def where(self) -> str:
        i = self.first
        if not i.file or not i.line:
            return i.where
        shown = [f"{n}" + (f" x{k}" if k > 1 else "") for n, k in self.lines]
        more = len(shown) - ROW_LINES
        return f"{i.file}:" + ", ".join(shown[:ROW_LINES]) + (f" (+{more} more)" if more > 0 else "")

    @property
    def item(self) -> str:
        return _one_line("; ".join(dict.fromkeys(i.item for i in self.items)))


def rows(items: list[Item]) -> list[Row]:
    """`items` (in report order) as Rows: items of one kind, file, rule and wording share a row, placed where
    the first of them was."""
    grouped: dict[tuple[str, str, str, str, str, str], list[Item]] = {}
    for i in items:
        grouped.setdefault((i.kind, i.file, i.rule, i.why, i.fix, i.cite), []).append(i)
    return [Row(group) for group in grouped.values()]


@dataclass
class Verify:
    command: list[str]
    where: str                # "simulated npu" | "this machine"
    exit_code: int
    output: str               # its output (stdout and stderr), bounded: see Captured
    processes: Optional[int] = None     # simulated: processes that started the device
    off_target: bool = False            # run on this machine for a target that is not this machine (xpu, mps...)
    fallback_ops: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def tail(self) -> list[str]:
        return self.output.splitlines()[-TAIL_LINES:]

    @property
    def verdict(self) -> str:
        """passed: exit 0 (on the simulated device, which a process started, or on the host for cpu); failed:
        non-zero exit; unverified: exit 0 without the simulated device ever starting, or off the target."""
        if self.exit_code != 0:
            return "failed"
        return "unverified" if self.processes == 0 or self.off_target else "passed"

    def to_dict(self) -> dict[str, Any]:
        return {"command": self.command, "where": self.where, "exit_code": self.exit_code, "verdict": self.verdict,
                "off_target": self.off_target,
                "processes": self.processes, "fallback_ops": self.fallback_ops, "tail": self.tail,
                "seconds": round(self.seconds, 2)}


@dataclass
class MigrateResult:
    target: str
    title: str
    input: str
    output: str
    report_dir: str
    analysis: AnalysisResult          # of the input
    convert: ConvertResult            # the input into OUT
    check: CheckResult                # of OUT
    port: Optional[PortResult] = None   # of OUT's C++/CUDA sources, or None (not run)
    port_note: str = ""               # what port-ext did, in words
    cpp_sources: int = 0
    verify: Optional[Verify] = None
    items: list[Item] = field(default_factory=list)
    merged: int = 0                   # items found twice (analyze and convert/check/port-ext), counted once
    runtime_shim: bool = False        # entry scripts import the run-time mapping (--runtime-shim)
    elapsed: float = 0.0
    started: str = ""
    # What's left's vocabulary (not fields), for the report writers: they read the result, not this module
    risks = RISKS
    risk_titles = RISK_TITLES
    efforts = EFFORTS

    def rows(self) -> list[Row]:
        """`items` as the report's rows (the module's rows())."""
        return rows(self.items)

    def counts(self) -> dict[str, Any]:
        by_risk = collections.Counter(i.risk for i in self.items)
        checked = [i for i in self.items if i.source == "check"]
        actions = collections.Counter(i.action for i in checked)
        return {"items": len(self.items), "by_risk": {r: by_risk[r] for r in RISKS},
                "by_source": dict(sorted(collections.Counter(i.source for i in self.items).items())),
                # the same numbers `torchport check OUT --to T` reports
                "check": {"problems": sum(1 for i in checked if i.risk == "fail"),
                          "changes": sum(actions[a] for a in CHANGES), "unsupported": actions[UNSUPPORTED],
                          "errors": actions[ERROR], "notes": sum(1 for i in checked if i.risk != "fail"),
                          "to_review": sum(1 for i in checked if i.risk != "fail")}}

    @property
    def exit_code(self) -> int:
        """1 while something would fail on a normal path (that includes a failed verify), else 0."""
        return 1 if any(i.risk == "fail" for i in self.items) else 0

    def to_dict(self) -> dict[str, Any]:
        from ...core.version import __version__

        c = self.convert.summary() if self.convert is not None else {}
        return {"schema_version": SCHEMA_VERSION, "tool": {"name": "torchport", "version": __version__},
                "command": "migrate", "started": self.started, "target": self.target, "input": self.input,
                "output": self.output, "report_dir": self.report_dir, "counts": self.counts(),
                "effort_classes": EFFORTS, "merged_duplicates": self.merged,
                "whats_left": [i.to_dict() for i in self.items],
                "converted": {k: c.get(k) for k in ("files", "files_by_status", "changes", "unsupported", "advice",
                                                    "to_review", "errors")},
                "ported": {"note": self.port_note, "cpp_sources": self.cpp_sources,
                           "mode": self.port.mode if self.port is not None else None,
                           "totals": self.port.totals() if self.port is not None and self.port.mode != "inventory"
                           else None},
                "checked": self.check.summary() if self.check is not None else None,
                "renamed": renamed_files(self),
                "verified": self.verify.to_dict() if self.verify is not None else None,
                "elapsed_seconds": round(self.elapsed, 3)}


# ------------------------------------------------------------------ the run
@dataclass(frozen=True)
class MigrateRequest:
    """One migration: the project folder at `input` for `target` into `output` (default: convert's,
    `<name>_<target>` beside it); `verify`: a command (argv) to run in the output afterwards, `echo` getting its
    output lines as they come; `python`: the interpreter whose installed libraries the project uses (default:
    this one); `runtime_shim`: entry scripts import the target's run-time mapping (for those libraries' CUDA
    code); `exclude` (globs) and `selection` (core/suppress.Selection): the project's settings, for every step."""

    input: Path
    target: Target                    # loaded once, and handed to every step
    output: Optional[Path] = None
    force: bool = False
    verify: Optional[tuple[str, ...]] = None
    jobs: Optional[int] = None
    echo: Optional[Callable[[str], None]] = None
    python: Optional[str] = None
    runtime_shim: bool = False
    exclude: tuple[str, ...] = ()
    selection: Optional[Selection] = None
    cache: bool = True                # convert takes unchanged files' results from its last run (reuse.py)

    @classmethod
    def of(cls, path: Union[str, os.PathLike[str]], target: Union[str, Target],
           output: Union[str, os.PathLike[str], None] = None, **options: Any) -> MigrateRequest:
        """A request from the keywords `torchport.migrate` takes (the fields above)."""
        from ...backends import load_target

        _project_folder(Path(path))   # said before an unknown target
        if options.get("verify") is not None:
            options["verify"] = tuple(options["verify"])
        options["exclude"] = tuple(options.get("exclude") or ())
        loaded = target if isinstance(target, Target) else load_target(target)
        return cls(Path(path), loaded, Path(output) if output else None, **options)


def _project_folder(src: Path) -> Path:
    """src, when it is a project folder migrate can write a report for; else a UsageError saying why."""
    if not src.is_dir():
        raise UsageError(f"migrate needs a project folder: {src}" + (" is a file" if src.exists() else " not found"))
    if (src / REPORT_FOLDER).exists():
        raise UsageError(f"{src / REPORT_FOLDER} exists in the project: it is where migrate writes its report; "
                         "rename it")
    return src


def migrate(request: MigrateRequest) -> MigrateResult:
    """analyze -> convert -> port-ext -> check (-> verify) as the request says."""
    from ..analyze import AnalyzeRequest, analyze
    from ..check import CheckRequest, check
    from ..convert import ConvertRequest, convert

    path, target, output, force, verify = (request.input, request.target, request.output, request.force,
                                           list(request.verify) if request.verify is not None else None)
    jobs, echo, python, runtime_shim = request.jobs, request.echo, request.python, request.runtime_shim
    exclude, selection = request.exclude, request.selection
    src = _project_folder(Path(path))
    t = target
    if t.kind == "port-only":
        raise UsageError(f"migrate does not cover {t.name}: convert has nothing to write for it; use "
                         f"`torchport port-ext --to {t.name}`")
    planned = Path(output) if output else tree.default_output(src, t.name)
    if tree.same_file(planned, src):
        raise UsageError(f"-o {planned} is the project itself: migrate writes a new tree beside it (give another "
                         "folder)")
    tree.check_layout(src, planned, None, force)   # before the project is read: a wrong -o is said at once
    reports = planned / REPORT_FOLDER
    if reports.exists() and not (reports / tree.REPORT_MARKER).is_file():
        raise UsageError(f"{reports} exists and was not written by torchport: it is where migrate writes its "
                         "report; choose another output")
    start = time.perf_counter()
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    analysis = analyze(AnalyzeRequest(src, (t,), jobs=jobs, write_reports=False, python=python,
                                      exclude=tuple(exclude)))
    converted = convert(ConvertRequest(src, t, Path(output) if output else None, force=force, jobs=jobs,
                                       write_reports=False, runtime_shim=runtime_shim, exclude=tuple(exclude),
                                       selection=selection, cache=request.cache))
    out = Path(converted.output or output or "")
    if force:
        _drop_earlier_renames(out, src)
    ported, port_note = _port(analysis.native, out, t, jobs, exclude)
    # the project's files: an earlier run's report (--force) is not the project (`check OUT` reads its JSON files
    # too, and finds nothing in them: the counts agree, tests/test_migrate.py)
    checked = check(CheckRequest((str(out),), t, root=str(out), jobs=jobs,
                                 exclude=(REPORT_FOLDER + "/", *exclude), selection=selection))
    result = MigrateResult(t.name, t.title, str(src), str(out), str(out / REPORT_FOLDER), analysis, converted, checked,
                           ported, port_note, analysis.native.native_files, started=started, runtime_shim=runtime_shim)
    if verify:
        result.verify = run_verify(t, verify, out, echo)
    result.items, result.merged = whats_left(result, t)
    result.elapsed = time.perf_counter() - start
    return result


def _drop_earlier_renames(out: Path, src: Path) -> None:
    """--force over an earlier migrate's output: the files its port-ext renamed (k.cu -> k.mu) would be taken for
    files of the project and block this run's renames.  Those still holding exactly what it wrote (recorded in
    its migrate.json) are removed; one changed since is left, and port-ext reports the clash.  A name the project
    itself has now (the user adopted the port: k.mu is theirs) is the project's copy, never removed."""
    import hashlib
    import json

    record = out / REPORT_FOLDER / "migrate.json"
    if not (out / REPORT_FOLDER / tree.REPORT_MARKER).is_file():
        return
    try:
        renamed = json.loads(record.read_text(encoding="utf-8")).get("renamed") or []
    except (OSError, ValueError, AttributeError):
        return
    for entry in renamed:
        if not isinstance(entry, dict) or not isinstance(entry.get("to"), str):
            continue
        path = tree.inside(out, entry["to"])   # inside OUT, no link on the way: else not torchport's to remove
        if path is None or os.path.lexists(src / path.relative_to(out)):
            continue
        try:
            if path is not None and path.is_file() and not path.is_symlink() and \
                    hashlib.sha256(path.read_bytes()).hexdigest() == entry.get("sha256"):
                path.unlink()
        except OSError:
            continue


def renamed_files(result: MigrateResult) -> list[dict[str, str]]:
    """[{from, to, sha256}] of the files port-ext renamed in OUT (recorded for a later --force run)."""
    import hashlib

    if result.port is None or result.port.mode == "inventory":
        return []
    rows: list[dict[str, str]] = []
    for r in result.port.files:
        if r.output != r.path:
            try:
                digest = hashlib.sha256((Path(result.output) / r.output).read_bytes()).hexdigest()
            except OSError:
                continue
            rows.append({"from": r.path, "to": r.output, "sha256": digest})
    return rows


def _port(native: NativeScan, out: Path, t: Target, jobs: Optional[int],
          exclude: tuple[str, ...] = ()) -> tuple[Optional[PortResult], str]:
    """port-ext on OUT's C++/CUDA sources (torchport's copies, in place; its backup of them is removed by the
    caller once the report is written), leaving what the project's settings exclude; `native`: analyze's scan of
    the input's.  (Its result, or None when it did not run; what it did, in words.)"""
    from ..port import DEFAULT_IGNORES, PortRequest, nothing_to_port, port, port_ext_targets

    ignore = (*DEFAULT_IGNORES, *exclude)

    if not native.native_files:
        return None, "no C/C++/CUDA sources"
    if cpu_only(native):
        return None, nothing_to_port(native.native_files)
    if t.name not in port_ext_targets():
        return None, (f"{counted(native.cuda_files, 'CUDA file')}, {counted(len(native.kernels), 'kernel')}: "
                      f"{t.kernel_advice}")
    if t.cuda_kernels == "inventory":
        ported = port(PortRequest(out, t, write_reports=False, jobs=jobs, ignore=ignore))
        inv = ported.inventory
        return ported, (f"inventory: {counted(len(inv['kernels']), 'kernel')} in "
                        f"{counted(inv['cuda_files'], 'CUDA file')} to rewrite for {t.title}, "
                        f"{counted(len(inv['launches']), 'launch site')}, "
                        f"{counted(len(inv['python_calls']), 'Python call site')}")
    ported = port(PortRequest(out, t, in_place=True, force=True, write_reports=False, jobs=jobs, ignore=ignore))
    totals = ported.totals()
    return ported, (f"ported in place: {counted(totals['converted_refs'], 'reference')} converted, "
                    f"{totals['left_refs']} left, {totals['unsupported']} unsupported, "
                    f"{totals['needs_review']} to review, {counted(totals['renamed_files'], 'file')} renamed")


def cpu_only(native: NativeScan) -> bool:
    """C/C++ sources with no CUDA in them: no .cu/.cuh file, no kernel, no CUDA call, PTX or arch check
    (exported ops alone are no CUDA: a CPU extension exports them too)."""
    return native.native_files > 0 and not native.cuda_files and not native.kernels \
        and all(f.rule == codes.TP907.id for f in native.findings)


# ------------------------------------------------------------------ verify
def run_verify(t: Target, argv: list[str], out: Path, echo: Optional[Callable[[str], None]] = None) -> Verify:
    """Run `argv` in `out`: on the simulated device when the target has one, else on this machine."""
    import shutil
    import tempfile

    from ...sim import launch, simulated_targets

    command = launch.resolve_command(argv)
    simulated = t.name in simulated_targets()
    folder = tempfile.mkdtemp(prefix="torchport-migrate-") if simulated else None
    env = dict(os.environ)
    if simulated:
        env.update(launch.environment(t.name, report_dir=folder))
    start = time.perf_counter()
    captured = Captured()
    try:
        with _orphans_ended():   # before it starts: what it orphans at once is adopted too
            try:   # its own process group: what it leaves running in the background ends with it
                child = subprocess.Popen(command, cwd=out, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
            except OSError as e:
                raise UsageError(f"cannot start {command[0]}: {e.strerror}") from None
            code = _wait_for(child, captured, echo)
        merged = launch.merge(folder) if folder else None
    finally:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    return Verify(list(argv), f"simulated {t.name}" if simulated else "this machine", code, captured.text(),
                  processes=merged["processes"] if merged else None,
                  fallback_ops=merged["fallback_ops"] if merged else [], seconds=time.perf_counter() - start,
                  off_target=not simulated and not t.host)


GROUP_GRACE = 2.0      # seconds the verify command's leftover processes get between SIGTERM and SIGKILL
KEPT_HEAD = 256 << 10  # characters of the verify command's output kept from its start (verify.log) ...
KEPT_TAIL = 4 << 20    # ... and from its end, where the traceback is; what lies between is counted, not kept
ECHO_WIDTH = 4096      # a line longer than this is echoed in parts


class Captured:
    """The verify command's output, bounded: its first KEPT_HEAD and last KEPT_TAIL characters."""

    def __init__(self) -> None:
        self.head = ""
        self.tail: collections.deque[str] = collections.deque()
        self.tail_size = 0
        self.dropped = 0

    def add(self, text: str) -> None:
        if len(self.head) < KEPT_HEAD:
            room = KEPT_HEAD - len(self.head)
            self.head, text = self.head + text[:room], text[room:]
        if text:
            self.tail.append(text)
            self.tail_size += len(text)
        while self.tail_size > KEPT_TAIL:
            first = self.tail.popleft()
            cut = min(len(first), self.tail_size - KEPT_TAIL)
            if cut < len(first):
                self.tail.appendleft(first[cut:])
            self.tail_size -= cut
            self.dropped += cut

    def text(self) -> str:
        gap = f"\n[torchport: {self.dropped} characters of output left out here]\n" if self.dropped else ""
        return self.head + gap + "".join(self.tail)


def _wait_for(child: subprocess.Popen[bytes], captured: Captured, echo: Optional[Callable[[str], None]]) -> int:
    """The verify command's exit status, once it exits (not once every process it started has closed its output);
    its output is read meanwhile, in blocks (a line without end is no longer than a block).  Then its process
    group is ended; SIGINT or SIGTERM to torchport end it too."""
    import signal
    import threading

    def pump() -> None:
        import codecs

        assert child.stdout is not None
        stdout = cast("io.BufferedReader", child.stdout)   # a pipe, buffered (Popen's default bufsize)
        decode = codecs.getincrementaldecoder("utf-8")(errors="replace").decode
        partial = ""
        while True:
            data = stdout.read1(1 << 16)   # what is there, as soon as there is some
            block = decode(data, final=not data)
            if not data and not block:
                break
            captured.add(block)
            if echo is None:
                continue
            *whole, partial = (partial + block).split("\n")
            for line in whole:
                line = line.rstrip("\r")
                for at in range(0, max(len(line), 1), ECHO_WIDTH):
                    echo(line[at:at + ECHO_WIDTH])
            while len(partial) > ECHO_WIDTH:
                echo(partial[:ECHO_WIDTH])
                partial = partial[ECHO_WIDTH:]
        if echo is not None and partial:
            echo(partial)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    previous = None
    if threading.current_thread() is threading.main_thread():
        def stop(signum: int, frame: Optional[FrameType]) -> NoReturn:
            raise KeyboardInterrupt
        previous = signal.signal(signal.SIGTERM, stop)
    try:
        return child.wait()
    finally:
        _end_group(child.pid)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        reader.join(timeout=5)


@contextlib.contextmanager
def _orphans_ended() -> Iterator[None]:
    """While the verify command runs, this process adopts what it leaves orphaned (Linux: a child subreaper), so a
    grandchild that started a session of its own (`setsid`, a daemon) is ended with the rest when it exits."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        adopting = libc.prctl(36, 1, 0, 0, 0) == 0   # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        adopting = False
    before = _children()
    try:
        yield
    finally:
        if adopting:
            libc.prctl(36, 0, 0, 0, 0)
            left = _children() - before
            for sig in (signal.SIGTERM, signal.SIGKILL):
                for pid in left:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, sig)
                deadline = time.monotonic() + GROUP_GRACE
                while left and time.monotonic() < deadline:
                    for pid in list(left):
                        with contextlib.suppress(ChildProcessError, OSError):
                            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                                left.discard(pid)
                    time.sleep(0.05)


def _children() -> set[int]:
    """The pids whose parent is this process (read from /proc; empty where there is none)."""
    me = os.getpid()
    out: set[int] = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for entry in entries:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
                if int(fields[1]) == me:
                    out.add(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return out


def _end_group(pgid: int) -> None:
    """SIGTERM to a process group, SIGKILL to what is left of it after GROUP_GRACE."""
    import signal

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + GROUP_GRACE
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.05)


# ------------------------------------------------------------------ What's left
def _known_errors(t: Target, matches: list[Match]) -> list[Item]:
    """An item for each known error (kb/errors.toml, as `torchport explain` finds them in a failed verify's output):
    its cause, fix and source, where the log says it."""
    return [_item("known-error", t, "", 0, f"verify.log:{m.line}: {_one_line(m.text)}", m.error.id, "verify",
                  message=f"{m.error.title} ({m.error.cause})", what=m.error.fix, cite=m.error.source)
            for m in matches]


def _cause_known(output: str, matches: list[Match]) -> Optional[KnownError]:
    """The documented known error (not a reading of the message's shape) that explains the exception a failed verify
    ended with, or None."""
    from ...doctor.explain import unexplained
    from .trace import exception_line

    last = exception_line(output)
    documented = [m for m in matches if m.error.confidence != "inferred"]
    if not last or not documented or any(text == last for _, text in unexplained(output, documented)):
        return None
    at = max((n for n, line in enumerate(output.splitlines(), 1) if line.strip() == last), default=0)
    return max(documented, key=lambda m: (m.line <= at, m.line)).error


def _item(kind: str, t: Target, file: str, line: int, item: str, rule: str, source: str, *,  # noqa: PLR0913
          message: str = "", change: str = "", name: str = "", action: str = "", cite: str = "", input_line: int = 0,
          what: str = "") -> Item:
    _, _, why, fix = KINDS[kind]
    code = codes.CODES.get(rule)
    words = {"target": t.title, "message": message or (code.what if code else ""), "change": change, "name": name,
             "what": what or (code.what if code else message), "rule": rule}
    return Item(kind, file, line, item, rule, source, why.format(**words), fix.format(**words), action, cite,
                input_line)


@dataclass
class _Left:
    """What whats_left gathers: the items, and how many were merged into others."""

    result: MigrateResult
    t: Target
    lines: dict[str, dict[int, int]]  # input line -> output line, per file convert changed
    items: list[Item] = field(default_factory=list)
    merged: int = 0

    def add(self, kind: str, file: str, line: int, item: str, rule: str, source: str, **fields: Any) -> None:
        self.items.append(_item(kind, self.t, file, line, item, rule, source, **fields))

    def out_line(self, file: str, line: int) -> int:
        return self.lines.get(file, {}).get(line, line)


def whats_left(result: MigrateResult, t: Target) -> tuple[list[Item], int]:
    """(the items, ordered by risk, then file and line; how many duplicates were merged)."""
    left = _Left(result, t, _line_maps(result.convert))
    checked_files = _checked(left)
    _converted_only(left)
    _ported(left)
    _assessed(left, checked_files)
    _libraries_and_advice(left)
    _mentions(left)
    _verified(left)
    return _unique(left)


def _checked(left: _Left) -> dict[str, set[str]]:
    """check's findings on the Python, notebooks, shell scripts and configs written; {file: the codes found}."""
    convert = left.result.convert
    back = {file: {o: i for i, o in sorted(m.items(), reverse=True)} for file, m in left.lines.items()}
    kept = {r.path for r in convert.files if r.status not in ("converted", "created")}
    checked_files: dict[str, set[str]] = collections.defaultdict(set)
    for f in left.result.check.findings:
        kind = CODE_KINDS.get(f.rule) or ACTION_KINDS[f.action]
        if kind == "unsupported":
            kind = next((k for reason, k in OFF_PATH_KINDS.items() if reason in f.reasons), kind)
        checked_files[f.file].add(f.rule)
        change = change_of(f) if f.action in CHANGES else ""
        left.add(kind, f.file, f.line, _one_line(f.old) or f.rule, f.rule, "check", message=f.message,
                 change=change, action=f.action,
                 input_line=back[f.file].get(f.line, 0) if f.file in back else f.line if f.file in kept else 0)
    return checked_files


def _converted_only(left: _Left) -> None:
    """What convert alone can say: on the converted file it cannot be told (a target the project names itself)."""
    for f in left.result.convert.findings:
        if f.rule == codes.TP213.id:
            left.add("own-target", f.file, left.out_line(f.file, f.line), _one_line(f.old) or f.rule, f.rule,
                     "convert", message=f.message, input_line=f.line)


def _ported(left: _Left) -> None:
    """Ported in place: port-ext's findings, and the names its mapping left, are what is left of the C++."""
    port = left.result.port
    if port is None or port.mode == "inventory":
        return
    renamed = {r.path: r.output for r in port.files}
    for f in port.findings:
        port_kind = CODE_KINDS.get(f.rule) or ("not-processed" if f.action == ERROR else None)
        if port_kind is not None:
            left.add(port_kind, renamed.get(f.file, f.file), f.line, _one_line(f.old) or f.rule, f.rule,
                     "port-ext", message=f.message)
    for r in port.files:
        if r.left:
            names = ", ".join(name for name, _ in r.left.most_common(5))
            left.add("port-left", r.output, 0, names, "", "port-ext",
                     message=f"{sum(r.left.values())} references to names the mapping does not know "
                             f"({names}): map them (`-m MAP.json`) or edit them")


def _assessed(left: _Left, checked_files: dict[str, set[str]]) -> None:
    """analyze's target-independent findings: packages and dependencies, and (when nothing was ported) the C++."""
    from ...kb.packages import packages
    from ..analyze import package_of

    result, t = left.result, left.t
    native_rows = result.port is None or result.port.mode == "inventory"
    kernel_files = {f.file for f in result.analysis.native.findings if f.rule == codes.TP902.id}
    kb = packages()
    readiness = result.analysis.readiness.get(t.name)
    optional = readiness is not None and readiness.kernels_optional
    for f in result.analysis.common:
        if f.rule in (codes.TP908.id, codes.TP909.id):
            if f.rule == codes.TP908.id and codes.TP114.id in checked_files.get(f.file, ()):
                left.merged += 1                  # the import, reported by convert (TP114) too
                continue
            pkg = package_of(f, kb)
            swap = pkg is not None and pkg.advice(t.name)[1]
            message = pkg.advice(t.name)[0] if pkg is not None else f.message
            kind = "optional-package" if OPTIONAL_IMPORT in f.reasons else \
                "package-swap" if swap or pkg is None else "blocked-package"
            left.add(kind, f.file, left.out_line(f.file, f.line), _one_line(f.old), f.rule, "analyze",
                     message=message, input_line=f.line)
            continue
        kind = CODE_KINDS.get(f.rule) or ""
        if not kind or kind != "cuda-torch" and not native_rows:
            continue                              # info only; or ported, and port-ext reports what is left
        if kind in ("cuda-calls", "ptx") and f.file in kernel_files:
            left.merged += 1                      # part of the kernel file's rewrite
            continue
        message = f.message
        if kind in ("kernel", "ptx", "cuda-calls") and optional:
            kind = "optional-native"              # as analyze counts it: review, not a block (Swin's fused kernel)
        if f.rule == codes.TP902.id:
            message = f"CUDA kernels: {t.kernel_advice}; meanwhile keep a PyTorch fallback for the ops it backs"
        left.add(kind, f.file, f.line, _one_line(f.old), f.rule, "analyze", message=message, input_line=f.line)


def _libraries_and_advice(left: _Left) -> None:
    """The installed libraries whose CUDA code the project reaches, and the target's performance advice."""
    result, t = left.result, left.t
    libraries = result.analysis.libraries
    for reach in libraries.reaches.get(t.name, []) if libraries is not None else []:
        left.add("library-shimmed" if result.runtime_shim else "library", reach.file,
                 left.out_line(reach.file, reach.line), reach.name, reach.touches[0].rule, "analyze",
                 message=f"{reach.name}: {reach.describe()}", input_line=reach.line)
    for file, line, rule, advice, source in result.analysis.advice(t.name):
        left.add("advice", file, left.out_line(file, line), rule, rule, "advice", message=advice, name=rule,
                 cite=source, input_line=line)


def _mentions(left: _Left) -> None:
    """Files convert copied that mention CUDA (docs, configs, Dockerfiles), unless a row above is about them."""
    with_rows = {i.file for i in left.items}
    for r in left.result.convert.files:
        if r.mentions_cuda and not r.path.endswith(NATIVE_SUFFIXES):  # C++: rows above
            if r.path in with_rows:               # a config check reported, a requirements line analyze did
                left.merged += 1
                continue
            left.add("mentions-cuda", r.path, r.mention_line, r.path, "", "convert", input_line=r.mention_line)


def _verified(left: _Left) -> None:
    """The verify command's outcome when it did not pass, and for a failure the known errors and traced lines."""
    result, t = left.result, left.t
    v = result.verify
    if v is None or v.verdict == "passed":
        return
    last = next((ln for ln in reversed(v.tail) if ln.strip()), "")
    kind = "verify-failed" if v.verdict == "failed" else "verify-off-target" if v.off_target else "verify-unused"
    left.add(kind, "", 0, " ".join(v.command), "verify", "verify", name=t.name,
             message=f"exit {v.exit_code}" + (f": {last.strip()}" if last else ""))
    if v.verdict == "failed":
        from ...doctor.explain import explain

        matches, _ = explain(v.output, target=t.name) if v.output.strip() else ([], [])
        left.items += _known_errors(t, matches)
        left.items += _traced(result, t, v.output, left.lines, left.items, _cause_known(v.output, matches))


def _unique(left: _Left) -> tuple[list[Item], int]:
    """The items once each (check's own rows are each one of its findings: two on one line stay two), by risk,
    file and line; and how many were merged."""
    seen: set[Union[tuple[str, int, str, str, bool], int]] = set()
    unique: list[Item] = []
    merged = left.merged
    for n, i in enumerate(left.items):
        key = (i.file, i.line, i.rule, i.item, i.kind == "verify-traced") if i.source != "check" else n
        if key in seen:
            merged += 1
            continue
        seen.add(key)
        unique.append(i)
    unique.sort(key=lambda i: (RISKS.index(i.risk), i.file, i.line, i.rule))
    return unique, merged


def _traced(result: MigrateResult, t: Target, output: str, lines: dict[str, dict[int, int]],
            items: list[Item], known: Optional[KnownError] = None) -> list[Item]:
    """Items for the migrated lines a failed verify went through (trace.py): each one convert edited, and the
    line the run stopped on when neither an edit nor an earlier item names any of them.  Where a documented known
    error (`known`) explains the failure, an edit on its path is not advised undone: the known error's row says why."""
    from .trace import exception_line, lines_through

    through = lines_through(output, Path(result.output))
    if not through:
        return []
    edits: dict[tuple[str, int], list[Finding]] = {}
    for f in result.convert.findings:
        if f.action in CHANGES:
            edits.setdefault((f.file, lines.get(f.file, {}).get(f.line, f.line)), []).append(f)
    stop = through[0]
    failure = _one_line(exception_line(output)) or "a traceback"
    named: dict[tuple[str, int], Item] = {}
    for i in items:
        if i.source != "verify" and i.file and i.line:
            named.setdefault((i.file, i.line), i)
    out: list[Item] = []
    for ln in through:
        how = "the run stopped on it" if ln is stop else "the run went through it" if ln.how == "frame" else \
            f"it gives {ln.name}, read at {ln.frame}"
        for f in edits.get((ln.file, ln.line), []):
            wrote = f"convert wrote `{_one_line(f.new)}` for `{_one_line(f.old)}` here ({f.rule})"
            what = (f"{wrote}, on the failure's path; a known error explains the failure ({known.id}: its own row "
                    f"gives the cause and the fix), so read that first (`torchport rules {f.rule}` explains the edit)"
                    if known is not None else
                    f"{wrote}: if this value is not a device, keep it with `# torchport: ignore` on the project's "
                    f"line (`torchport rules {f.rule}`)")
            out.append(_item("verify-traced", t, ln.file, ln.line, f"{_one_line(f.old)} -> {_one_line(f.new)}",
                             f.rule, "verify", message=f"{failure}; {how}", what=what))
        earlier = named.get((ln.file, ln.line))
        if earlier is not None and (ln.file, ln.line) not in edits:
            out.append(_item("verify-traced", t, ln.file, ln.line, earlier.item, earlier.rule, "verify",
                             message=f"{failure}; {how}",
                             what=f"the row for this line ({earlier.rule or earlier.kind}) says what to do: "
                                  f"{earlier.fix}"))
    if not out:
        origins = ", ".join(f"{ln.where} ({ln.name})" for ln in through if ln.how == "origin")
        out.append(_item("verify-traced", t, stop.file, stop.line, _one_line(stop.file), "verify", "verify",
                         message=f"{failure}; the run stopped on it" + (f"; the names it reads come from {origins}"
                                                                         if origins else ""),
                         what="nothing convert wrote and no other item names this path: read the traceback "
                              "(verify.log); `torchport explain --file` matches known error messages"))
    return out


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 120 else text[:117] + "..."


def _line_maps(converted: ConvertResult) -> dict[str, dict[int, int]]:
    """file -> {input line: output line} for the Python files convert changed (an inserted import moves the
    lines below it), so findings made on the input point at the output's lines."""
    maps: dict[str, dict[int, int]] = {}
    for r in converted.files:
        if r.status != "converted" or r.kind != "python":
            continue
        texts = converted.texts(r)
        if texts is None:
            continue
        old, new = texts[0].splitlines(), texts[1].splitlines()
        mapping: dict[int, int] = {}
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
            for k in range(i1, i2):
                mapping[k + 1] = j1 + 1 + (k - i1 if tag == "equal" else min(k - i1, max(j2 - j1 - 1, 0)))
        maps[r.path] = mapping
    return maps
