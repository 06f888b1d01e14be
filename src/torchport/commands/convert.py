"""`torchport.convert(...)`: the Python API behind `torchport convert`, returning a ConvertResult."""
from __future__ import annotations

import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Union, cast

from ..backends import Target
from ..converter import reuse
from ..converter.project import Facts
from ..converter.project import facts as project_facts
from ..converter.run import ConvertedFile, Converter, Options, RuleFile, run_jobs, timer
from ..core import codes, writes
from ..core import files as tree
from ..core.errors import UsageError
from ..core.finding import ADVICE, CHANGES, ERROR, FAILED, UNSUPPORTED, Finding
from ..core.parallel import default_jobs
from ..core.pipeline import FileResult, Mode
from ..core.suppress import Selection
from ..core.version import __version__

if TYPE_CHECKING:
    from ..converter.multicard import Plan

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # convert -s: what --device-env may name

SCHEMA_VERSION = 1


@dataclass
class ConvertResult:
    """What a conversion did: per-file results, all findings, where things were written."""

    target: str
    input: str
    output: Optional[str]
    report_dir: Optional[str]
    mode: str                         # write | in-place | diff | dry-run
    files: list[ConvertedFile] = field(default_factory=list)
    elapsed: float = 0.0
    backup: Optional[str] = None
    rule_files: list[str] = field(default_factory=list)
    started: str = ""
    reused: int = 0                   # files whose results came from an earlier run (reuse.py); not in reports

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.files for f in r.findings]

    @property
    def suppressed(self) -> list[Finding]:
        """Findings `# torchport: ignore` comments or rule selection left out (their changes not made)."""
        return [f for r in self.files for f in getattr(r, "suppressed", ())]

    @property
    def diff(self) -> str:
        return "".join(r.diff for r in self.files)

    def texts(self, r: FileResult) -> Optional[tuple[str, str]]:
        """(original text, converted text) of one file of this run, or None when they cannot be read back.

        Read from where the run left them, one file at a time: the input, the converted tree, the backup
        (--in-place); --diff and --dry-run keep the converted text in the ConvertedFile.  A file the run
        created has an empty original; a file it did not change has the same text twice."""
        from ..core.textfile import decode

        src, created = Path(self.input), r.status == "created"
        single = not src.is_dir()
        base = src.parent if single else src

        def read(path: Path) -> Optional[str]:
            try:
                text = decode(tree.read_bytes(path))
            except OSError:
                return None
            return None if text is None else text.text

        changed = created or r.status == "converted"
        if self.mode == "in-place" and changed:
            old = "" if created else read(Path(self.backup) / r.path) if self.backup else None
        else:
            old = "" if created else read(base / r.path)
        if not changed:
            return None if old is None else (old, old)
        if self.mode == "in-place":
            new = read(base / r.path)
        elif self.mode == "write" and self.output:
            out = Path(self.output)
            new = read(out if single and r.path == src.name else (out.parent if single else out) / r.path)
        else:
            new = getattr(r, "new_text", None)
            if new is None and created and r.diff:  # a created file's diff is all additions
                new = "".join(line[1:] for line in r.diff.splitlines(True)[3:] if line.startswith("+"))
        return None if old is None or new is None else (old, new)

    def failed(self) -> list[Finding]:
        """Findings that say torchport itself failed on a file (its output would not parse, a rule crashed):
        the run fails (exit 1)."""
        return [f for f in self.findings if f.category == FAILED]

    def summary(self) -> dict[str, Any]:
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
            "to_review": actions[ADVICE],  # the same number under the word every command prints ("to review")
            "errors": actions[ERROR],
            "unscanned_cuda_files": sum(1 for r in self.files if getattr(r, "mentions_cuda", False)),
            "by_rule": dict(sorted(Counter(f.rule for f in self.findings).items())),
            "suppressed": len(self.suppressed),
            "elapsed_seconds": round(self.elapsed, 3),
        }

    def to_dict(self) -> dict[str, Any]:
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
            "suppressed": [f.to_dict() for f in self.suppressed],
        }


