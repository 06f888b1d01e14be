"""Installed libraries the project calls: the CUDA code on the paths it calls.

A converted project can still run CUDA code inside a library it calls (a data-mixing helper whose
`device="cuda"` default sends a tensor to CUDA).  This module finds that code without importing anything:

1. the project's uses of installed packages: each name it imports from a package that is not its own, not
   the standard library, not the framework the target ships its own build of (FRAMEWORK) and not one of
   kb/packages.toml's CUDA packages (those are reported on their own), with each call's arguments;
2. where each name is defined, on an interpreter's sys.path (this one, or another's: `--python PATH`),
   following re-exports (`from .mixing import mixup` in an `__init__.py`);
3. the definitions reached from there: the function, or the whole class, and the functions of the same
   package they call, CALL_DEPTH calls deep;
4. convert's own rules for the target, run on those modules: their changes and unsupported findings inside
   the definitions reached are the CUDA code on the project's path.  One in a parameter's default
   (`device="cuda"`) counts only where the call leaves that parameter out.

The answer, per target, is a Reach per use in the project that reaches CUDA code.
"""
from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union, cast

from ..core.errors import UsageError
from ..core.finding import CHANGES, UNSUPPORTED

# The framework: the target ships its own build of these (or they are the target's), so their CUDA code is
# the framework's business, not the project's.
FRAMEWORK = frozenset({"torch", "torchvision", "torchaudio", "torchtext", "functorch", "torch_npu", "torch_mlu",
                       "torch_musa", "intel_extension_for_pytorch", "torchport"})
CALL_DEPTH = 3            # calls followed inside a library, from the definition the project names
MAX_MODULES = 400         # library modules read in one run (the rest is said to be unread)
MAX_BYTES = 2 << 20       # a larger module is not read
RESOLVE_DEPTH = 12        # re-exports followed to find one name's definition
MAX_REACHED = 300         # definitions followed from one the project names


@dataclass(frozen=True)
class Touch:
    """CUDA code in a library, on a path the project calls."""

    file: str        # the module, relative to its sys.path entry (mixlib/mixing.py)
    line: int
    old: str
    new: str         # what convert would write there ("" when the target has no counterpart)
    rule: str
    default_of: str = ""   # the parameter whose default it is


@dataclass
class Reach:
    """One use in the project (file:line) of a library name whose definition reaches CUDA code."""

    file: str
    line: int
    name: str        # the qualified name used: mixlib.mixing.mixup
    package: str     # its top-level package
    touches: list = field(default_factory=list)

    def describe(self, limit: int = 3) -> str:
        parts = []
        for t in self.touches[:limit]:
            what = f"`{t.old}` -> `{t.new}`" if t.new else f"`{t.old}` (no counterpart)"
            parts.append(f"{t.file}:{t.line} {what}" + (f", the default of {t.default_of}=" if t.default_of else ""))
        more = len(self.touches) - limit
        return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")

    def to_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "name": self.name, "package": self.package,
                "touches": [t.__dict__ for t in self.touches]}


@dataclass
class LibraryScan:
    interpreter: str
    read: list = field(default_factory=list)        # top-level packages found and read
    missing: list = field(default_factory=list)     # imported, not found on that interpreter's path
    reaches: dict = field(default_factory=dict)     # target -> [Reach]
    unread: int = 0                                  # modules left unread (MAX_MODULES, MAX_BYTES, syntax)

    def summary(self) -> dict:
        return {"interpreter": self.interpreter, "packages_read": self.read, "packages_missing": self.missing,
                "modules_unread": self.unread,
                "reaches": {t: len(r) for t, r in self.reaches.items()}}

    def to_dict(self) -> dict:
        return {**self.summary(), "reaches": {t: [r.to_dict() for r in rs] for t, rs in self.reaches.items()}}


