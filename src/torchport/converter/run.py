"""Converting a file or a tree: one worker per file, files in parallel, results gathered.

The worker reads a file, converts it with the Python or shell pipeline (or
leaves it alone), and writes the output itself (mirror tree, in place with a
backup, or nothing for --diff/--dry-run).  Only findings travel back.
"""
from __future__ import annotations

import ast
import os
import re
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Union, cast

from ..backends import CONVERTED_KINDS, TARGET_KINDS, Target, load_target
from ..core import codes, edits, parallel, writes
from ..core import files as tree
from ..core.errors import UsageError
from ..core.files import Entry
from ..core.finding import ADVICE, ERROR, FAILED, Finding
from ..core.pipeline import FileResult
from ..core.pycheck import undefined_after
from ..core.suppress import Selection
from ..core.textfile import Text, decode, unified_diff
from ..kb.apimap import ApiMap
from . import config, notebook
from .checkers import Checker, Phase
from .project import Facts
from .python import FileRole, PythonConverter, SourceFile
from .reuse import Hunk, Job, Pack, Stored
from .reuse import entry as stored_result
from .rules import builtin_checkers
from .shell import SHELL_SUFFIXES, ShellConverter
from .userrules import UserRules, load_rule_files

PY_SUFFIXES = (".py", ".pyw", ".pyi")

RuleFile = Union[str, "os.PathLike[str]"]   # a user rule file's path (-r)
Roots = tuple[Optional[Path], Optional[Path], Optional[Path]]   # (input root, output root, backup root)
Converted = tuple[Optional[bytes], list[Finding], int]   # (new bytes or None if unchanged, findings, line count)


@dataclass
class ConvertedFile(FileResult):
    """status: converted | unchanged | copied | excluded | skipped | error (| created: the launcher)."""

    kind: str = "other"               # python | shell | notebook | other
    lines: int = 0
    new_text: Optional[str] = None    # diff / dry-run: the converted text (nothing is written; report.html shows it)
    mentions_cuda: bool = False       # a file copied unscanned that mentions CUDA (counted in the summary)
    mention_line: int = 0             # ... the line of its first mention
    hunks: Optional[list[Hunk]] = None  # the changed lines (core.edits.line_hunks), for reports; None: diff the texts
    suppressed: list[Finding] = field(default_factory=list)  # findings `# torchport: ignore` or --select/--ignore left out
    reuse: Optional[tuple[bytes, Optional[Stored]]] = None  # (key, stored result, or None when it came from the pack): see reuse.py


@dataclass(frozen=True)
class Options:
    """How a run converts every file, beyond its target: one value, built once and handed to each worker."""

    rule_files: tuple[RuleFile, ...] = ()    # user rule files (-r)
    launch: Optional[str] = None             # the launch script (input-relative): it gets the device set-up
    own_packages: tuple[str, ...] = ()       # the project's own top-level packages: never taken for CUDA ones
    device_env: str = ""                     # convert -s: the launch script's device index comes from this variable
    selection: Optional[Selection] = None    # --select/--ignore, [tool.torchport] (core/suppress.py)
    similar: bool = False                    # --similar: unsupported APIs swapped for similar ones (TP123)
    runtime_shim: bool = False               # --runtime-shim: entry scripts import the run-time mapping (TP003)
    project: Facts = Facts()                 # what the project's other files say about each file (project.py)