@dataclass(frozen=True)
class Multidevice:
    """--distributed: make the training script `main` multi-device (see converter/multicard.py)."""

    main: Optional[str] = None        # relative to the input; default: the input itself (a single file)
    model_var: str = "model"
    loader_var: Optional[str] = None


@dataclass(frozen=True)
class ConvertRequest:
    """One conversion: what to convert, for which (loaded) target, how and where.

    `output`: default a mirrored tree `<name>_<target>` next to the input, reports in `<output>_report/`.
    `mode` (core.pipeline.Mode): write | in-place (rewrites the input, keeping a backup) | diff | dry-run (these
    two write nothing, reports only if `report_dir` is given).  `write_reports`: None means "when the mode writes
    or a report_dir is given".
    `specify_device`: an environment variable the launch script (`launch`, or the input file) takes its device
    index from (Ascend's `-s`; see TP404).
    `selection`: the codes reported and changed (--select/--ignore, core/suppress.py); `# torchport: ignore`
    comments are always honoured: what they suppress is left as written and counted in `suppressed`.
    `similar`: replace the unsupported APIs of kb/similar.toml by their similar APIs (Ascend's `-sim`; TP123).
    `runtime_shim`: each entry script imports the target's run-time mapping first (TP003), for the CUDA code of
    the libraries the project calls.
    `cache`: files unchanged since the last run of this input and target take their results from it (reuse.py).
    """

    input: Path
    target: Target
    output: Optional[Path] = None
    mode: Mode = Mode.WRITE
    rules: tuple[RuleFile, ...] = ()  # user rule files
    exclude: tuple[str, ...] = ()     # globs copied unchanged
    launch: Optional[str] = None      # the entry script: it always gets the registration import
    jobs: Optional[int] = None        # worker processes (None: the CPU count)
    force: bool = False
    report_dir: Optional[Path] = None
    write_reports: Optional[bool] = None
    distributed: Optional[Multidevice] = None
    specify_device: Optional[str] = None
    selection: Optional[Selection] = None
    similar: bool = False
    runtime_shim: bool = False
    cache: bool = True
    progress: Optional[Callable[[int, int], object]] = None   # progress(done, total)

    @classmethod
    def of(cls, path: Union[str, os.PathLike[str]], target: Union[str, Target],
           output: Union[str, os.PathLike[str], None] = None, **options: Any) -> ConvertRequest:
        """A request from the keywords `torchport.convert` takes: the fields above, with `target` a name, alias or
        .toml path (loaded here), the mode as `in_place`/`diff`/`dry_run` switches, and --distributed as
        `distributed=True` with `main`, `model_var`, `loader_var`."""
        from ..backends import load_target

        mode = Mode.of(options.pop("in_place", False), options.pop("diff", False), options.pop("dry_run", False))
        multi = {k: options.pop(k) for k in ("main", "model_var", "loader_var") if k in options}
        distributed = options.pop("distributed", False)
        if multi and not distributed and (multi.get("main") or multi.get("loader_var")
                                          or multi.get("model_var", "model") != "model"):
            raise UsageError("--main, --model-var and --loader-var go with --distributed")
        unknown = set(options) - {f for f in cls.__dataclass_fields__} - {"input", "target", "output", "mode"}
        if unknown:
            raise TypeError(f"convert: unknown options {sorted(unknown)}")
        for key in ("rules", "exclude"):
            if key in options:
                options[key] = tuple(options[key] or ())
        for key in ("report_dir",):
            if options.get(key) is not None:
                options[key] = Path(options[key])
        loaded = target if isinstance(target, Target) else load_target(target)
        return cls(Path(path), loaded, Path(output) if output is not None else None, mode,
                   distributed=Multidevice(**multi) if distributed else None, **options)