@dataclass(frozen=True)
class Arguments:
    """What a call passes: how many positional arguments, which keywords, and whether * or ** hides more."""

    positional: int
    keywords: frozenset
    hidden: bool

    @classmethod
    def of(cls, call: ast.Call) -> Arguments:
        return cls(sum(1 for a in call.args if not isinstance(a, ast.Starred)),
                   frozenset(k.arg for k in call.keywords if k.arg),
                   any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords))

    def passes(self, parameter: str, position: int) -> bool:
        """Does the call give `parameter` (by keyword, by position, or maybe through * or **)?"""
        return self.hidden or parameter in self.keywords or 0 <= position < self.positional


@dataclass(frozen=True)
class Use:
    """A use, in the project, of a name from an installed library."""

    file: str
    line: int
    name: str                        # qualified: mixlib.mixing.mixup
    call: Optional[Arguments]        # None: referenced, not called there


@dataclass(frozen=True)
class Definition:
    module: str
    path: Path
    node: ast.stmt                 # FunctionDef, AsyncFunctionDef or ClassDef


# ------------------------------------------------------------------ the interpreter's path
def search_path(python: Optional[str]) -> tuple:
    """(the interpreter's name, its sys.path entries that are folders): this process's, or `python`'s."""
    if python is None:
        entries = [p for p in sys.path if p]
        return sys.executable, [p for p in entries if os.path.isdir(p)]
    found = python if os.sep in python else shutil.which(python)
    if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise UsageError(f"--python {python}: no such program (an interpreter's path, or a name on PATH)")
    found = os.path.abspath(found)   # it runs in another folder: a relative path must still name it
    code = "import json, sys; print(json.dumps(sys.path))"
    try:
        with tempfile.TemporaryDirectory() as cwd:   # its '' entry must not be the project
            printed = Path(cwd) / "sys.path.json"
            # its output goes to a file, not a pipe, and its process group is ended when it exits: a wrapper
            # script that leaves a process behind (`sleep 90 &`) keeps no pipe open to wait on
            with open(printed, "w") as sink:
                child = subprocess.Popen([found, "-c", code], cwd=cwd, stdout=sink, stderr=subprocess.DEVNULL,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
                try:
                    returncode = child.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    returncode = None
                finally:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(child.pid, signal.SIGKILL)
            if returncode is None:
                raise UsageError(f"--python {python}: it did not print its sys.path within 60 s")
            output = printed.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise UsageError(f"--python {python}: cannot run it ({getattr(e, 'strerror', None) or e})") from None
    try:
        entries = json.loads(output.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise UsageError(f"--python {python}: it did not print its sys.path (exit {returncode})") from None
    return python, [p for p in entries if isinstance(p, str) and p and os.path.isdir(p)]


class Modules:
    """Library modules found on a search path, parsed once, with their top-level names."""

    def __init__(self, roots: list):
        self.roots = [Path(r) for r in roots]
        self._found: dict = {}
        self._trees: dict = {}
        self._symbols: dict = {}
        self._mentions: dict = {}
        self.read = 0
        self.unread = 0

    def find(self, module: str) -> Optional[tuple]:
        """(file, its root) of a dotted module name, or None."""
        if module not in self._found:
            self._found[module] = None
            parts = module.split(".")
            for root in self.roots:
                base = root.joinpath(*parts)
                path = next((p for p in (base / "__init__.py", base.with_name(parts[-1] + ".py")) if p.is_file()),
                            None)
                if path is not None:
                    self._found[module] = (path, root)
                    break
        return self._found[module]

    def namespace(self, top: str) -> bool:
        """Is `top` a namespace package here (a folder without __init__.py: google, nvidia)?"""
        return any((root / top).is_dir() for root in self.roots)

    def mentions_cuda(self, top: str) -> frozenset:
        """The files of top-level package `top` whose text mentions CUDA: only paths into them can reach any."""
        if top not in self._mentions:
            found = self.find(top)
            files: set = set()
            if found is not None:
                path, _ = found
                candidates: list = list(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
            else:   # a namespace package: its folders on every root
                candidates = [f for root in self.roots if (root / top).is_dir() for f in (root / top).rglob("*.py")]
            for f in candidates:
                try:
                    if f.stat().st_size <= MAX_BYTES and b"cuda" in f.read_bytes().lower():
                        files.add(f)
                except OSError:
                    continue
            self._mentions[top] = frozenset(files)
        return self._mentions[top]

    def tree(self, path: Path) -> Optional[ast.Module]:
        if path not in self._trees:
            self._trees[path] = None
            if self.read >= MAX_MODULES:
                self.unread += 1
                return None
            try:
                if path.stat().st_size > MAX_BYTES:
                    self.unread += 1
                    return None
                self._trees[path] = ast.parse(path.read_bytes())
                self.read += 1
            except (OSError, SyntaxError, ValueError, RecursionError):
                self.unread += 1
        return self._trees[path]

    def source(self, path: Path) -> str:
        return path.read_text(encoding="utf-8", errors="replace")

    def symbols(self, module: str, path: Path) -> dict[str, Union[ast.stmt, str]]:
        """{name: a definition node, or the qualified name an import or assignment binds it to}: the module's
        top-level names (a definition wins over an import of the same name)."""
        if path not in self._symbols:
            table: dict[str, Union[ast.stmt, str]] = {}
            tree = self.tree(path)
            for stmt in _top_level(tree.body if tree is not None else []):
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    if not isinstance(table.get(stmt.name), ast.AST):
                        table[stmt.name] = stmt
                    continue
                for name, qualname in _bound_by(stmt, module, path.name == "__init__.py"):
                    table.setdefault(name, qualname)
            self._symbols[path] = table
        return self._symbols[path]

    # ---------------------------------------------------------- names
    def resolve(self, qualname: str, depth: int = 0) -> Optional[Definition]:
        """The function or class `qualname` names (pkg.mod.func, pkg.Class.method), following re-exports."""
        parts = qualname.split(".")
        for k in range(len(parts), 0, -1):
            found = self.find(".".join(parts[:k]))
            if found is not None:
                break
        else:
            return None
        rest = parts[k:]
        if not rest or depth > RESOLVE_DEPTH:
            return None
        return self.in_module(".".join(parts[:k]), found[0], rest, depth)

    def in_module(self, module: str, path: Path, rest: list, depth: int) -> Optional[Definition]:
        """What `rest` (name, then attributes) names in `module`."""
        name, more = rest[0], rest[1:]
        bound = self.symbols(module, path).get(name)
        if isinstance(bound, ast.ClassDef) and more:
            method = next((s for s in bound.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and s.name == more[0]), None)
            return Definition(module, path, method or bound)
        if isinstance(bound, ast.AST):
            return Definition(module, path, bound)
        if isinstance(bound, str) and bound != f"{module}.{name}":
            return self.resolve(".".join([bound, *more]), depth + 1)
        return None


def _top_level(body: list):
    """The module's statements, inside if/try/with blocks too (not inside functions or classes)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody"):
                yield from _top_level(getattr(stmt, block, []))
            for handler in getattr(stmt, "handlers", []):
                yield from _top_level(handler.body)


def _bound_by(stmt, module: str, is_package: bool) -> list:
    """[(name, the qualified name it is bound to)] by an import or a `name = other.name` statement."""
    if isinstance(stmt, ast.ImportFrom):
        base = absolute(module, stmt.level, stmt.module, is_package)
        return [(a.asname or a.name, f"{base}.{a.name}") for a in stmt.names if base and a.name != "*"]
    if isinstance(stmt, ast.Import):
        return [(a.asname, a.name) for a in stmt.names if a.asname]
    if isinstance(stmt, ast.Assign):
        dotted = _dotted(stmt.value)
        if dotted:
            qualname = f"{module}.{dotted}" if "." not in dotted else dotted
            return [(t.id, qualname) for t in stmt.targets if isinstance(t, ast.Name)]
    return []


def absolute(module: str, level: int, target: Optional[str], is_package: bool) -> str:
    """The absolute module of `from <level dots><target> import ...` written in `module`."""
    if not level:
        return target or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    if level - 1 > len(parts):
        return ""
    base = parts[:len(parts) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return ""


# ------------------------------------------------------------------ the project's uses
IMPORTED = re.compile(r"^[ \t]*(?:from[ \t]+([A-Za-z_][\w]*)|import[ \t]+([A-Za-z_][\w]*))", re.M)


def imports_libraries(text: str, own: set, skip=FRAMEWORK) -> bool:
    """Does the text import (by the look of its lines) a top-level package project_uses would follow?  A file
    that does not is not parsed for it."""
    return any(_library(a or b, own, skip) for a, b in IMPORTED.findall(text))


def project_uses(rel: str, tree: ast.Module, own: set, skip=FRAMEWORK) -> list:
    """The uses, in one project file, of names imported from packages that are not the project's own, the
    standard library's or in `skip`."""
    imports: list = []
    calls: dict = {}
    names: list = []
    for node in ast.walk(tree):   # one walk: the imports, the calls and the names, each in the walk's order
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
        elif isinstance(node, ast.Call):
            calls[id(node.func)] = node
        elif isinstance(node, (ast.Attribute, ast.Name)):
            names.append(node)
    bound: dict = {}
    for node in imports:
        if isinstance(node, ast.Import):
            for a in node.names:
                bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif node.level == 0 and node.module:
            for a in node.names:
                if a.name != "*":
                    bound[a.asname or a.name] = f"{node.module}.{a.name}"
    bound = {k: v for k, v in bound.items() if _library(v.split(".")[0], own, skip)}
    if not bound:
        return []
    inner = set()
    uses = []
    for node in names:
        if id(node) in inner:
            continue
        dotted = _dotted(node)
        if not dotted or isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)):
            continue
        root, _, tail = dotted.partition(".")
        if root not in bound:
            continue
        value: ast.expr = node
        while isinstance(value, ast.Attribute):   # the chain's parts are this use, not uses of their own
            value = value.value
            inner.add(id(value))
        call = calls.get(id(node))
        uses.append(Use(rel, node.lineno, f"{bound[root]}.{tail}" if tail else bound[root],
                        Arguments.of(call) if call is not None else None))
    return uses


def _stdlib_names() -> frozenset:
    """The standard library's top-level modules (sys.stdlib_module_names; on Python 3.9, its folder's listing and
    the modules built into the interpreter)."""
    names = getattr(sys, "stdlib_module_names", None)
    if names is not None:
        return frozenset(names)
    import sysconfig

    folder = Path(sysconfig.get_paths()["stdlib"])
    listed = {p.name[:-3] if p.name.endswith(".py") else p.name for p in folder.iterdir()
              if p.name.endswith(".py") or (p / "__init__.py").is_file()}
    dynload = folder / "lib-dynload"
    if dynload.is_dir():
        listed |= {p.name.split(".")[0] for p in dynload.iterdir()}
    return frozenset(listed | set(sys.builtin_module_names))


STDLIB = _stdlib_names()


def _library(top: str, own: set, skip) -> bool:
    return top not in own and top not in skip and top not in STDLIB and not top.startswith("_")


# ------------------------------------------------------------------ reached code
def _defaults(node) -> list:
    """[(parameter, position or -1 for keyword-only, default node)] of a function (a class: its __init__),
    `self`/`cls` not counted in positions."""
    if isinstance(node, ast.ClassDef):
        node = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    args = node.args
    positional = args.posonlyargs + args.args
    skip = 1 if positional and positional[0].arg in ("self", "cls") else 0
    out = []
    for i, default in enumerate(args.defaults, len(positional) - len(args.defaults)):
        out.append((positional[i].arg, i - skip, default))
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults):
        if kw_default is not None:
            out.append((arg.arg, -1, kw_default))
    return out