class Converter:
    """Everything one run needs to convert one file, built once per process."""

    def __init__(self, target: Union[str, Target], rule_files: Iterable[RuleFile] = (), *,
                 options: Optional[Options] = None, **fields: Any) -> None:
        """options: an Options, or its fields as keywords (`Converter("npu", ["rules.toml"], similar=True)`)."""
        self.options = o = options if options is not None else Options(tuple(rule_files), **fields)
        self.target, self.user = self.inputs(target, o.rule_files)
        self.api = ApiMap(self.target, self.user.decisions, o.own_packages, similar=o.similar)
        checkers = builtin_checkers(distributed=False) + self.user.checkers()
        # the reference checker must also see files that only use user-named APIs...
        words = tuple(sorted(self.user.trigger_words()))
        checkers = [c if c.phase is not Phase.REFERENCE or not words else _with_triggers(c, words) for c in checkers]
        # ...or import CUDA-only packages
        self.import_words = sorted({n.split(".")[0] for n in self.api.package_decisions})
        python = [c for c in checkers if c.phase in (Phase.NODE, Phase.REFERENCE, Phase.FILE)]
        self.python = PythonConverter(self.api, python, self.import_words)
        self.python.user_codes = self.user.codes
        self.shell = ShellConverter(self.api, [c for c in checkers if c.phase is Phase.SHELL])
        if o.selection is not None:
            self.python.selection = self.shell.selection = o.selection

    @staticmethod
    def inputs(target: Union[str, Target], rule_files: Iterable[RuleFile] = ()) -> tuple[Target, UserRules]:
        """(Target, user rules): loaded (`target` a Target, or a name or .toml path) and checked, a UsageError when
        they cannot be used for convert."""
        loaded = target if isinstance(target, Target) else load_target(target)
        if loaded.kind not in CONVERTED_KINDS:
            raise UsageError(f"{loaded.name}: {TARGET_KINDS[loaded.kind]}; nothing to convert in Python "
                             f"(C++ extensions: torchport port-ext --to {loaded.name})")
        return loaded, load_rule_files(rule_files, loaded.name)

    def convert_text(self, rel: str, data: bytes, kind: str) -> Converted:
        """(new bytes or None if unchanged, findings, line count); raises on syntax errors."""
        new, findings, lines, _hunks = self.convert_file(rel, data, kind)
        return new, findings, lines

    def convert_file(self, rel: str, data: bytes, kind: str, suppressed: Optional[list[Finding]] = None
                     ) -> tuple[Optional[bytes], list[Finding], int, Optional[list[Hunk]]]:
        """convert_text's answer and the changed lines (core.edits.line_hunks; None for a notebook); the
        findings suppressed (core/suppress.py) are appended to `suppressed` when given."""
        if kind == "notebook":
            return (*self.convert_notebook(rel, data, suppressed), None)
        text = decode(data)
        if text is None:
            raise UnicodeError("cannot decode the file (not UTF-8, a declared encoding, or GBK)")
        lines = text.text.count("\n") + 1
        if kind != "python":
            new, kept, findings = self.shell.convert(rel, text.text, text.newline, suppressed)
            if new == text.text:
                return None, findings, lines, None
            return text.encode(new), findings, lines, edits.line_hunks(text.text, kept)
        src = SourceFile(rel, text.text)
        launch = rel == self.options.launch
        role = FileRole(launch=launch, device_env=self.options.device_env if launch else "",
                        shim=self.options.runtime_shim and is_entry(rel, src), facts=self.options.project)
        new, kept, findings = self.python.convert(rel, text.text, text.newline, role, src=src, suppressed=suppressed)
        if new == text.text:
            return None, findings, lines, None
        problem = broken_spans(text.text, new, edits.changed_spans(kept, src.statement_spans(), src.line_starts,
                                                                    len(text.text)))
        if problem is not None:  # a torchport (or user rule) bug: the file fails, the original is kept
            findings.append(Finding(rel, 1, 1, codes.TP000.id, FAILED, ERROR, message=(
                f"the converted text does not parse ({problem}); copied unchanged, please report it "
                "(with the rule file, if one was given)")))
        else:
            missing = undefined_after(text.text, new, [(e.start, e.end, e.text) for e in kept])
            if missing:  # compiles, but would stop with NameError: the same bug, the same outcome
                findings.append(Finding(rel, 1, 1, codes.TP000.id, FAILED, ERROR, message=(
                    f"the converted text reads {', '.join(missing)}, which it does not define; copied unchanged, "
                    "please report it (with the rule file, if one was given)")))
        return text.encode(new), findings, lines, edits.line_hunks(text.text, kept)

    def convert_notebook(self, rel: str, data: bytes, suppressed: Optional[list[Finding]] = None
                         ) -> tuple[Any, list[Finding], int]:   # Converted; Any: analyze/scan.py's `_new` is a str too
        """convert_text for a notebook: its code cells, joined, are converted as one Python source (see
        notebook.py); a cell that does not parse is left and reported, one that would stop parsing fails
        the file."""
        nb, cells = notebook.load(data)
        findings: list[Finding] = []
        good: list[notebook.Cell] = []
        for cell in cells:
            try:
                ast.parse(cell.source)
                good.append(cell)
            except (SyntaxError, ValueError, RecursionError) as e:
                line = getattr(e, "lineno", None) or 1
                cuda = "cuda" in cell.source.lower()  # left unconverted: an error when it holds CUDA code
                findings.append(Finding(rel, line, line, codes.TP000.id, "input", ERROR if cuda else ADVICE,
                                        message=f"cell {cell.index + 1}: not Python ({getattr(e, 'msg', e)}); "
                                                "left as it is" + (", and it mentions CUDA" if cuda else "")))
        lines = sum(c.source.count("\n") + 1 for c in cells)
        if not good:
            return None, findings, lines
        source, starts = notebook.join(good)
        left: list[Finding] = []
        new, _kept, found = self.python.convert(rel, source, suppressed=left)
        findings += notebook.place(found, starts)
        if suppressed is not None:
            suppressed += notebook.place(left, starts)
        if new == source:
            return None, findings, lines
        by_index = {c.index: c for c in good}
        for index, text in notebook.split(new, good).items():
            cell = by_index[index]
            problem = broken_python(text.encode("utf-8"), cell.source.encode("utf-8"))
            if problem is not None:
                findings.append(Finding(rel, 1, 1, codes.TP000.id, FAILED, ERROR,
                                        message=f"cell {index + 1}: the converted cell does not parse ({problem}); "
                                                "the notebook is copied unchanged, please report it"))
            elif text != cell.source:
                notebook.store(nb, cell, text)
        return notebook.dump(nb, like=data), findings, lines


