"""One file, every target: what `convert` would do per target, plus what only `analyze` looks for.

Python files are read, prefiltered and parsed once; each target's converter
then walks the same tree in find-only mode (the rules never change the tree),
so the per-target answers are exactly `convert`'s.  The same pass collects
imports of CUDA-only packages; C/C++/CUDA sources and dependency files get
their own scanners.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from typing import Optional

from ..converter import config
from ..converter.project import Facts
from ..converter.python import FileRole, SourceFile
from ..converter.run import Converter, kind_of
from ..core import codes
from ..core import files as tree
from ..core.finding import ADVICE, ERROR, OPTIONAL_IMPORT, Finding
from ..core.pipeline import FileResult, guarded
from ..core.textfile import decode
from ..kb.packages import packages

# the extension ops' call sites (TP907) are porting's, shared with port-ext; bench/redos_bench.py times the two
# regexes under these names
from ..porting.callsites import call_site_pattern, call_sites
from ..porting.native import NATIVE_SUFFIXES, NativeScan, scan_native
from . import advice as perf
from .deps import dependency_findings, is_dependency_file
from .libraries import imports_libraries, project_uses

OPTIONAL = "optional: its module is imported under try/except ImportError, and the project runs without it"
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException", "OSError"}


def optional_modules(tree) -> set:
    """Names bound only by imports inside `try:` blocks that catch ImportError (Swin's fused kernel:
    `try: import fused_window_process except ImportError: ...`): code the project runs without."""
    guarded, plain = set(), set()

    def names(stmt):
        if isinstance(stmt, ast.Import):
            return {a.asname or a.name.split(".")[0] for a in stmt.names}
        if isinstance(stmt, ast.ImportFrom):
            return {a.asname or a.name for a in stmt.names}
        return set()

    tried = set()
    for stmt in guarded_imports(tree):
        guarded |= names(stmt)
        tried.add(id(stmt))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in tried:
            plain |= names(node)
    return guarded - plain


def guarded_imports(tree) -> list:
    """The import statements directly in a `try:` block that catches ImportError (or everything)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                h.type is None or any(isinstance(n, ast.Name) and n.id in _IMPORT_ERRORS for n in ast.walk(h.type))
                for h in node.handlers):
            out += [stmt for stmt in node.body if isinstance(stmt, (ast.Import, ast.ImportFrom))]
    return out


@dataclass
class FileScan(FileResult):
    """status: scanned | clean | error | skipped; `findings` are the target-independent ones (`common`)."""

    kind: str = "other"                # python | shell | native | deps | other
    lines: int = 0
    per_target: dict = field(default_factory=dict)    # target -> [Finding] (what convert reports)
    native: Optional[NativeScan] = None
    edits: dict = field(default_factory=dict)         # target -> [Edit] convert would make (keep_edits only)
    advice: list = field(default_factory=list)        # [advice.Hit] of kb/advice.toml's rules (analyze only)
    entry: bool = False                               # the file has a `__main__` guard
    mentions: frozenset = frozenset()                 # advice rules' `unless_mentioned` words the file holds
    suppressed: dict = field(default_factory=dict)    # target -> [Finding] left out (core/suppress.py)
    uses: list = field(default_factory=list)          # [libraries.Use] of installed libraries (analyze only)

    @property
    def common(self) -> list:
        """Target-independent findings: packages, dependencies, C++ sources, errors."""
        return self.findings

    @common.setter
    def common(self, value: list) -> None:
        self.findings = value