def convert(request: ConvertRequest) -> ConvertResult:
    """Convert a file or directory as the request says (reports are written by the caller: torchport.convert,
    the cli)."""
    mode, src = request.mode, Path(request.input)
    if not src.exists():
        raise UsageError(f"input not found: {src}")
    loaded, user = Converter.inputs(request.target, request.rules)  # the target and the rule files, checked early
    target_name = loaded.name
    out = None
    if mode == "write":
        out = request.output or tree.default_output(src, target_name)
    elif request.output and mode != "in-place":
        raise UsageError(f"-o/--output does not go with --{mode}")
    write_reports = request.write_reports
    if write_reports is None:
        write_reports = mode in ("write", "in-place") or request.report_dir is not None
    reports = None
    if write_reports:
        reports = request.report_dir or tree.default_report_dir(src, out, target_name)
    tree.check_layout(src, out, reports, request.force)

    launch_rel = _inside_input(src, request.launch, "launch script") if request.launch else None
    specify_device = request.specify_device
    if specify_device is not None:
        if not ENV_NAME.fullmatch(specify_device):
            raise UsageError(f"--device-env {specify_device!r}: not an environment variable name (letters, digits, _)")
        if request.distributed:
            raise UsageError("--specify-device does not go with --distributed: each process takes its device from "
                             "LOCAL_RANK there")
        if launch_rel is None and src.is_dir():
            raise UsageError("--specify-device needs --launch SCRIPT (the entry script, which sets the device) "
                             "when INPUT is a folder")
        launch_rel = launch_rel or src.name
    multi = None
    if request.distributed:
        d = request.distributed
        multi = _multicard(src, d.main, loaded, d.model_var, d.loader_var, out if mode == "write" else
                           src if mode == "in-place" else None, request.force)

    with tree.hold_output(src, out, mode, request.force):
        options = Options(rule_files=request.rules, launch=launch_rel, device_env=specify_device or "",
                          selection=request.selection, similar=request.similar, runtime_shim=request.runtime_shim)
        return _convert(request, user.paths, out, reports, multi, options)


def _convert(request: ConvertRequest, rule_paths: list[str], out: Optional[Path], reports: Optional[Path],
             multi: Optional[_Multicard], options: Options) -> ConvertResult:
    src, target, mode, force = Path(request.input), request.target, request.mode, request.force
    target_name = target.name
    clock = timer()
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    entries = list(tree.walk(src, request.exclude))
    files_ = [e for e in entries if e.kind == "file"]
    if files_ and all(e.excluded for e in files_):   # a run that converts nothing is no pass (check says so too)
        if mode == "write" and out is not None and src.is_dir() and out.is_dir() and not any(out.iterdir()) \
                and not force:
            out.rmdir()   # made by this run, empty
        raise UsageError(f"every file of {src} ({len(files_)}) is excluded (`exclude` in [tool.torchport] or -e): "
                         "nothing would be converted")
    written = cast(Path, out)   # read only in the write mode, which always has an output (convert)
    if mode == "write" and not src.is_dir() and (written.is_symlink() or written.exists()):  # looked at again, locked
        if not force:
            raise UsageError(f"output {out} already exists (use --force to write into it)")
        if written.is_dir() and not written.is_symlink():
            raise UsageError(f"output {out} is a folder")
    backup = tree.backup_dir(src) if mode == "in-place" else None
    jobs_list = []
    tree_input = src.is_dir()
    for e in entries:
        dst = bak = None
        if out is not None:
            dst = out / e.rel if tree_input else out
        if backup is not None:
            bak = backup / e.rel if tree_input else backup / src.name
        jobs_list.append((e, dst, bak, multi.source if multi and e.rel == multi.rel else None))
    roots = (src if src.is_dir() else src.parent, (out if src.is_dir() else out.parent) if out else None, backup)
    options = replace(options, own_packages=tuple(tree.own_packages(entries)),
                      project=project_facts(entries) if tree_input else Facts())
    pack = reuse.Pack(src, target, options) if reuse.enabled(not request.cache) else None
    results = run_jobs(jobs_list, target, options, mode, request.jobs or default_jobs(), request.progress, roots,
                       pack)
    reused = pack.save(jobs_list, results) if pack is not None else 0
    if multi is not None:
        results.append(multi.finish(results, mode))
    if backup is not None and not writes.remove_empty_dirs(backup):
        backup = None
    result = ConvertResult(target_name, str(src), str(out) if out else None, str(reports) if reports else None,
                           str(mode), results, clock(), str(backup) if backup else None,
                           list(rule_paths), started, reused)
    return result  # the reports (result.report_dir) are written by the caller: torchport.convert, the cli


