"""What an error line says by its shape, when no known error (kb/errors.toml) and no family (families.py)
explains it: the shapes of kb/error_shapes.toml (a device type torch does not know, a name a package lacks, a
compiler that does not know a chip, an option a program does not take, "not supported" from a vendor's stack...),
and who raised a Python exception, read from its traceback (a library's own `raise` or `assert`, not torch's nor
the device's).  Each answer is the fields of a known error with confidence "inferred": explain lists it after the
documented answers and says it is torchport's reading of the words.
"""
from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from functools import lru_cache
from pathlib import Path
from typing import Optional

from ..core.tomlfile import tomllib
from .families import message_of, vendor_facts

KB = Path(__file__).resolve().parents[1] / "kb" / "error_shapes.toml"
# A traceback's frame: `  File "/x/site-packages/mmengine/structures/instance_data.py", line 170, in __getitem__`
_FRAME = re.compile(r'^\s*File "([^"\n]{1,500})", line (\d{1,9}), in ([^\s]{1,200})')
# The line a traceback ends with: `AssertionError`, `KeyError: 'x'`, `mmengine.errors.Bad: ...`
_RAISED = re.compile(r"^\s*(?:\[rank\d+\]:\s*)?((?:[A-Za-z_]\w*\.){0,8}[A-Za-z_]\w*(?:Error|Exception|Exit))\b(?::|\s*$)")
_INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\]([A-Za-z_][\w.-]*)")
# Exceptions Python raises itself while running a line (not a C++ library's error passed up through it).
PYTHON_RAISES = frozenset({"AssertionError", "KeyError", "AttributeError", "TypeError", "UnboundLocalError",
                           "NameError", "IndexError"})
# Packages whose frames are the device stack or Python itself: an exception from them is not "a library's own".
NOT_A_LIBRARY = frozenset({"torch", "torch_npu", "torch_mlu", "torch_musa", "intel_extension_for_pytorch", "triton",
                           "numpy", "_pytest", "pytest", "runpy", "importlib", "<frozen"})
# The vendor's words for a shape said for any device ("prefer" with no single vendor named)
ANY_DEVICE = {"title": "this machine's device stack", "package": "the device's PyTorch plug-in", "device": "non-CUDA",
              "smi": "the vendor's device tool", "trace": ""}
_FORMAT_FIELD = re.compile(r"\{(\w+)\}")
_PATH_SEP = re.compile(r"[/\\]")


@lru_cache(maxsize=1)
def _shapes() -> tuple:
    data = tomllib.loads(KB.read_text(encoding="utf-8"))
    return tuple((tuple(re.compile(p, re.IGNORECASE) for p in s["patterns"]),
                  re.compile(s["when"]) if "when" in s else None, s) for s in data["shape"])


@lru_cache(maxsize=1)
def _all_words() -> tuple:
    """Every shape's words: a line without one of them is no shape's (a first look at each line of a long log;
    substring tests, several times faster than one case-insensitive regex of them all)."""
    return tuple(sorted({w for _regexes, _when, shape in _shapes() for w in shape["words"]}))


def _worth_reading(line: str, words: tuple) -> bool:
    low = line.lower()
    return any(w in low for w in words)


def shape_errors(text: str, covered: set, vendors: AbstractSet[str]) -> list:
    """[(line, fields)] for the lines of `text` (1-based) not in `covered` whose shape says something: the first
    shape (or traceback reading) of each line, each shape once."""
    lines = text.splitlines()
    out, ids = [], set()
    words = _all_words()
    for n, line in enumerate(lines, 1):
        if n in covered:
            continue
        error = _raised_by(lines, n, vendors) or (_shape_of(line, vendors) if _worth_reading(line, words) else None)
        if error is not None and error["id"] not in ids:
            ids.add(error["id"])
            out.append((n, error))
    return out


def _shape_of(line: str, vendors: AbstractSet[str]) -> Optional[dict]:
    low = line.lower()
    for regexes, when, shape in _shapes():
        if not any(w in low for w in shape["words"]) or when is not None and not when.search(line):
            continue   # none of its words, or a shape of warning lines only and this is none
        m = next((m for rx in regexes if (m := rx.search(line))), None)
        if m is None:
            continue
        vendor = _vendor_for(shape["vendor"], m, vendors)
        if vendor is None:
            continue
        parts = {k: _clip(v) for k, v in m.groupdict().items() if v is not None}
        parts.update({f"{k}_top": v.split(".")[0] for k, v in list(parts.items())})
        parts.update({f"{k}_file": _PATH_SEP.split(v)[-1] for k, v in list(parts.items()) if not k.endswith("_top")})
        parts["quote"] = _clip(message_of(line), 200)
        facts = vendor_facts(vendor) if vendor != "any" else ANY_DEVICE
        fields = {**{k: facts.get(k, "") for k in ("package", "device", "smi", "trace")}, "stack": facts.get("title", ""),
                  **parts}
        return _fields(f"shape:{shape['id']}", vendor, shape, fields, line)
    return None