def _with_triggers(r: Checker, words: Iterable[str]) -> Checker:
    from dataclasses import replace

    return replace(r, triggers=tuple(sorted(set(r.triggers) | set(words))),
                   needs=tuple(sorted(set(r.needs) | set(words))))


def is_entry(rel: str, src: SourceFile) -> bool:
    """An entry script: a `__main__.py`, a file with a top-level `if __name__ == "__main__":` block, or a script
    that does its work at the top level (a call, a loop or a `with` there, not only definitions)."""
    if rel.rsplit("/", 1)[-1] == "__main__.py":
        return True
    try:
        body = src.tree.body
    except (SyntaxError, ValueError):
        return False
    for s in body:
        if isinstance(s, ast.If) and isinstance(s.test, ast.Compare) and len(s.test.comparators) == 1 and \
                {getattr(s.test.left, "id", None), getattr(s.test.comparators[0], "value", None)} \
                == {"__name__", "__main__"}:
            return True
        if isinstance(s, (ast.For, ast.While, ast.With)) or isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            return True
    return False


def kind_of(rel: str) -> str:
    """What a file is, by its name (suffixes in any case: `train.PY` is Python)."""
    rel = rel.lower()
    if rel.endswith(PY_SUFFIXES):
        return "python"
    if rel.endswith(notebook.NOTEBOOK_SUFFIXES):
        return "notebook"
    if rel.endswith(SHELL_SUFFIXES):
        return "shell"
    return "other"


# ------------------------------------------------------------------ worker
_WORKER: dict[str, Any] = {}


def _init_worker(target: Target, options: Options, mode: str, roots: Roots = (None, None, None),
                 pack: Optional[Pack] = None) -> None:
    _WORKER["conv"] = Converter(target, options=options)
    _WORKER["mode"] = mode
    _WORKER["roots"] = roots  # (input root, output root, backup root): where links point, writes may go
    _WORKER["pack"] = pack    # earlier results (reuse.py), or None: every file is converted


