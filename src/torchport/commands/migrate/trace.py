"""A failed run, read back to the migrated lines it went through and to convert's edits.

A traceback's frames in the migrated tree (`File "OUT/a.py", line N`) point at where the run stopped, which is
often not where the wrong value was made: an `assert name in SUPPORTED` three files away from the rewritten
tuple.  So each frame line is followed one step back, to where the names it reads are bound: an assignment
(`SUPPORTED = (...)`, `self.flag = ...`), a parameter default, or an import from another module of the tree
(`from config import BACKEND`: BACKEND's assignment in config.py).  The lines found, frames and origins, are
then matched with convert's edits (an edit on such a line made the value) and with "What's left" (a failure
whose lines none of its items names is silent: nothing said it would break).
"""
from __future__ import annotations

import keyword
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)', re.M)
HEADER = "Traceback (most recent call last):"
NAME = re.compile(r"[A-Za-z_]\w*")
FROM_IMPORT = re.compile(r"^\s*from\s+(?P<module>\.*[\w.]*)\s+import\s+(?P<names>[^#]+)")
MAX_FRAMES = 12       # frames of the tree followed, innermost first
MAX_ORIGINS = 8       # origins kept per frame


@dataclass(frozen=True)
class Line:
    """A line of the migrated tree that a failure went through."""

    file: str            # relative to the tree, with /
    line: int
    how: str             # "frame": the run was on it; "origin": it binds a name a frame line reads
    name: str = ""       # for an origin: the name
    frame: str = ""      # for an origin: the frame line (file:line) that reads it

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def frames(output: str, tree: Path) -> list[tuple[str, int]]:
    """[(file relative to `tree`, line)] of the last traceback in `output` that are in `tree`, innermost first."""
    at = output.rfind(HEADER)
    text = output[at:] if at >= 0 else output
    root = os.path.realpath(tree)
    found: list[tuple[str, int]] = []
    for m in FRAME.finditer(text):
        path = os.path.realpath(m.group("file"))
        if path.startswith(root + os.sep):
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if (rel, int(m.group("line"))) not in found:
                found.append((rel, int(m.group("line"))))
    return list(reversed(found))[:MAX_FRAMES]


class Tree:
    """The migrated tree's Python files, read on demand."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._lines: dict[str, list[str]] = {}

    def lines(self, rel: str) -> list[str]:
        if rel not in self._lines:
            try:
                self._lines[rel] = (self.root / rel).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                self._lines[rel] = []
        return self._lines[rel]

    def text(self, rel: str, line: int) -> str:
        lines = self.lines(rel)
        return lines[line - 1] if 0 < line <= len(lines) else ""

    def module_file(self, rel: str, module: str) -> Optional[str]:
        """The tree's file for `module` as imported from `rel` (relative or absolute, from the tree's top or from
        rel's folder, as a script's folder is on sys.path), or None."""
        dots = len(module) - len(module.lstrip("."))
        parts = [p for p in module.lstrip(".").split(".") if p]
        here = rel.split("/")[:-1]
        bases = [here[:len(here) - (dots - 1)]] if dots else [[], here]
        for base in bases:
            stem = "/".join(base + parts)
            for candidate in (f"{stem}.py", f"{stem}/__init__.py"):
                if (self.root / candidate).is_file():
                    return candidate
        return None


def read_names(text: str) -> list[str]:
    """The names a line reads (identifiers that are not keywords, attribute names included), in order."""
    code = text.split("#", 1)[0]
    code = re.sub(r"(?:[rbuf]|rb|br|fr|rf)?(\"[^\"]*\"|'[^']*')", " ", code, flags=re.I)
    return list(dict.fromkeys(n for n in NAME.findall(code) if not keyword.iskeyword(n)))


def bindings(tree: Tree, rel: str, name: str, depth: int = 0) -> list[tuple[str, int]]:
    """[(file, line)] where `name` is bound in `rel`: assigned (also `self.name =`), a parameter default, or
    imported from another file of the tree (followed there)."""
    out: list[tuple[str, int]] = []
    assign = re.compile(rf"^\s*(?:self\.)?{re.escape(name)}\s*(?::[^=]*)?=(?!=)")
    default = re.compile(rf"[(,]\s*{re.escape(name)}\s*(?::[^=,)]*)?=(?!=)")
    for n, text in enumerate(tree.lines(rel), 1):
        if assign.match(text) or text.lstrip().startswith(("def ", "async def ")) and default.search(text):
            out.append((rel, n))
            continue
        m = FROM_IMPORT.match(text)
        if m and depth < 3 and re.search(rf"\b{re.escape(name)}\b", m.group("names")):
            other = tree.module_file(rel, m.group("module"))
            if other is not None and other != rel:
                out += bindings(tree, other, name, depth + 1)
    return out


def lines_through(output: str, root: Path) -> list[Line]:
    """The migrated lines a failure went through: each frame of its last traceback in the tree, innermost
    first, each followed by the origins of the names it reads."""
    tree = Tree(root)
    out: list[Line] = []
    seen: set[tuple[str, int]] = set()
    for rel, line in frames(output, root):
        if (rel, line) not in seen:
            seen.add((rel, line))
            out.append(Line(rel, line, "frame"))
        kept = 0
        for name in read_names(tree.text(rel, line)):
            for where in bindings(tree, rel, name):
                if where in seen or where == (rel, line) or kept >= MAX_ORIGINS:
                    continue
                seen.add(where)
                kept += 1
                out.append(Line(where[0], where[1], "origin", name, f"{rel}:{line}"))
    return out


def exception_line(output: str) -> str:
    """The last line of the last traceback: the exception and its message."""
    at = output.rfind(HEADER)
    lines = [ln for ln in output[at if at >= 0 else 0:].splitlines() if ln.strip()]
    after = [ln for ln in lines if not ln.startswith((" ", "\t", HEADER))]
    return after[-1].strip() if after else ""
