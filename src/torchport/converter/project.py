"""What one file's conversion needs to know from the project's other files.

Converted one file at a time, a device string can cross a file boundary unseen:
- `device_names`: a module-level name bound to a device string in one file (`BACKEND = "cuda"` in config.py)
  is a device when another file of the project imports it and uses it as one (`torch.ones(2,
  device=BACKEND)` in train.py), though nothing in its own file says so.  The file that binds it rewrites it
  with its value group (converter/groups.py, `role`), and the files that use it get the registration import.
- `device_parameters`: a "cuda" passed to a function or class of another file (`DeviceEngine("cuda")`) is a
  device when that callable uses the parameter as one (`model.to(device)`, or `self.device = device` read as a
  device by the class).  The calling file treats the argument as a device argument (rules/devices.py,
  `device_spec`).
Both are found before the files are converted, with one parse of the few files that could tell (those that
name a candidate).
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    from ..core.files import Entry

Parents = dict[int, ast.AST]   # {id(node): its parent}
Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]

# a module-level binding of a plain device string: `BACKEND = "cuda"`, `DEVICE: str = 'cuda:0'`
BOUND = re.compile(r"^([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=[ \t]*['\"]cuda(?::\d+)?['\"][ \t]*(?:#.*)?$", re.M)
DEVICE_KEYWORDS = frozenset({"device", "map_location", "device_type", "location", "device_map"})
DEVICE_CALLS = frozenset({"device"})          # torch.device(NAME)
MOVES = frozenset({"to"})                     # x.to(NAME)


def module_names(rel: str) -> list[str]:
    """The dotted names a file can be imported by, from the longest (the tree's top on sys.path) to its own
    name (its folder on sys.path): `pkg/cfg.py` -> pkg.cfg, cfg; `pkg/__init__.py` -> pkg."""
    parts = rel[:-3].split("/") if rel.endswith(".py") else rel.split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return [".".join(parts[i:]) for i in range(len(parts)) if parts[i:]]


def _absolute(rel: str, level: int, module: str) -> list[str]:
    """Candidates for the module of `from <level dots><module> import ...` written in `rel`."""
    if not level:
        return [module]
    folder = rel.split("/")[:-1]
    base = folder[:len(folder) - (level - 1)] if level - 1 <= len(folder) else None
    if base is None:
        return []
    return [".".join(base + ([module] if module else []))]


def _device_read(node: ast.AST, parents: Parents) -> bool:
    """Is this read of a name in a place only a device goes: `device=NAME`, `x.to(NAME)`, `torch.device(NAME)`?"""
    parent = parents.get(id(node))
    if isinstance(parent, ast.keyword):
        return parent.arg in DEVICE_KEYWORDS
    if isinstance(parent, ast.Call) and parent.args and parent.args[0] is node:
        func = parent.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name in DEVICE_CALLS or isinstance(func, ast.Attribute) and name in MOVES
    return False


CUDA_STRING = re.compile(r"['\"]cuda(?::\d+)?['\"]")
CALLEE = re.compile(r"([A-Za-z_][\w.]*)[ \t]*\($")


def called_with_cuda(text: str) -> list[str]:
    """The callees (as written: `Engine`, `engines.place`) of the calls in `text` that pass a "cuda" string as an
    argument of their own (not inside a nested call or a bracket)."""
    out: list[str] = []
    for m in CUDA_STRING.finditer(text):
        before = text[max(0, m.start() - 300):m.start()]
        depth, at = 0, len(before)
        while at > 0:
            at -= 1
            ch = before[at]
            if ch in ")]}":
                depth += 1
            elif ch in "([{":
                if depth == 0:
                    break
                depth -= 1
            elif ch == "\n" and depth == 0 and not before[:at].rstrip().endswith((",", "(")):
                at = 0
        if at > 0 and before[at] == "(":
            callee = CALLEE.search(before[:at + 1])
            if callee:
                out.append(callee.group(1))
    return out


def _parameters(fn: Function) -> list[tuple[str, int]]:
    """[(name, position)] of a function's parameters; a method's `self` is not counted."""
    positional = fn.args.posonlyargs + fn.args.args
    skip = 1 if positional and positional[0].arg in ("self", "cls") else 0
    return [(a.arg, i - skip) for i, a in enumerate(positional) if i >= skip] + \
        [(a.arg, -1) for a in fn.args.kwonlyargs]


def _device_parameters(node: Union[Function, ast.ClassDef], parents: Parents) -> list[tuple[str, int]]:
    """[(parameter, position)] of a module-level function or class (its __init__) that it uses as devices: read
    as a device in its body, or (a class) stored in `self.<attr>` that the class reads as a device."""
    fn: Function
    used: set[str]
    if isinstance(node, ast.ClassDef):
        init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        if init is None:
            return []
        as_device = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                     and n.value.id == "self" and isinstance(n.ctx, ast.Load) and _device_read(n, parents)}
        stored = {t.attr: a.value.id for a in ast.walk(init) if isinstance(a, ast.Assign) and
                  isinstance(a.value, ast.Name) for t in a.targets
                  if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
        used = {stored[attr] for attr in as_device if attr in stored}
        fn = init
    else:
        fn, used = node, set()
    params = _parameters(fn)
    names = {name for name, _ in params}
    used |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
             and n.id in names and _device_read(n, parents)}
    return [(name, pos) for name, pos in params if name in used]


FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M)
PLAIN_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n]*)", re.M)
ALIAS = re.compile(r"([\w.]+)(?:[ \t]+as[ \t]+(\w+))?")


def project_imports(rel: str, text: str, modules: set[str]) -> dict[str, tuple[str, str]]:
    """{name bound in `rel` by an import of the project's own: (module, name in it, or "" for the module)},
    read off the import lines."""
    bound: dict[str, tuple[str, str]] = {}
    for m in FROM_IMPORT.finditer(text):
        level = len(m.group(1)) - len(m.group(1).lstrip("."))
        for module in _absolute(rel, level, m.group(1).lstrip(".")):
            for a in ALIAS.finditer(m.group(2).strip("()").split("#", 1)[0]):
                if f"{module}.{a.group(1)}" in modules:
                    bound[a.group(2) or a.group(1)] = (f"{module}.{a.group(1)}", "")
                elif module in modules:
                    bound[a.group(2) or a.group(1)] = (module, a.group(1))
    for m in PLAIN_IMPORT.finditer(text):
        for a in ALIAS.finditer(m.group(1).split("#", 1)[0]):
            if a.group(1) in modules:
                bound[a.group(2) or a.group(1)] = (a.group(1), "")
    return bound


def device_parameters(files: Iterable[tuple[str, str]]) -> frozenset[tuple[str, str, int, str]]:
    """{(file, callee as written there, position, keyword)}: for each file that passes a "cuda" string to a
    function or class another file of the project defines, the callee's parameters that it uses as devices."""
    files = list(files)
    modules = {m: rel for rel, _ in files for m in module_names(rel)}
    calls: list[tuple[str, str, str, str]] = []   # (file, callee as written, module, callable)
    for rel, text in files:
        callees = called_with_cuda(text) if "cuda" in text else []
        bound = project_imports(rel, text, set(modules)) if callees else {}
        for callee in callees:
            head, _, rest = callee.partition(".")
            if head in bound:
                module, name = bound[head]
                if name and not rest:
                    calls.append((rel, callee, module, name))
                elif not name and rest and "." not in rest:
                    calls.append((rel, callee, module, rest))
    wanted: dict[str, set[str]] = {}   # defining file -> callables
    for _, _, module, name in calls:
        wanted.setdefault(modules[module], set()).add(name)
    params: dict[tuple[str, str], list[tuple[str, int]]] = {}   # (defining file, callable) -> [(parameter, position)]
    for rel, text in files:
        if rel not in wanted:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            continue
        parents = {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.name in wanted[rel]:
                params[rel, stmt.name] = _device_parameters(stmt, parents)
    return frozenset((rel, callee, pos, parameter) for rel, callee, module, name in calls
                     for parameter, pos in params.get((modules[module], name), []))


def python_texts(entries: Iterable[Entry]) -> list[tuple[str, str]]:
    """(rel, text) of the Python files among core.files.walk's entries (those it can read and decode)."""
    from ..core import files as tree
    from ..core.textfile import decode

    out: list[tuple[str, str]] = []
    for e in entries:
        if e.kind != "file" or e.excluded or not e.rel.endswith(".py"):
            continue
        try:
            text = decode(tree.read_bytes(e.src))
        except OSError:
            continue
        if text is not None:
            out.append((e.rel, text.text))
    return out


def device_names(files: Iterable[tuple[str, str]]) -> tuple[frozenset[tuple[str, str]], frozenset[str]]:  # noqa: C901
    """({(file, name)}: module-level names bound to a device string in `file` that another file of the project
    imports and uses as a device; {the files that use them so}: they need the target's registration import,
    changed or not).  `files`: (rel, text) of the project's Python files."""
    files = list(files)
    candidates: dict[str, dict[str, str]] = {}   # import name of a module -> {name: rel}
    for rel, text in files:
        if "cuda" not in text:
            continue
        names = {m.group(1) for m in BOUND.finditer(text)}
        for module in module_names(rel) if names else ():
            candidates.setdefault(module, {}).update({n: rel for n in names})
    if not candidates:
        return frozenset(), frozenset()
    # a file that could use one imports it by name, or reads it off its module (`config.BACKEND`)
    words = "|".join(sorted({re.escape(n) for names in candidates.values() for n in names}))
    last = sorted({m.rsplit(".", 1)[-1] for m in candidates})   # the defining module's own name: in every import
    owners = "|".join(map(re.escape, last))
    pattern = re.compile(rf"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]+(?:\([^)]*|[^\n]*)\b(?:{words})\b"
                         rf"|\b(?:{owners})\.(?:{words})\b", re.M)
    found: set[tuple[str, str]] = set()
    users: set[str] = set()
    for rel, text in files:
        if not any(name in text for name in last) or not pattern.search(text):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            continue
        local: dict[str, tuple[str, str]] = {}   # a name in this file -> (defining file, its name there)
        modules: dict[str, dict[str, str]] = {}  # a module alias -> {name: rel}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for module in _absolute(rel, node.level, node.module or ""):
                    for a in node.names:
                        if a.name in candidates.get(module, {}):
                            local[a.asname or a.name] = (candidates[module][a.name], a.name)
                        elif f"{module}.{a.name}" in candidates:   # from pkg import config
                            modules[a.asname or a.name] = candidates[f"{module}.{a.name}"]
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in candidates:
                        modules[a.asname or a.name] = candidates[a.name]
        if not local and not modules:
            continue
        parents = {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in local:
                if _device_read(node, parents):
                    found.add(local[node.id])
                    users.add(rel)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in modules and node.attr in modules[node.value.id]:
                if _device_read(node, parents):
                    found.add((modules[node.value.id][node.attr], node.attr))
                    users.add(rel)
    return frozenset(found), frozenset(users)


@dataclass(frozen=True)
class Facts:
    """What the project's files say about each other (one value per run, handed to every worker)."""

    device_names: frozenset[tuple[str, str]] = frozenset()   # (file, name): module-level names other files use as devices
    device_users: frozenset[str] = frozenset()    # the files that use them so: they get the registration import
    device_params: frozenset[tuple[str, str, int, str]] = frozenset()   # (file, callee as written there, position, keyword)

    def names_of(self, rel: str) -> frozenset[str]:
        """The module-level names of `rel` that other files use as devices."""
        return frozenset(name for file, name in self.device_names if file == rel)

    def params_of(self, rel: str) -> dict[str, tuple[int, str]]:
        """{callee as `rel` writes it: (position, keyword)}: the device parameters of other files' callables."""
        return {callee: (pos, kw) for file, callee, pos, kw in sorted(self.device_params) if file == rel}


def facts(entries: Iterable[Entry]) -> Facts:
    """The Facts of a project, from core.files.walk's entries."""
    texts = python_texts(entries)
    names, users = device_names(texts)
    return Facts(names, users, device_parameters(texts))