def process(job: Job) -> ConvertedFile:
    """Convert or copy one entry; job = (entry, dst path or None, backup path or None, source bytes to
    convert instead of the file's, or None).  Reading or writing failing is this file's error."""
    entry, dst, backup, pre = job
    try:
        return _process(entry, dst, backup, pre)
    except writes.Unreadable as e:
        return ConvertedFile(entry.rel, "error", kind=kind_of(entry.rel), findings=[tree.read_error(entry.rel, e)],
                             message=f"cannot read: {e.strerror}")
    except OSError as e:
        what = f"cannot write this file ({e.strerror or e}); " + (
            "the original is unchanged" if _WORKER["mode"] == "in-place" else "left out of the output")
        return ConvertedFile(entry.rel, "error", kind=kind_of(entry.rel), findings=[Finding(entry.rel, 1, 1,
                             codes.TP000.id, "output", ERROR, message=what)], message=what)


def _process(entry: Entry, dst: Optional[Path], backup: Optional[Path], pre: Optional[bytes]) -> ConvertedFile:
    mode = _WORKER["mode"]
    src_root, out_root, _backup_root = _WORKER["roots"]
    rel = entry.rel
    kind = kind_of(rel)
    problem = tree.problem_finding(entry)
    if problem is not None:
        return ConvertedFile(rel, "error" if problem.action == ERROR else "skipped", kind=kind, findings=[problem],
                             message=problem.message)
    if entry.kind == "link-outside":
        return ConvertedFile(rel, "skipped", kind=kind,
                             message="symlink to outside the input: not followed, not copied")
    if mode == "write":
        dst = cast(Path, dst)   # the write mode gives every job its destination
        writes.make_dirs(out_root, dst.parent)
    if entry.kind == "link":
        if mode == "write":
            tree.copy_link(entry, cast(Path, dst), src_root, out_root)   # write mode: a destination
        return ConvertedFile(rel, "copied", kind=kind, message="symlink recreated")
    if kind == "other" or entry.excluded:
        return _copied(entry, dst, kind)
    return _source(entry, dst, backup, pre, kind)


def _copied(entry: Entry, dst: Optional[Path], kind: str) -> ConvertedFile:
    """A file convert copies as it is: excluded, or not a kind it converts (its config values reported)."""
    conv, mode, rel = _WORKER["conv"], _WORKER["mode"], entry.rel
    if mode == "write":
        writes.copy_file(entry.src, cast(Path, dst), keep_same=True)   # write mode: a destination
    if entry.excluded:
        return ConvertedFile(rel, "excluded", kind=kind)
    result = other_file(rel, entry.src, conv.target)
    selection = conv.python.selection
    if selection and result.findings:  # config values: --select/--ignore only (no comments read there)
        result.suppressed = [f for f in result.findings if not selection.allows(f.rule, f.file)]
        result.findings = [f for f in result.findings if selection.allows(f.rule, f.file)]
    return result