def _inside(line: int, col: int, node) -> bool:
    if not node.lineno <= line <= node.end_lineno:
        return False
    if line == node.lineno and col < node.col_offset:
        return False
    return not (line == node.end_lineno and col >= node.end_col_offset)


def _references(node) -> list:
    """[(name or attribute chain, the call it is the callee of, or None)]: what a definition calls, and the
    names it reads without calling (`codebook_class = Codebook`, a class passed on: followed too)."""
    calls = {id(n.func): n for n in ast.walk(node) if isinstance(n, ast.Call)}
    inner = set()
    out = []
    for n in ast.walk(node):
        if id(n) in inner or not isinstance(n, (ast.Name, ast.Attribute)) or not isinstance(n.ctx, ast.Load):
            continue
        value: ast.expr = n
        while isinstance(value, ast.Attribute):
            value = value.value
            inner.add(id(value))
        out.append((n, calls.get(id(n))))
    return out


def compared_strings(tree: ast.Module) -> dict[int, list[tuple[int, Optional[int]]]]:
    """{line: [(start, end) columns]} of the one-line strings a comparison tests a value against (`device_type ==
    "cuda"` in a table of names, onnxruntime's get_ort_device_type): a question, which runs anywhere, not a use
    of CUDA."""
    spans: dict[int, list[tuple[int, Optional[int]]]] = {}
    for c in ast.walk(tree):
        if isinstance(c, ast.Compare):
            for side in (c.left, *c.comparators):
                for n in ast.walk(side):
                    if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.lineno == n.end_lineno:
                        spans.setdefault(n.lineno, []).append((n.col_offset, n.end_col_offset))
    return spans


