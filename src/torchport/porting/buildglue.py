"""Build glue: setup.py / extension `load()` scripts and CMake files, made to build the ported sources.

Python build files are edited with the same edit machinery as `convert` (ast
positions, minimal text edits): the extension classes and their module, the
`nvcc` compiler-args key, `FORCE_CUDA`, and file names of renamed sources in
string literals.  CMake files get renamed source names; CUDA-specific CMake
commands are reported.  What to use comes from the target file's [port] table.
"""
from __future__ import annotations

import ast
import posixpath
import re

from ..core import codes
from ..core import edits as edit_ops
from ..core.finding import ADVICE, ERROR, MODIFY, Finding
from ..core.pycheck import undefined_after
from .native import line_finder

CPP_EXTENSION = "torch.utils.cpp_extension"
# `project(x LANGUAGES CXX CUDA)`: the language list does not run on past another `LANGUAGES` (each one of a
# long line without CUDA would reread the rest of it).
_CMAKE_CUDA = re.compile(r"\b(?:enable_language\s*\(\s*CUDA|find_package\s*\(\s*CUDA\w*|cuda_add_\w+|CUDA_NVCC_FLAGS|"
                         r"CMAKE_CUDA_\w+|CUDA::\w+|LANGUAGES(?:(?!LANGUAGES)[^)\n])*\bCUDA\b)", re.IGNORECASE)
# A source name starts where a run of name characters starts (the match from there is the longest one, and
# starting inside the run again would rescan it from every character).
_SOURCE_NAME = re.compile(r"(?<![\w./*-])[\w./*-]+\.(?:cu|cuh)\b")
_NEWLINE = re.compile(r"\n")


def is_build_file(rel: str, text: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    if name == "CMakeLists.txt" or name.endswith(".cmake"):
        return True
    return name.endswith(".py") and "cpp_extension" in text


def port_build_file(rel: str, text: str, port, suffixes: dict, exists) -> tuple:
    """(new text or None, findings).  `exists(rel_dir, name)` says whether a source name refers to a
    file of the tree (so only real renamed files are renamed)."""
    if rel.endswith((".py",)):
        return _python(rel, text, port, suffixes, exists)
    return _cmake(rel, text, suffixes, exists)


def _dotted(node) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _renamed(name: str, suffixes: dict):
    for old, new in suffixes.items():
        if name.endswith(old):
            return name[: -len(old)] + new
    return None


def _finding(rel, line_of, start, end, action, old, new="", message=""):
    """`line_of`: offset -> line of the file (native.line_finder)."""
    return Finding(rel, line_of(start), line_of(max(start, end - 1)), codes.TP956.id, "port", action, old, new, message)


def _cmake(rel, text, suffixes, exists):
    line_of = line_finder(text)
    edits, findings = [], []
    base = posixpath.dirname(rel)
    for m in _SOURCE_NAME.finditer(text):
        new = _renamed(m.group(0), suffixes)
        if new and ("*" in m.group(0) or exists(base, m.group(0))):
            f = _finding(rel, line_of, m.start(), m.end(), MODIFY, m.group(0), new)
            edits.append(edit_ops.Edit(m.start(), m.end(), new, f))
    for m in _CMAKE_CUDA.finditer(text):
        findings.append(_finding(rel, line_of, m.start(), m.end(), ADVICE, m.group(0),
                                 message="CUDA-specific CMake: use the target toolkit's CMake support"))
    new_text, kept, _ = edit_ops.apply(text, edits)
    return (new_text if new_text != text else None), sorted(findings + [e.finding for e in kept],
                                                           key=lambda f: f.line)


def _shadowed_names(tree, names: set) -> set:
    """ids of the Name nodes of `names` that a function binds itself (a parameter, an assignment, a loop variable,
    an import), so they are not the module's import: a rename must not cross into that scope."""
    out: set = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        a = fn.args
        bound = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p is not None} & names
        own: list[ast.AST] = list(fn.body) if isinstance(fn.body, list) else [fn.body]
        stack, nodes = own[:], []
        while stack:   # the function's own nodes (nested functions decide for themselves)
            node = stack.pop()
            nodes.append(node)
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.extend(ast.iter_child_nodes(node))
        declared_global = {n for node in nodes if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names}
        bound |= {node.id for node in nodes if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)}
        bound |= {(al.asname or al.name).split(".")[0] for node in nodes if isinstance(node, (ast.Import, ast.ImportFrom))
                  for al in node.names}
        bound = (bound & names) - declared_global
        if bound:   # every read of them inside, nested functions included unless they bind it again
            out |= {id(n) for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id in bound}
    return out


