"""What one file's conversion needs to know from the project's other files.

A module-level name bound to a device string in one file (`BACKEND = "cuda"` in config.py) is a device when
another file of the project imports it and uses it as one (`torch.ones(2, device=BACKEND)` in train.py),
though nothing in its own file says so: converted one file at a time, config.py keeps its "cuda" and
train.py asks for CUDA on the target.  `device_names` finds such names before the files are converted, with
one parse of the few files that could tell (those that name a candidate), and the file that binds the name
then rewrites it with its value group (converter/groups.py, `role`).
"""
from __future__ import annotations

import ast
import re
from typing import Iterable

# a module-level binding of a plain device string: `BACKEND = "cuda"`, `DEVICE: str = 'cuda:0'`
BOUND = re.compile(r"^([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=[ \t]*['\"]cuda(?::\d+)?['\"][ \t]*(?:#.*)?$", re.M)
DEVICE_KEYWORDS = frozenset({"device", "map_location", "device_type", "location", "device_map"})
DEVICE_CALLS = frozenset({"device"})          # torch.device(NAME)
MOVES = frozenset({"to"})                     # x.to(NAME)


def module_names(rel: str) -> list:
    """The dotted names a file can be imported by, from the longest (the tree's top on sys.path) to its own
    name (its folder on sys.path): `pkg/cfg.py` -> pkg.cfg, cfg; `pkg/__init__.py` -> pkg."""
    parts = rel[:-3].split("/") if rel.endswith(".py") else rel.split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return [".".join(parts[i:]) for i in range(len(parts)) if parts[i:]]


def _absolute(rel: str, level: int, module: str) -> list:
    """Candidates for the module of `from <level dots><module> import ...` written in `rel`."""
    if not level:
        return [module]
    folder = rel.split("/")[:-1]
    base = folder[:len(folder) - (level - 1)] if level - 1 <= len(folder) else None
    if base is None:
        return []
    return [".".join(base + ([module] if module else []))]


def _device_read(node, parents: dict) -> bool:
    """Is this read of a name in a place only a device goes: `device=NAME`, `x.to(NAME)`, `torch.device(NAME)`?"""
    parent = parents.get(id(node))
    if isinstance(parent, ast.keyword):
        return parent.arg in DEVICE_KEYWORDS
    if isinstance(parent, ast.Call) and parent.args and parent.args[0] is node:
        func = parent.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name in DEVICE_CALLS or isinstance(func, ast.Attribute) and name in MOVES
    return False


def python_texts(entries) -> list:
    """(rel, text) of the Python files among core.files.walk's entries (those it can read and decode)."""
    from ..core import files as tree
    from ..core.textfile import decode

    out = []
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


def device_names(files: Iterable) -> tuple:
    """({(file, name)}: module-level names bound to a device string in `file` that another file of the project
    imports and uses as a device; {the files that use them so}: they need the target's registration import,
    changed or not).  `files`: (rel, text) of the project's Python files."""
    files = list(files)
    candidates: dict = {}     # import name of a module -> {name: rel}
    for rel, text in files:
        if "cuda" not in text:
            continue
        names = {m.group(1) for m in BOUND.finditer(text)}
        for module in module_names(rel) if names else ():
            candidates.setdefault(module, {}).update({n: rel for n in names})
    if not candidates:
        return frozenset(), frozenset()
    words = {n for names in candidates.values() for n in names}
    pattern = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, words))) + r")\b")
    found: set = set()
    users: set = set()
    for rel, text in files:
        if not pattern.search(text):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            continue
        local: dict = {}      # a name in this file -> (defining file, its name there); a module alias -> {name: rel}
        modules: dict = {}
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