def guarded_lines(tree: ast.Module) -> set:
    """Lines that run only when a CUDA question says yes: an `if` body (or conditional expression) whose test asks
    `torch.cuda.is_available()` / `device_count()`."""
    lines: set = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.If, ast.IfExp)):
            test = ast.unparse(n.test)
            if "cuda" in test and ("is_available" in test or "device_count" in test):
                body = n.body if isinstance(n, ast.If) else [n.body]
                lines.update(range(body[0].lineno, cast(int, body[-1].end_lineno) + 1))   # set on parsed nodes
    return lines


class Reacher:
    """The CUDA code each use reaches, for the targets given."""

    def __init__(self, modules: Modules, targets: list):
        from ..backends import load_target
        from ..converter.run import Converter

        self.modules = modules
        self.converters = {t: Converter(t) for t in targets}
        self.host = {t for t in targets if load_target(t).host}   # CPU torch: a guarded CUDA branch never runs
        self._findings: dict = {}
        self._reached: dict = {}
        self._guarded: dict = {}
        self._compared: dict = {}

    def findings(self, path: Path, root: Path, target: str) -> list:
        """Convert's changes and unsupported findings in one library module (cached)."""
        key = (path, target)
        if key not in self._findings:
            self._findings[key] = []
            try:
                rel = path.relative_to(root).as_posix()
                source = self.modules.source(path)
                _new, _kept, found = self.converters[target].python.convert(rel, source)
                self._findings[key] = [f for f in found if f.action in CHANGES or f.action == UNSUPPORTED]
            except (OSError, SyntaxError, ValueError, RecursionError):
                self.modules.unread += 1
        return self._findings[key]

    def guarded(self, path: Path) -> set:
        if path not in self._guarded:
            tree = self.modules.tree(path)
            self._guarded[path] = guarded_lines(tree) if tree is not None else set()
        return self._guarded[path]

    def compared(self, path: Path) -> dict:
        if path not in self._compared:
            tree = self.modules.tree(path)
            self._compared[path] = compared_strings(tree) if tree is not None else {}
        return self._compared[path]

    def reached(self, start: Definition) -> list:
        """[(Definition, the Arguments of the call that reached it, or None)]: `start`, then what it calls in
        its package (CALL_DEPTH calls deep, MAX_REACHED definitions at most)."""
        key = (start.path, start.node.lineno)
        if key in self._reached:
            return self._reached[key]
        top = start.module.split(".")[0]
        seen = {key}
        out: list[tuple[Definition, Optional[Arguments]]] = [(start, None)]
        level = [start]
        for _ in range(CALL_DEPTH):
            below = []
            for d in level:
                for node, call in _references(d.node):
                    dotted = _dotted(node)
                    if not dotted or dotted.startswith(("self.", "cls.")) or len(out) >= MAX_REACHED:
                        continue
                    found = self.modules.in_module(d.module, d.path, dotted.split("."), 0)
                    if found is None or found.module.split(".")[0] != top:
                        continue
                    where = (found.path, found.node.lineno)
                    if where not in seen:
                        seen.add(where)
                        out.append((found, Arguments.of(call) if call is not None else None))
                        below.append(found)
            level = below
        self._reached[key] = out
        return out

    def touches(self, use: Use, target: str) -> list:
        cuda = self.modules.mentions_cuda(use.name.split(".")[0])
        start = self.modules.resolve(use.name) if cuda else None
        if start is None:
            return []
        out = []
        for n, (d, call) in enumerate(self.reached(start)):
            found = self.modules.find(d.module)
            if found is None or found[0] not in cuda:
                continue
            path, root = found
            defaults = _defaults(d.node)
            node = d.node
            guarded = self.guarded(path) if target in self.host else set()
            compared = self.compared(path)
            for f in self.findings(path, root, target):
                if not node.lineno <= f.line <= node.end_lineno or f.line in guarded or \
                        any(a <= f.col < b for a, b in compared.get(f.line, ())):
                    continue
                which = next((name for name, pos, default in defaults if _inside(f.line, f.col, default)), None)
                if which is not None:
                    pos = next(p for name, p, _ in defaults if name == which)
                    given = use.call if n == 0 else call
                    if given is not None and given.passes(which, pos):
                        continue
                out.append(Touch(f.file, f.line, f.old, f.new if f.action in CHANGES else "", f.rule, which or ""))
        return sorted(set(out), key=lambda t: (t.file, t.line, t.old))