class Analyzer:
    """Per-process state: a converter per target, the package knowledge base, and the ops the
    project's C++ extensions export (found first, so Python call sites can be matched here)."""

    def __init__(self, targets: tuple, ext_ops: tuple = (), library_ops: tuple = (), own: tuple = (),
                 keep_edits: bool = False, advice: bool = False, selection=None,
                 project: Optional[Facts] = None):
        self.converters = {t: Converter(t, own_packages=own, selection=selection, project=project or Facts())
                           for t in targets}
        self.keep_edits = keep_edits  # `torchport check --format sarif` turns convert's edits into fixes
        self.advice = perf.rules_for(targets) if advice else ()  # performance advice (analyze, not check)
        self.packages = packages()
        self.call_site = call_site_pattern(ext_ops, library_ops)
        self.own = set(own)  # the project's own top-level packages

    def scan(self, entry) -> FileScan:
        rel = entry.rel
        problem = tree.problem_finding(entry)
        if problem is not None:
            return FileScan(rel, "error" if problem.action == ERROR else "skipped", kind="other", findings=[problem])
        if entry.kind != "file" or entry.excluded:
            return FileScan(rel, "skipped", kind="other")
        kind = kind_of(rel)
        if rel.endswith(NATIVE_SUFFIXES):
            kind = "native"
        elif kind == "other" and is_dependency_file(rel):
            kind = "deps"
        if kind == "other":
            return self._other(rel, entry.src)
        try:
            data = tree.read_bytes(entry.src)
        except OSError as e:
            return FileScan(rel, "error", kind=kind, findings=[tree.read_error(rel, e)])
        text = decode(data) if kind != "native" or b"\0" not in data else None  # NULs: UTF-16, or binary
        if text is None:
            return FileScan(rel, "error", kind=kind, lines=data.count(b"\n") + 1, findings=[Finding(
                rel, 1, 1, codes.TP000.id, "input", ERROR, message=(
                    "cannot decode the file" if b"\0" not in data else
                    "not scanned: the file holds NUL bytes (UTF-16 or binary, not source text)"))])
        result = FileScan(rel, "scanned", kind=kind, lines=text.text.count("\n") + 1)
        if self.advice:
            result.mentions = perf.mentions(text.text, self.advice)
        if kind == "python":
            self._python(result, text)
            if is_dependency_file(rel):  # setup.py
                result.common += dependency_findings(rel, text.text, self.packages)
        elif kind == "shell":
            for t, conv in self.converters.items():
                _new, kept, result.per_target[t] = conv.shell.convert(rel, text.text, text.newline,
                                                                      result.suppressed.setdefault(t, []))
                if self.keep_edits:
                    result.edits[t] = kept
        elif kind == "notebook":
            for t, conv in self.converters.items():
                try:
                    _new, result.per_target[t], _lines = conv.convert_notebook(rel, data,
                                                                               result.suppressed.setdefault(t, []))
                except ValueError as e:
                    result.status = "error"
                    result.common.append(Finding(rel, 1, 1, codes.TP000.id, "input", ERROR, message=str(e)))
                    break
        elif kind == "native":
            result.native = NativeScan()
            scan_native(rel, text.text, result.native)
        else:
            result.common += dependency_findings(rel, text.text, self.packages)
            if config.is_config(rel):  # pyproject.toml: a config too
                for t, conv in self.converters.items():
                    result.per_target[t] = config.config_settings(rel, text.text, conv.target)
        return result

    def _other(self, rel: str, path) -> FileScan:
        """A file convert copies: config settings reported for every target (converter/config.py)."""
        result = FileScan(rel, "skipped", kind="other")
        if not config.is_config(rel):
            return result
        try:
            text = decode(tree.read_bytes(path, config.MENTION_BYTES))
        except OSError:
            return result
        if text is not None and self.advice:  # a launch config may set what an advice rule asks for
            result.mentions = perf.mentions(text.text, self.advice)
        if text is not None and ("cuda" in text.text.lower() or "nccl" in text.text.lower()):
            for t, conv in self.converters.items():
                result.per_target[t] = config.config_settings(rel, text.text, conv.target)
            result.status = "scanned"
        return result

    def _python(self, result: FileScan, text) -> None:
        source, rel = text.text, result.path
        src = SourceFile(rel, source)
        if self.call_site is not None:
            sites = call_sites(rel, source, self.call_site)
            if sites:
                try:
                    optional = optional_modules(src.tree)
                except (SyntaxError, ValueError, RecursionError):
                    optional = set()
                sites = [replace(f, message=f"{f.message}; {OPTIONAL}", reasons=f.reasons + (OPTIONAL_IMPORT,))
                         if f.old.split(".")[0] in optional else f for f in sites]
            result.common += sites
        if self.advice:   # analyze: the file is parsed for its advice, and read for its library uses too
            try:
                result.advice, result.entry = perf.file_hits(src, self.advice)
                if imports_libraries(source, self.own):
                    result.uses = project_uses(rel, src.tree, self.own)
            except (SyntaxError, ValueError, RecursionError):
                pass  # not parsable: reported below when convert would look at it
        first = next(iter(self.converters.values()))
        python = first.python
        if not python.wants(src.lowered) and rel not in first.options.project.device_users:
            result.status = "clean"
            return
        try:
            src.tree  # noqa: B018 - parse now, so a syntax error is reported once, not per target
        except (SyntaxError, ValueError) as e:
            line = getattr(e, "lineno", None) or 1
            result.status = "error"
            result.common.append(Finding(rel, line, line, codes.TP000.id, "input", ERROR,
                                         message=f"syntax error: {getattr(e, 'msg', e)}"))
            return
        for t, conv in self.converters.items():
            role = FileRole(facts=conv.options.project)
            _new, kept, result.per_target[t] = conv.python.convert(rel, source, text.newline, role, src=src, wanted=True,
                                                                   suppressed=result.suppressed.setdefault(t, []))
            if self.keep_edits:
                result.edits[t] = kept
        if python.imports_cuda_package(src.lowered):
            result.common += self._package_imports(rel, src)

    def _package_imports(self, rel: str, src) -> list:
        out = []
        seen = set()
        try:
            guarded = {id(stmt) for stmt in guarded_imports(src.tree)}
        except (SyntaxError, ValueError, RecursionError):
            guarded = set()
        for node, _scope in src.import_nodes():
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if node.level == 0 else []
            for module in modules:
                if module.split(".")[0] in self.own:
                    continue
                pkg = self.packages.by_import(module)
                if pkg is not None and (node.lineno, pkg.name) not in seen:
                    seen.add((node.lineno, pkg.name))
                    out.append(Finding(rel, node.lineno, node.end_lineno, codes.TP908.id, "third-party", ADVICE,
                                       old=f"import {module}" if isinstance(node, ast.Import) else f"from {module} import ...",
                                       message=f"{pkg.name}: {pkg.kind}; {pkg.what}"
                                       + (f"; {OPTIONAL}" if id(node) in guarded else ""),
                                       reasons=(OPTIONAL_IMPORT,) if id(node) in guarded else ()))
        return out


_ANALYZER: dict = {}


def init_worker(targets: tuple, ext_ops: tuple = (), library_ops: tuple = (), own: tuple = (),
                keep_edits: bool = False, advice: bool = False, selection=None,
                project: Optional[Facts] = None) -> None:
    _ANALYZER["a"] = Analyzer(targets, ext_ops, library_ops, own, keep_edits, advice, selection, project)


def scan_entry(entry) -> FileScan:
    return _ANALYZER["a"].scan(entry)


def _scan_failed(rel: str, finding, trace: str) -> FileScan:
    return FileScan(rel, "error", kind=kind_of(rel), findings=[finding], trace=trace)


def _entry_rel(entry) -> str:
    return entry.rel


# scan_entry for the pipeline: a file torchport fails on is that file's internal error; the run goes on
guarded_scan = guarded(scan_entry, _scan_failed, _entry_rel)