def _source(entry: Entry, dst: Optional[Path], backup: Optional[Path], pre: Optional[bytes], kind: str) -> ConvertedFile:
    """A Python file, notebook or shell script: converted (or its result taken from the last run, reuse.py) and
    delivered as the mode says; a file torchport cannot convert is copied unchanged and is this file's error."""
    conv, mode, rel = _WORKER["conv"], _WORKER["mode"], entry.rel
    try:
        info = os.lstat(entry.src)
        data = tree.read_bytes(entry.src)
    except OSError as e:
        raise writes.Unreadable(e.errno, e.strerror, str(entry.src)) from None

    def copied_unchanged(finding: Union[Finding, list[Finding]], what: str, trace: str = "") -> ConvertedFile:
        if mode == "write":
            writes.write_file(cast(Path, dst), data, info)   # write mode: a destination
        found = finding if isinstance(finding, list) else [finding]
        return ConvertedFile(rel, "error", kind=kind, findings=found, lines=data.count(b"\n") + 1, message=what,
                             trace=trace)

    pack: Optional[Pack] = _WORKER["pack"] if pre is None else None
    key = pack.key(rel, kind, data) if pack is not None else None
    hit = pack.get(key) if pack is not None and key is not None else None
    suppressed: list[Finding] = []
    try:
        if hit is not None:
            new, findings, lines, hunks, suppressed = hit
        else:
            new, findings, lines, hunks = conv.convert_file(rel, data if pre is None else pre, kind, suppressed)
        if pre is not None:  # --distributed: lines are the multi-device source's; the report diffs the texts
            new, hunks = (pre if new is None else new), None
    except (SyntaxError, UnicodeError, ValueError, RecursionError) as e:
        line = getattr(e, "lineno", None) or 1
        what = f"syntax error: {e.msg}" if isinstance(e, SyntaxError) else str(e)
        return copied_unchanged(Finding(rel, line, line, codes.TP000.id, "input", ERROR, message=f"{what}; copied unchanged"),
                                what)
    except Exception as e:  # a rule crashed: this file's error, the rest of the tree goes on
        import traceback

        what = (f"torchport failed on this file ({type(e).__name__}: {e}); copied unchanged, please report it "
                "(the traceback is in torchport.log)")
        return copied_unchanged(Finding(rel, 1, 1, codes.TP000.id, FAILED, ERROR, message=what), what, traceback.format_exc())
    failures = [f for f in findings if f.category == FAILED]
    if failures:
        return copied_unchanged(failures, failures[0].message)
    reuse = None if key is None else (key, None if hit is not None else
                                      stored_result(new, findings, lines, hunks, suppressed))
    if new is None:
        if mode == "write":
            writes.write_file(cast(Path, dst), data, info, keep_same=True)   # write mode: a destination
        return ConvertedFile(rel, "unchanged", kind=kind, findings=findings, lines=lines, suppressed=suppressed,
                             reuse=reuse)
    result = ConvertedFile(rel, "converted", kind=kind, findings=findings, lines=lines, hunks=hunks,
                           suppressed=suppressed, reuse=reuse)
    _deliver(entry, dst, backup, data, info, new, result)
    return result


def _deliver(entry: Entry, dst: Optional[Path], backup: Optional[Path], data: bytes, info: os.stat_result, new: bytes,
             result: ConvertedFile) -> None:
    """A converted file's new bytes, as the mode says: the mirror, the input itself (its bytes backed up), or
    kept in the result (--diff, --dry-run)."""
    mode, rel = _WORKER["mode"], entry.rel
    if mode == "write":
        writes.write_file(cast(Path, dst), new, info, keep_same=True)   # write mode: a destination
    elif mode == "in-place":
        writes.rewrite(entry.src, data, info, new, cast(Path, backup), _WORKER["roots"][2])   # in place: a backup
        if info.st_nlink > 1:
            result.findings.append(Finding(rel, 1, 1, codes.TP000.id, "output", ADVICE, message=(
                f"had {info.st_nlink - 1} other hard link(s): written as a new file, the other names keep "
                "the original text")))
    else:  # diff, dry-run: nothing is written, so the result keeps the converted text
        result.new_text = cast(Text, decode(new)).text   # torchport's own output: it decodes
        if mode == "diff":
            result.diff = unified_diff(cast(Text, decode(data)).text, result.new_text, f"a/{rel}", f"b/{rel}")


def other_file(rel: str, path: Path, target: Target) -> ConvertedFile:
    """A file convert copies unchanged: config settings reported (config.py), a mention of CUDA in a text file
    counted (a binary file's "cuda", such as a checkpoint's storage tags, is not a line to edit: `torchport ckpt`)."""
    try:
        data = tree.read_bytes(path, config.MENTION_BYTES)
    except OSError:
        return ConvertedFile(rel, "copied", kind="other")
    findings: list[Finding] = []
    lowered = data.lower()
    if config.is_config(rel) and (b"cuda" in lowered or b"nccl" in lowered):
        text = decode(data)
        findings = config.config_settings(rel, text.text, target) if text is not None else []
    binary = b"\0" in data[:8192]   # a checkpoint, an archive, an image: its bytes are not lines anyone edits
    at = None if _PACKAGE_METADATA.search(rel) or binary else _CUDA_MENTION.search(lowered)
    return ConvertedFile(rel, "copied", kind="other", findings=findings, mentions_cuda=at is not None,
                         mention_line=lowered.count(b"\n", 0, at.start()) + 1 if at else 0)


