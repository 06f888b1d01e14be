"""Jupyter notebooks (.ipynb): their code cells are one Python program, run top to bottom.

The code cells are converted together, joined with a marker comment between them, so that `import
torch` in the first cell is seen in the others.  IPython syntax that is not Python (`%magic`, `!shell`,
`?help` lines) is masked as a comment meanwhile and put back afterwards; a cell that still does not
parse is left out (and reported).  Outputs, metadata and other cells are kept.  Findings keep the
line number inside their cell and say which cell (counting every cell from 1).  A notebook torchport
changes is written back the way Jupyter writes it (JSON, one-space indent).
"""
from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from ..core.finding import Finding

NOTEBOOK_SUFFIXES = (".ipynb",)
# lines that are IPython, not Python: magics, shell escapes, help (`?x`, `x?`), `files = !ls`
# (the indent is taken whole, by a lookahead and a backreference: left to backtrack, it would hand each of its
# blanks to `[\w., ]+` in turn, which rereads the line each time)
_IPYTHON_LINE = re.compile(r"^(?=([ \t]*))\1([%!?].*|[\w.]+[ \t]*\?\??[ \t]*|[\w., ]+=[ \t]*[!%].*)$")
# line magics that run the Python after them: `%time y = x.cuda()` is converted as `y = x.cuda()`
_TIMED = re.compile(r"^([ \t]*)(%(?:time|timeit|prun)[ \t]+)(?!-)(.+)$")
# cell magics whose body is Python; any other (%%bash, %%html, %%writefile...) keeps the whole cell
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug"}
_CELL_MAGIC = re.compile(r"%%(\w+)")
_MASK = "pass  #torchport-ipython:"   # a statement, so an IPython line alone in a block (`except: !pip ...`) parses
_TIMED_MASK = "  #torchport-magic:"
_MARKER = "#torchport-cell:"


@dataclass
class Cell:
    index: int          # position among all cells (0-based)
    source: str         # the Python the converter sees (IPython lines masked)
    as_list: bool       # the notebook stores this cell's source as a list of lines


def load(data: bytes) -> tuple[dict[str, Any], list[Cell]]:
    """(notebook dict, [Cell]) or raises ValueError for a file that is not a notebook."""
    try:
        nb = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"not a notebook: {e}") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("not a notebook: no list of cells")
    cells = []
    for i, cell in enumerate(nb["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        raw = cell.get("source", "")
        if not (isinstance(raw, str) or isinstance(raw, list) and all(isinstance(x, str) for x in raw)):
            raise ValueError(f"not a notebook: cell {i + 1}'s source is not text or a list of lines")
        text = "".join(raw) if isinstance(raw, list) else raw
        cells.append(Cell(i, mask(text), isinstance(raw, list)))
    return nb, cells


def mask(text: str) -> str:
    lines = text.split("\n")
    magic = _CELL_MAGIC.match(lines[0]) if lines else None
    if magic and magic.group(1) not in PYTHON_CELL_MAGICS:
        return "\n".join(_MASK + line for line in lines)

    def one(line: str) -> str:
        timed = _TIMED.match(line)
        if timed:
            return timed.group(1) + timed.group(3) + _TIMED_MASK + timed.group(2)
        return _IPYTHON_LINE.sub(lambda m: m.group(1) + _MASK + m.group(2), line)
    return "\n".join(one(line) for line in lines)


def unmask(text: str) -> str:
    out: list[str] = []
    for line in text.split("\n"):
        if _TIMED_MASK in line:
            code, magic = line.rsplit(_TIMED_MASK, 1)
            indent = code[:len(code) - len(code.lstrip())]
            line = indent + magic + code.lstrip()
        out.append(line.replace(_MASK, ""))
    return "\n".join(out)


def store(nb: dict[str, Any], cell: Cell, new_source: str) -> None:
    text = unmask(new_source)
    nb["cells"][cell.index]["source"] = text.splitlines(True) if cell.as_list else text


def dump(nb: dict[str, Any], like: bytes = b"") -> bytes:
    """The notebook's JSON as the file `like` was written: its byte-order mark, its indent (Jupyter's 1 unless
    the file was indented otherwise or not at all), ASCII escapes if it used them, its final newline."""
    bom = codecs.BOM_UTF8 if like.startswith(codecs.BOM_UTF8) else b""
    body = like[len(bom):].lstrip()
    indent: Optional[int] = 1
    if body.startswith(b"{"):
        after = body[1:].split(b"\n", 1)
        if after[0].strip():                        # `{"cells": ...` on one line: written without indent
            indent = None
        elif len(after) > 1:
            indent = len(after[1]) - len(after[1].lstrip(b" ")) or 1
    ascii_only = bool(like) and like.isascii() and b"\\u" in like
    end = "\n" if not like or like.endswith(b"\n") else ""
    text = json.dumps(nb, indent=indent, ensure_ascii=ascii_only) + end
    if b"\r\n" in like[:4096]:   # written on Windows: its line ends kept (json.dumps escapes those inside strings)
        text = text.replace("\n", "\r\n")
    return bom + text.encode("utf-8")


def join(cells: list[Cell]) -> tuple[str, list[tuple[int, Cell]]]:
    """(one Python source holding the cells, [(first line, cell)]): each cell follows a marker line."""
    parts: list[str] = []
    starts: list[tuple[int, Cell]] = []
    line = 1
    for cell in cells:
        body = cell.source if cell.source.endswith("\n") or not cell.source else cell.source + "\n"
        parts.append(f"{_MARKER}{cell.index}\n{body}")
        starts.append((line + 1, cell))
        line += 1 + body.count("\n")
    return "".join(parts), starts


def split(text: str, cells: list[Cell]) -> dict[int, str]:
    """{cell index: its new source} from a converted join(); the trailing newline follows the original."""
    out: dict[int, str] = {}
    current: Optional[int] = None
    by_index = {c.index: c for c in cells}
    for line in text.splitlines(True):
        if line.startswith(_MARKER):
            current = int(line[len(_MARKER):])
            out[current] = ""
        elif current is not None:
            out[current] += line
        elif line.strip():  # something written before the first cell (an import): it goes into the first
            first = cells[0].index
            out.setdefault(first, "")
            out[first] = line + out[first]
    for index, text in out.items():
        if not by_index[index].source.endswith("\n") and text.endswith("\n"):
            out[index] = text[:-1]
    return out


def place(findings: Iterable[Finding], starts: list[tuple[int, Cell]]) -> list[Finding]:
    """Findings of a join(), moved to their cell: line within the cell, the cell named in the message."""
    out: list[Finding] = []
    for f in findings:
        first, cell = max((s for s in starts if s[0] <= max(f.line, starts[0][0])), key=lambda s: s[0])
        where = f"cell {cell.index + 1}"
        out.append(replace(f, line=max(1, f.line - first + 1), end_line=max(1, f.end_line - first + 1),
                           message=f"{where}: {f.message}" if f.message else where))
    return out