def _inside_input(src: Path, name: str, what: str) -> str:
    """The input-relative path of a file named on the command line (relative to the input or the cwd)."""
    p = Path(name)
    found = next((c for c in ([p, src / p] if src.is_dir() else [p]) if c.is_file()), None)
    if found is None:
        raise UsageError(f"{what} not found: {name}")
    try:
        return found.resolve().relative_to(src.resolve()).as_posix() if src.is_dir() else src.name
    except ValueError:
        raise UsageError(f"{what} {name} is not inside the input") from None


@dataclass
class _Multicard:
    """The --distributed part of a run: the main script's multi-device source and the launcher."""

    rel: str
    original: str
    source: bytes
    plan: Plan                        # converter.multicard's plan of the main script
    launcher: str
    launcher_path: Optional[Path]     # None: --diff / --dry-run write nothing

    def finish(self, results: list[ConvertedFile], mode: str) -> ConvertedFile:
        """Fold the plan into the main file's result (its findings in original lines) and write the launcher;
        returns the launcher's ConvertedFile."""
        from ..converter.multicard import LAUNCHER, line_map
        from ..core.finding import INSERT, Finding
        from ..core.textfile import unified_diff

        main = next(r for r in results if r.path == self.rel)
        lines = line_map(self.original, self.plan.text)
        moved = [replace(f, line=lines[min(f.line, len(lines)) - 1], end_line=lines[min(f.end_line, len(lines)) - 1])
                 for f in main.findings]
        main.findings = sorted(self.plan.findings + moved, key=lambda f: (f.line, f.col, f.rule))
        main.lines = self.original.count("\n") + 1
        if main.status == "unchanged":
            main.status = "converted"
        if self.launcher_path is not None:
            writes.write_text(self.launcher_path, self.launcher, mode=0o755 & ~writes.UMASK)
        finding = Finding(LAUNCHER, 1, 1, codes.TP966.id, "distributed-mode", INSERT, new=f"bash {LAUNCHER} -n N",
                          message=f"starts {self.rel} with torchrun, one process per device")
        result = ConvertedFile(LAUNCHER, "created", kind="shell", findings=[finding], lines=self.launcher.count("\n"))
        result.new_text = self.launcher
        if mode == "diff":
            result.diff = unified_diff("", self.launcher, "/dev/null", f"b/{LAUNCHER}")
        return result


def _multicard(src: Path, main: Optional[str], target: Target, model_var: str, loader_var: Optional[str],
               root: Optional[Path], force: bool) -> _Multicard:
    """Plan the main script (a Refusal stops the run before anything is written); root is where the
    converted tree goes (the output, or the input itself in place), None when nothing is written."""
    from ..converter.multicard import LAUNCHER, launcher, plan
    from ..core.textfile import decode

    if src.is_dir() and not main:
        raise UsageError("--distributed needs --main: the training script that starts the run")
    rel = _inside_input(src, main, "main script") if main else src.name
    if not rel.endswith(".py"):
        raise UsageError(f"--main must be a Python script: {rel}")
    path = src / rel if src.is_dir() else src
    text = decode(path.read_bytes())
    if text is None:
        raise UsageError(f"cannot decode {rel}")
    p = plan(rel, text.text, target, model_var, loader_var)
    if src.is_dir() and (src / LAUNCHER).exists():
        raise UsageError(f"{src / LAUNCHER} exists; torchport writes its launcher under that name (rename yours)")
    launcher_path = None
    if root is not None:
        launcher_path = root / LAUNCHER if src.is_dir() else root.parent / LAUNCHER
        if not src.is_dir() and launcher_path.exists() and not force:
            raise UsageError(f"{launcher_path} exists; use --force to replace it")
    script = rel if src.is_dir() or root is None else root.name
    return _Multicard(rel, text.text, text.encode(p.text), p, launcher(script, target), launcher_path)