def _vendor_for(kind: str, m: re.Match, vendors: AbstractSet[str]) -> Optional[str]:
    """The vendor a shape answers for: the one the log names ("named"), the one whose device type or collective
    backend the match names ("device", "backend"), or "any"; None when the shape does not apply (no vendor, or
    several)."""
    if kind == "any":
        return "any"
    if kind == "prefer":   # the one vendor the log names, else said for any device
        return next(iter(vendors)) if len(vendors) == 1 else "any"
    if kind in ("device", "backend"):   # the vendor whose device type (or collective backend) the match names
        named = (m.groupdict().get(kind) or "").lower()
        return next((name for name in ("npu", "mlu", "musa", "xpu") if vendor_facts(name).get(kind) == named), None)
    return next(iter(vendors)) if len(vendors) == 1 else None


def _fields(id_: str, target: str, shape: dict, parts: dict, line: str) -> dict:
    def fill(template: str) -> str:
        return _FORMAT_FIELD.sub(lambda f: str(parts.get(f.group(1), f.group(0))), template)

    return {"id": id_, "target": target, "title": fill(shape["title"]), "cause": fill(shape["cause"]),
            "fix": fill(shape["fix"]), "source": shape["source"], "example": line.strip(), "confidence": "inferred",
            "defers": shape.get("defers", False)}


def _clip(value: str, most: int = 120) -> str:
    value = value.strip().rstrip(".,;:!")
    if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"" and value.count(value[0]) == 2:
        value = value[1:-1]   # wholly quoted: 'TILE_K' is TILE_K, but 'a' and 'b' keeps its quotes
    return value if len(value) <= most else value[:most - 3] + "..."


def _raised_by(lines: list, n: int, vendors: AbstractSet[str]) -> Optional[dict]:
    """A Python exception at line `n` that a library raised itself: the traceback's last frame is in an installed
    package that is not torch, the device's plug-in or Python's own, and its code line is a `raise` or an `assert`,
    or the exception is one Python raises while running the line (a KeyError, an AttributeError...)."""
    m = _RAISED.match(lines[n - 1])
    if m is None:
        return None
    kind = m.group(1).rsplit(".", 1)[-1]
    frame, code = None, ""
    for k in range(n - 2, max(-1, n - 8), -1):   # the last frame is within the few lines above the exception
        f = _FRAME.match(lines[k])
        if f:
            frame, code = f, (lines[k + 1].strip() if k + 1 < n - 1 else "")
            break
    if frame is None:
        return None
    path, number, function = frame.groups()
    installed = _INSTALLED.search(path)
    package = installed.group(1).split(".")[0] if installed else None
    if package is None or package in NOT_A_LIBRARY or package.startswith("_"):
        return None
    if not (code.startswith(("raise", "assert")) or kind in PYTHON_RAISES):
        return None
    where = f"{package}/{path.replace(chr(92), '/').split(package + '/', 1)[-1]}, line {number}, in {function}"
    on = f" on {', '.join(sorted(vendors))}" if vendors else ""
    how = "raised it itself" if code.startswith(("raise", "assert")) else f"hit a {kind} running its own code"
    return {"id": f"raised-by:{package}", "target": "any", "title": f"{kind} raised by {package}'s own code{on}",
            "cause": f"The exception comes from {package}, not from torch or the device's stack: its code ({where}) "
                     f"{how}. {package} reached a case it does not handle: on a non-CUDA device usually a code path "
                     f"it was not written or tested for{on} (a check or a type it expects from CUDA), or a release of "
                     f"{package} that does not match the library calling it.",
            "fix": f"Read {package}'s code at that line to see what it expected; look for {package}'s releases and "
                   f"issues about this device or this error (a newer release may handle it), or pin the {package} "
                   "release the project you run names.",
            "source": "torchport's reading of the traceback (the last frame's package and code line)",
            "example": lines[n - 1].strip(), "confidence": "inferred", "defers": False}