def _python(rel, text, port, suffixes, exists):  # noqa: C901
    line_of = line_finder(text)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None, [_finding(rel, line_of, 0, 0, ADVICE, rel, message="syntax error: build file not ported")]
    starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def span(node):
        def off(line, col):
            line_text = text[starts[line - 1]:starts[line] if line < len(starts) else len(text)]
            return starts[line - 1] + len(line_text.encode("utf-8")[:col].decode("utf-8", "replace"))
        return off(node.lineno, node.col_offset), off(node.end_lineno, node.end_col_offset)

    edits, findings = [], []

    def replace(node_or_span, new, message=""):
        s, e = node_or_span if isinstance(node_or_span, tuple) else span(node_or_span)
        if text[s:e] != new:
            edits.append(edit_ops.Edit(s, e, new, _finding(rel, line_of, s, e, MODIFY, text[s:e], new, message)))

    def swap(node, new, message):
        """Replace a string constant's value inside its quotes (prefixes and quote style kept)."""
        s, e = span(node)
        raw = text[s:e]
        if raw.count(node.value) == 1:  # a plain literal, not an implicit concatenation or escapes
            i = raw.index(node.value)
            replace((s + i, s + i + len(node.value)), new, message)

    module = port.extension_module
    moving = dict(port.names) if module else {}   # cpp_extension name -> name in `module`
    keywords = port.keywords
    local = {}                                               # name bound in this file -> cpp_extension name
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == CPP_EXTENSION:
            local.update({a.asname or a.name: a.name for a in node.names if a.name in moving})
    shadowed = _shadowed_names(tree, set(local))
    base = posixpath.dirname(rel)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == CPP_EXTENSION and moving:
            moved = [a for a in node.names if a.name in moving]
            if moved:
                kept = [a for a in node.names if a not in moved]
                new_names = [moving[a.name] + (f" as {a.asname}" if a.asname else "") for a in moved]
                stmt = f"from {module} import {', '.join(new_names)}"
                if kept:
                    line_start = starts[node.lineno - 1]
                    indent = text[line_start:span(node)[0]]
                    joiner = "\n" + indent if not indent.strip() else "; "
                    stmt = (f"from {CPP_EXTENSION} import "
                            f"{', '.join(a.name + (f' as {a.asname}' if a.asname else '') for a in kept)}{joiner}{stmt}")
                replace(node, stmt, f"{module} builds for {port.title or 'the target'}")
        elif isinstance(node, ast.Name) and local.get(node.id) == node.id and id(node) not in shadowed:
            replace(node, moving[node.id])   # not a function's own name (a parameter CUDA_HOME stays)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in local:
            for kw in node.keywords:
                if kw.arg in keywords:
                    s, _ = span(kw)
                    replace((s, s + len(kw.arg)), keywords[kw.arg], f"keyword of {moving[local[node.func.id]]}")
        elif isinstance(node, ast.Attribute) and node.attr in moving and _dotted(node.value) == CPP_EXTENSION:
            findings.append(_finding(rel, line_of, *span(node), ADVICE, f"{CPP_EXTENSION}.{node.attr}",
                                     message=f"use {module}.{moving[node.attr]} to build for {port.title}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value
            if value == "FORCE_CUDA" and port.force_env:
                swap(node, port.force_env, "the target's switch to build without a visible device")
            elif value == "nvcc" and port.compiler_key:
                swap(node, port.compiler_key, "extra_compile_args key of the target's device compiler")
            elif value == "CUDA_HOME":
                findings.append(_finding(rel, line_of, *span(node), ADVICE, value,
                                         message=f"use the target toolkit's home ({port.home or 'see the vendor docs'})"))
            else:
                new = _renamed(value, suffixes)
                if new and ("*" in value or exists(base, value)):
                    swap(node, new, "source file renamed")
    new_text, kept, _ = edit_ops.apply(text, edits)
    missing = undefined_after(text, new_text, [(e.start, e.end, e.text) for e in kept]) if new_text != text else []
    if missing:   # a rename that would end in NameError: the file stays as it was, and says why
        return None, sorted(findings + [_finding(rel, line_of, 0, 0, ERROR, rel, message=(
            f"not ported: the edits would read {', '.join(missing)}, which the file does not define; "
            "please report it"))], key=lambda f: (f.line, f.col))
    findings += [e.finding for e in kept]
    return (new_text if new_text != text else None), sorted(findings, key=lambda f: (f.line, f.col))