# ------------------------------------------------------------------ the scan
def local_names(paths: list) -> set:
    """The names a project's own modules can be imported by: every folder's and every Python file's (a script's
    folder is on sys.path, so `from train import main` in a sibling script is the project's own)."""
    names = set()
    for rel in paths:
        parts = rel.split("/")
        names.update(parts[:-1])
        if parts[-1].endswith(".py"):
            names.add(parts[-1][:-3])
    return names


def scan(uses: list, targets: list, python: Optional[str] = None, local: frozenset = frozenset()) -> LibraryScan:
    """The CUDA code the project's `uses` (project_uses of each of its files) reach in the libraries installed
    for `python` (default: this interpreter), for each target; `local`: names of the project's own modules."""
    from ..kb.packages import packages

    kb = packages()
    interpreter, roots = search_path(python)
    result = LibraryScan(interpreter)
    uses = [u for u in uses if kb.by_import(u.name) is None and u.name.split(".")[0] not in local]
    if not uses:
        return result
    modules = Modules(roots)
    tops = sorted({u.name.split(".")[0] for u in uses})
    result.read = [t for t in tops if modules.find(t) is not None or modules.namespace(t)]
    result.missing = [t for t in tops if t not in result.read]
    reacher = Reacher(modules, targets)
    for target in targets:
        reaches = []
        for u in uses:
            if u.name.split(".")[0] not in result.read:
                continue
            touches = reacher.touches(u, target)
            if touches:
                reaches.append(Reach(u.file, u.line, u.name, u.name.split(".")[0], touches))
        result.reaches[target] = reaches
    result.unread = modules.unread
    return result