# "cuda" in a file convert copies, other than inside words that are not CUDA (timm's ImageNet synsets list the
# barracuda)
_CUDA_MENTION = re.compile(rb"(?<!barra)cuda")
# A build's package metadata (`x.egg-info/SOURCES.txt` lists a file `tests_cuda.py`; `x.dist-info/RECORD`):
# written by the build tool from the sources, so it mentions CUDA only where they do.
_PACKAGE_METADATA = re.compile(r"(?:^|/)[^/]+\.(?:egg|dist)-info/")


def compile_error(text: Union[str, bytes], first_line: int = 1) -> Optional[str]:
    """Why `text` does not compile as Python (None when it does).  Compiling, not only parsing: `yield` or
    `await` outside a function parse, and fail at import.  Lines count from `first_line`."""
    try:
        with warnings.catch_warnings():  # the user's invalid escapes are not ours to print
            warnings.simplefilter("ignore")
            compile(text, "<converted>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError) as e:
        return f"line {(getattr(e, 'lineno', None) or 1) + first_line - 1}: {getattr(e, 'msg', None) or e}"
    return None


def broken_python(new: bytes, old: bytes) -> Optional[str]:
    """Why `new` does not compile when `old` did (None when it does, or when neither did)."""
    def error(data: bytes) -> Optional[str]:
        text = decode(data)
        return compile_error(text.text if text is not None else data)

    problem = error(new)
    return problem if problem is not None and error(old) is None else None


_CONTEXTUAL = re.compile(r"__future__|\bglobal\b")  # statements whose validity depends on earlier ones


def broken_spans(old: str, new: str, spans: list[tuple[tuple[int, int], tuple[int, int]]]) -> Optional[str]:
    """broken_python, looking first at the changed spans only (core.edits.changed_spans): when every span's
    new text compiles, so does the file (a top-level statement compiles alone as in its module), at a
    fraction of the cost.  The file decides when a span does not compile (an inserted decorator or indented
    line may belong to the next statement) or holds what depends on earlier statements (`from __future__`,
    a module-level `global`)."""
    whole = any(_CONTEXTUAL.search(new, start, end) for _old, (start, end) in spans) \
        or any(compile_error(new[start:end]) is not None for _old, (start, end) in spans)
    return broken_python(new.encode("utf-8"), old.encode("utf-8")) if whole else None


def _process_chunk(jobs: list[Job]) -> list[ConvertedFile]:
    return [process(job) for job in jobs]


# ------------------------------------------------------------------ run
def _weight(job: Job) -> int:
    entry = job[0]
    return 0 if entry.kind != "file" or kind_of(entry.rel) == "other" else entry.size


def run_jobs(jobs: list[Job], target: Target, options: Options, mode: str, n_jobs: int,
             progress: Optional[Callable[[int, int], object]] = None, roots: Roots = (None, None, None),
             pack: Optional[Pack] = None) -> list[ConvertedFile]:
    """Process all jobs, in worker processes when there is enough Python to pay for them; roots: (input,
    output, backup) folders (see _init_worker); pack: earlier results to use again (reuse.py)."""
    def weight(job: Job) -> int:  # a file expected from the pack costs a read and a write, not a conversion
        return 0 if pack is not None and pack.expects_hit(job[0]) else _weight(job)

    return parallel.run(jobs, _init_worker, (target, options, mode, roots, pack), process, n_jobs, weight, progress)


def timer() -> Callable[[], float]:
    start = time.perf_counter()
    return lambda: time.perf_counter() - start
