"""Porting one C/C++/CUDA file: whole identifiers and include paths, from mapping tables.

The mapping (kb/port/<target>.json, extended by user maps) is compiled into one
trie regex over its keys.  It runs only inside code regions (never in comments or
literals), matches whole identifiers and `::`-qualified names (leftmost-longest),
and every hit is one dict lookup.  Include paths are rewritten from the header
table, or to the renamed project file they name.  What cannot be ported
(unsupported names, PTX, arch checks, warp intrinsics) is reported, not touched.
"""
from __future__ import annotations

import bisect
import json
import posixpath
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Optional, cast

from ..core import codes
from ..core import edits as edit_ops
from ..core.errors import UsageError
from ..core.finding import ADVICE, MODIFY, UNSUPPORTED, Finding
from ..core.words import trie_pattern
from . import native
from .lexer import include_path, scan

KB_PORT = Path(__file__).resolve().parents[1] / "kb" / "port"


# CUDA-looking names (counted as "left" when the mapping does not know them).  No lookbehind, so the
# regex runs fast; a hit that starts inside a longer identifier is dropped by `_starts_word`.
_CUDA_LOOKING = re.compile(r"(?:cu(?:da|blas|rand|sparse|solver|fft|dnn|b)|nccl|thrust)[A-Z_]\w*"
                           r"|CU(?:DA|BLAS|RAND|DNN|SPARSE|FFT)_\w+|(?:at|c10)::cuda::\w+(?:::\w+)*")
_CUDA_HINTS = ("cu", "CU", "nccl", "thrust")  # a text without these has no _CUDA_LOOKING hit


def _starts_word(text: str, pos: int) -> bool:
    if pos == 0:
        return True
    before = text[pos - 1]
    return not (before.isalnum() or before == "_" or (before == ":" and text.startswith(("at::", "c10::"), pos)))


@dataclass
class PortMap:
    """A target's mapping tables, ready to apply."""

    target: str
    identifiers: dict
    headers: dict
    unsupported: dict
    suffixes: dict
    source: str
    pattern: Optional[re.Pattern] = None
    user_keys: set = field(default_factory=set)
    header_prefixes: dict = field(default_factory=dict)
    review: dict = field(default_factory=dict)   # name -> why it needs a look even when mapped
    review_once: frozenset = frozenset()         # review names reported at their first use in a file only
    kept: Optional[re.Pattern] = None            # CUDA-looking names valid on the target as they are
    dispatch_key: str = ""            # TORCH_LIBRARY_IMPL(ns, CUDA, m): the target's dispatch key
    methods: dict = field(default_factory=dict)    # old -> {"new", "valid"}: renamed in calls on valid receivers
    receivers: dict = field(default_factory=dict)  # kb/port/receivers.toml: how a receiver's class is read

    def header(self, path: str) -> Optional[str]:
        """The target's header for an include path: exact path, then a mapped directory prefix,
        then a mapped file name (the vendor tables map some headers by name only)."""
        if path in self.headers:
            return self.headers[path]
        for old, new in self.header_prefixes.items():
            if path.startswith(old + "/"):
                return new + path[len(old):]
        head, _, name = path.rpartition("/")
        new = self.headers.get(name) if head else None
        return f"{head}/{new}" if new and "/" not in name else None

    def compile(self) -> PortMap:
        keys = sorted(set(self.identifiers) | set(self.unsupported) | set(self.review) | set(self.methods))
        self.pattern = re.compile(r"(?<![\w])(?:" + trie_pattern(keys) + r")(?![\w])") if keys else None
        return self


def _read_map(path: Path) -> dict:
    """A -m map: UTF-8 JSON (a BOM is fine) without NaN, huge numbers or deep nesting, holding an object."""
    from ..backends import parse_data, read_text

    data = parse_data(read_text(path, "mapping file"), path, "json")
    if not isinstance(data, dict):
        raise UsageError(f"{path}: a mapping file must hold a JSON object")
    return data


@cache
def _bundled(name: str) -> dict:
    path = KB_PORT / f"{name}.json"
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def _toml(name: str) -> dict:
    """kb/port/<target>.pytorch.toml: curated PyTorch C++ names the vendor tables lack, `methods` (renamed
    only on receivers whose class has the new method) and `kept`: patterns of CUDA-looking names that are
    valid on the target unchanged (not counted as left).  kb/port/receivers.toml: how a receiver's class is read."""
    from ..core.tomlfile import tomllib

    path = KB_PORT / name
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


# What a -m key must look like to ever match: port-ext rewrites whole identifiers and `::`-qualified names in code,
# `#include` paths and file suffixes; anything else ('::cuda::', '.is_cuda()', ', CUDA,') would be silently dead.
_NAME_KEY = re.compile(r"(?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*\Z")
_PATH_KEY = re.compile(r"(?![#\s])[^<>\"\n/]*(?:/[^<>\"\n/]+)*(?<=[^\s/])\Z")  # as between <> or "", no dir/
_KEY_HELP = "port-ext rewrites whole identifiers and ::-qualified names in code (cudaMalloc, " \
            "at::cuda::getCurrentCUDAStream); #include paths go under \"headers\" (ATen/cuda/CUDAContext.h), " \
            "file suffixes under \"suffixes\" (.cu)"


def _check_keys(path, section: str, keys) -> None:
    for key in keys:
        ok: object   # a match or a truth value: only its truth counts
        if section == "headers":
            ok = _PATH_KEY.match(key)
        elif section == "suffixes":
            ok = key and not any(c.isspace() or c == "/" for c in key)
        else:
            ok = _NAME_KEY.match(key)
        if not ok:
            raise UsageError(f"{path}: the {section} key {key!r} can never match: {_KEY_HELP}")


def _new_values():
    """What the values of each -m section must be (checks from backends): identifiers are pasted into code
    (a C/C++ name, `::`-qualified or a pointer type like `hipArray *`), headers into `#include` lines,
    suffixes into file names; unsupported and review reasons are shown in the reports."""
    from ..backends import pattern, text

    return {"identifiers": pattern(r"(?:::)?[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*(?: ?\*)*",
                                   "a C/C++ name (musaMalloc, at::musa::getCurrentMUSAStream)"),
            "headers": pattern(r"(?![#\s])[^<>\"\\/\x00-\x1f]*(?:/[^<>\"\\/\x00-\x1f]+)*(?<=[^\s/])",
                               "an include path as written between <> (ATen/musa/MUSAContext.h)"),
            "suffixes": pattern(r"[^\s/\\\x00-\x1f]+", "a file name ending without spaces or slashes (.mu)"),
            "unsupported": text, "review": text}


def load_map(target: str, user_maps=()) -> PortMap:
    """The bundled table for `target`, its curated PyTorch supplement, then user maps: files with the
    same keys (identifiers, headers, unsupported, review, suffixes), or a flat {"old": "new"} object of
    identifiers.  `unsupported` and `review` map a name to the reason shown: unsupported names are left
    alone, review names are converted when `identifiers` has them and reported either way."""
    base, extra = _bundled(target), _toml(f"{target}.pytorch.toml")
    pmap = PortMap(target, {**base.get("identifiers", {}), **extra.get("identifiers", {})},
                   {**base.get("headers", {}), **extra.get("headers", {})},
                   dict(base.get("unsupported", {})), dict(base.get("suffixes", {})),
                   base.get("source", "") + (f" + {extra['source']}" if extra.get("source") else ""),
                   header_prefixes=dict(base.get("header_prefixes", {})),
                   review={**base.get("review", {}), **extra.get("review", {})},
                   kept=re.compile("|".join(extra["kept"])) if extra.get("kept") else None,
                   review_once=frozenset(extra.get("review_once", ())),
                   dispatch_key=extra.get("dispatch_key", ""), methods=dict(extra.get("methods", {})),
                   receivers=_toml("receivers.toml") if extra.get("methods") else {})
    from ..backends import checked

    new_values = _new_values()
    for p in user_maps:
        data = _read_map(Path(p))
        sections = ("identifiers", "headers", "unsupported", "review", "suffixes")
        flat = not set(sections) & set(data)
        if flat:
            data = {"identifiers": data}
        for key in (k for k in sections if k in data):
            if not isinstance(data[key], dict) or not all(isinstance(v, str) for v in data[key].values()):
                raise UsageError(f"{p}: '{key}' must map names to strings")
            _check_keys(p, key, data[key])
            for old, new in data[key].items():
                checked(str(p), (old,) if flat else (key, old), new_values[key], new)
            getattr(pmap, key).update(data[key])
            if key in ("identifiers", "unsupported"):  # a user's entry wins over a bundled method mapping
                for k in data[key]:
                    pmap.methods.pop(k, None)
            if key == "identifiers":  # ... and over a bundled "unsupported" or "review" ("kept: ...") entry
                pmap.user_keys.update(data[key])
                for k in data[key]:
                    pmap.unsupported.pop(k, None)
                    pmap.review.pop(k, None)
            elif key == "unsupported":  # a user's "unsupported" wins over a bundled mapping
                for k in data[key]:
                    pmap.identifiers.pop(k, None)
    return pmap.compile()


@dataclass
class FilePort:
    """What porting one file did."""

    new_text: Optional[str]
    findings: list
    converted: Counter            # key -> count
    left: Counter                 # CUDA-looking identifiers not mapped
    review: int = 0
    lines_changed: int = 0
    defines: frozenset = frozenset()  # CUDA-looking names this file defines itself (macros, constants)
    includes: list = field(default_factory=list)  # (line, path) of the input's quoted includes


def port_text(rel: str, text: str, pmap: PortMap, resolve_include) -> FilePort:
    """Port one file's text.  `resolve_include(rel, path)` gives the new include path for a project
    header (or None when the path is not a project file).

    Every search runs once over the whole text (C speed); hits are then kept or dropped by where
    they fall (code, comment, literal).  Most files have no hit at all and are never lexed."""
    hits = list(pmap.pattern.finditer(text)) if pmap.pattern is not None else []
    looking = [m for m in _CUDA_LOOKING.finditer(text) if _starts_word(text, m.start())] \
        if any(h in text for h in _CUDA_HINTS) else []
    dispatch = list(_DISPATCH_IMPL.finditer(text)) if pmap.dispatch_key and "TORCH_LIBRARY_IMPL" in text else []
    reviews = [(regex, why, hit) for hint, regex, why in _REVIEW if hint.search(text) for hit in regex.finditer(text)]
    candidates = list(_include_candidates(text, rel, pmap, resolve_include))
    if not (hits or looking or dispatch or reviews or any(new is not None and new != path
                                                            for path, _, _, new in candidates)):
        quoted = [(text.count("\n", 0, at) + 1, path) for path, quote, at, _ in candidates if quote == '"']
        return FilePort(None, [], Counter(), Counter(), includes=quoted)
    porter = _Porter(rel, text, pmap)
    for m in hits:
        porter.mapped(m)
    porter.left_names(looking)
    quoted = porter.includes(resolve_include)
    porter.dispatch(dispatch)
    porter.reviewed_constructs(reviews)
    defines = _own_names(text, porter.left, porter.starts)
    new_text, kept, _ = edit_ops.apply(text, porter.edits)
    findings = porter.findings + [e.finding for e in kept]
    findings.sort(key=lambda f: (f.line, f.col, f.rule))
    changed = len({f.line for f in findings if f.action == MODIFY})
    return FilePort(new_text if new_text != text else None, findings, porter.converted, porter.left, porter.review,
                    changed, defines, quoted)


class _Porter:
    """One file's port under way: where its code, comments and lines are, and the edits and findings so far."""

    def __init__(self, rel: str, text: str, pmap: PortMap) -> None:
        self.rel, self.text, self.pmap = rel, text, pmap
        self.regions, self.include_spans, self.comments = scan(text)
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
        self.region_starts, self.comment_starts = [r[0] for r in self.regions], [c[0] for c in self.comments]
        self.edits: list = []
        self.findings: list = []
        self.converted: Counter[str] = Counter()
        self.left: Counter[str] = Counter()
        self.review = 0
        self.reviewed: set = set()  # (line, name) reported from the map: the generic detectors do not repeat them
        self.facts: Optional[FileFacts] = None  # what receiver_class reads, worked out at the first mapped method

    def in_code(self, start: int, end: Optional[int] = None) -> bool:
        """The span lies inside one code region."""
        i = bisect.bisect_right(self.region_starts, start) - 1
        return i >= 0 and (start if end is None else end) <= self.regions[i][1] and start < self.regions[i][1]

    def in_comment(self, pos: int) -> bool:
        i = bisect.bisect_right(self.comment_starts, pos) - 1
        return i >= 0 and pos < self.comments[i][1]

    def line(self, pos: int) -> int:
        return bisect.bisect_right(self.starts, pos)

    def finding(self, start: int, end: int, rule: str, action: str, old: str, new: str = "",
                message: str = "") -> Finding:
        return Finding(self.rel, self.line(start), self.line(max(start, end - 1)), rule, "port", action, old, new,
                       message)

    def rename(self, start: int, end: int, old: str, new: str, message: str = "") -> None:
        f = self.finding(start, end, codes.TP950.id, MODIFY, old, new, message)
        self.edits.append(edit_ops.Edit(start, end, new, f))

    def mapped(self, m) -> None:
        """A name of the map: renamed, reported unsupported or for review, or a method checked on its receiver."""
        if not self.in_code(m.start(), m.end()):
            return
        pmap, key = self.pmap, m.group(0)
        if key in pmap.methods:
            self.method(m, key)
            return
        at_line = (0 if key in pmap.review_once else self.line(m.start()), key)
        if key in pmap.review and at_line not in self.reviewed:  # one finding per line (or file) and name
            self.findings.append(self.finding(m.start(), m.end(), codes.TP955.id, ADVICE, key,
                                              message=pmap.review[key]))
            self.reviewed.add(at_line)
            self.review += 1
        new = pmap.identifiers.get(key)
        if new is None:
            if key not in pmap.review:
                self.findings.append(self.finding(m.start(), m.end(), codes.TP952.id, UNSUPPORTED, key,
                                                  message=pmap.unsupported.get(key)
                                                  or f"no {pmap.target} counterpart"))
            return
        self.converted[key] += 1
        self.rename(m.start(), m.end(), key, new)

    def method(self, m, key: str) -> None:
        """A method of the map: renamed where its receiver's class has it, else reported."""
        pmap, spec = self.pmap, self.pmap.methods[key]
        self.facts = self.facts or FileFacts(self.text, pmap.receivers)
        cls, what = receiver_class(self.text, m.start(), m.end(), pmap.receivers, self.facts)
        if what is None:
            return  # not called on a receiver (a variable, a free function): a name of the project's own
        if cls in spec["valid"]:
            self.converted[key] += 1
            self.rename(m.start(), m.end(), key, spec["new"])
            return
        header, to = pmap.receivers.get("classes", {}).get(cls), spec["new"]
        self.findings.append(self.finding(m.start(), m.end(), codes.TP955.id, ADVICE, key, message=(
            f"not renamed to {to}(): the receiver {what} is {cls} ({header}), which has no {to}(); "
            f"test the tensor or the device itself: .{to}()" if cls else
            f"not renamed to {to}(): the receiver {what} is of the project's own class; rename its "
            f"{key}() by hand if it stands for PyTorch's")))
        self.review += 1

    def left_names(self, looking: list) -> None:
        """CUDA-looking names in code that the map does not know: counted as left."""
        pmap = self.pmap
        for m in looking:
            name = m.group(0)
            if self.in_code(m.start(), m.end()) and name not in pmap.identifiers and name not in pmap.unsupported \
                    and name not in pmap.review and not (pmap.kept and pmap.kept.match(name)):
                self.left[name] += 1

    def includes(self, resolve_include) -> list:
        """Include paths renamed (project headers, then the map's); the (line, path) of the quoted ones."""
        quoted = []
        for s, e in self.include_spans:
            found = include_path(self.text[s:e], s)
            if found is None:
                continue
            path, quote, at = found
            if quote == '"':
                quoted.append((self.line(s), path))
            new = resolve_include(self.rel, path) if quote == '"' else None
            if new is None:
                new = self.pmap.header(path)
            if new is not None and new != path:
                f = self.finding(at, at + len(path), codes.TP951.id, MODIFY, path, new)
                self.edits.append(edit_ops.Edit(at, at + len(path), new, f))
                self.converted[path] += 1
        return quoted

    def dispatch(self, dispatch: list) -> None:
        """The CUDA dispatch key of TORCH_LIBRARY_IMPL, where kernels are registered."""
        for m in dispatch:
            if self.in_code(m.start(1)):
                self.rename(m.start(1), m.end(1), "CUDA", self.pmap.dispatch_key,
                            "dispatch key of the kernels registered here")
                self.converted["TORCH_LIBRARY_IMPL(..., CUDA, ...)"] += 1

    def reviewed_constructs(self, reviews: list) -> None:
        """Constructs no mapping ports faithfully (PTX, warp intrinsics...): reported once per line."""
        for _regex, why, m in reviews:  # strings count (PTX lives in asm strings), comments do not
            line = self.line(m.start())
            code = m.group(0).strip()
            if self.in_comment(m.start()) or (line, code) in self.reviewed:
                continue  # one finding per line and construct
            self.reviewed.add((line, code))
            self.review += 1
            self.findings.append(self.finding(m.start(), m.end(), codes.TP955.id, ADVICE, code, message=why))


_NEWLINE = re.compile(r"\n")
_CALLED = re.compile(r"\s*\(")
_PAREN = re.compile(r"[()]")
_CLASS_NAME = re.compile(r"\b(?:class|struct)\s+(\w+)")
# `Type [const] [&*] name [= init]`: a declaration (or a look-alike such as `return name`, which names no known
# class and is skipped), found for every name in one pass.  Each (::-qualified) name is read once, as a type;
# what follows it is a lookahead (or nothing), so that declarations overlap as they do for different names
# (`const T x`: `T` of `const`, then `x` of `T`).  Groups: type, name, the blanks after it, `=`; the name is
# None when the type declares nothing.  The blanks between type and name are one run.
_DECLARATION = re.compile(r"(?<![\w:])((?:[A-Za-z_]\w*[ \t]*::[ \t]*)*[A-Za-z_]\w*)(?:(?=(?:[ \t]*const\b)?"
                          r"(?:[ \t]*[&*]+\s*|\s+)((?:::)?\w+(?:::\w+)*)\b([ \t]*)(=)?)|)")
_INIT_END = re.compile(r"[;{}]")  # an initializer runs to the next of these


def _name_start(text: str, end: int) -> int:
    """Where the identifier or ::-qualified name that ends at `end` starts (`end` when none), read backwards: a
    regex anchored at the end would try every start before it."""
    while end and (text[end - 1].isalnum() or text[end - 1] in "_:"):
        end -= 1
    return end


def _name_at_end(text: str) -> str:
    return text[_name_start(text, len(text)):]


def _call_at_end(text: str, end: int) -> tuple:
    """(offset of its `(`, (`.` / `->` or None, name)) of the call `[.|->] name(args)` that text[:end] ends with
    (args without parentheses); (-1, None) when it ends with none.  Read from the end: a regex anchored there
    would try every start before it."""
    while end and text[end - 1].isspace():
        end -= 1
    open_at = text.rfind("(", 0, end) if end and text[end - 1] == ")" else -1
    if open_at < 0 or text.find(")", open_at + 1, end - 1) >= 0:
        return -1, None
    i = open_at
    while i and text[i - 1].isspace():
        i -= 1
    j = _name_start(text, i)
    if j == i:
        return open_at, None
    name = text[j:i]
    while j and text[j - 1].isspace():
        j -= 1
    return open_at, ("->" if j >= 2 and text.startswith("->", j - 2) else "." if text[j - 1:j] == "." else None, name)


class FileFacts:
    """What receiver_class reads from the whole file, worked out once per file (reading the text again for each
    call is quadratic): where each `)` opens, the declarations of each name, the classes the file defines."""

    def __init__(self, text: str, rec: dict):
        self.text, self.rec = text, rec
        self._opens: Optional[dict[int, int]] = None        # offset of a `)` -> offset of its `(`
        self._classes: Optional[dict[str, int]] = None
        self._by_name: Optional[dict[str, list[tuple]]] = None   # see _index
        self._stops: Optional[list[int]] = None             # set with _by_name
        self._calls: dict[int, tuple] = {}
        self._told: dict[str, tuple] = {}

    def opening(self, close: int) -> int:
        """Offset of the `(` that the `)` at `close` closes; -1 when none does."""
        if self._opens is None:
            stack: list[int] = []
            self._opens = {}
            for m in _PAREN.finditer(self.text):
                if m.group(0) == "(":
                    stack.append(m.start())
                elif stack:
                    self._opens[m.start()] = stack.pop()
        return self._opens.get(close, -1)

    def declarations(self, name: str) -> list:
        """[(start, end of the name, end, type, offset of `=` or None)] of the declarations of `name`, in text
        order, each starting after the one before ends (as one regex for `name`, run with finditer, would find
        them).  An initializer runs from its `=` to the next `;`, `{` or `}`."""
        if self._by_name is None:
            self._by_name = self._index()
            self._stops = [m.start() for m in _INIT_END.finditer(self.text)]
        stops = cast("list[int]", self._stops)   # set with _by_name
        out, after = [], 0
        for start, name_end, end, spelled, eq in self._by_name.get(name, ()):
            if start >= after:
                if eq is not None:
                    i = bisect.bisect_left(stops, eq)
                    end = stops[i] if i < len(stops) else len(self.text)
                out.append((start, name_end, end, spelled, eq))
                after = end
        return out

    def _index(self) -> dict:
        """{name: [(start, end of the name, end, type, offset of `=` or None)]}: every declaration look-alike of
        the text, under its name and under each ::-prefix of it (`x` of `T x::y` too, as `x\\b` finds it there)."""
        index: dict[str, list[tuple]] = {}
        for m in _DECLARATION.finditer(self.text):
            spelled, name = m.group(1), m.group(2)
            if name is None:
                continue
            at = m.start(2)
            for i in range(1, len(name)):  # the ::-prefixes, followed by `::` (no blanks, no initializer)
                if name.startswith("::", i):
                    index.setdefault(name[:i], []).append((m.start(), at + i, at + i, spelled, None))
            index.setdefault(name, []).append((m.start(), m.end(2), m.end(3), spelled,
                                               m.start(4) if m.group(4) else None))
        return index

    def declared_class(self, name: str, start: int) -> Optional[str]:
        """The class of the last declaration of `name` before `start` that tells one: a known class, a class the
        text defines itself before `start` (""), or `auto x = R.f()`; None when none tells.  A declaration
        whose initializer goes on past `start` (`T x = a, y = x.f();`) is read up to `start`."""
        if name not in self._told:
            self._told[name] = self._telling(name)
        decls, starts, told_at, latest = self._told[name]
        i = bisect.bisect_right(starts, start) - 1  # the one declaration that may run on past `start`
        if i >= 0 and decls[i][1] <= start < decls[i][2]:
            cls = self._told_by(decls[i], start)
            if cls is not None:
                return cls
        i = bisect.bisect_right(told_at, start)
        return latest[i - 1] if i else None

    def _told_by(self, declaration: tuple, upto: int) -> Optional[str]:
        """The class a declaration tells when the text is read up to `upto` (None: it tells none)."""
        _, _, _, spelled, eq = declaration
        rec = self.rec
        if spelled == "auto":
            call = self.initializer_call(eq, upto) if eq is not None else None
            if call and call[0]:
                return rec.get("returns", {}).get(call[1], rec.get("default", ""))
            return (_type_class(call[1], rec) if call else "") or rec.get("default", "")
        if _type_class(spelled, rec):
            return _type_class(spelled, rec)
        defined = self.classes().get(spelled)
        return "" if defined is not None and defined <= upto else None  # the project's own class: its own methods

    def _telling(self, name: str) -> tuple:
        """(declarations, their starts, offsets, classes): sorted offsets from which a whole declaration of
        `name` tells its class, and for each the class told by the last such declaration in the text (a later
        declaration overrides an earlier)."""
        decls = self.declarations(name)
        told = []  # (offset from which it tells, its order in the text, class)
        for order, declaration in enumerate(decls):
            end, spelled = declaration[2], declaration[3]
            if spelled != "auto" and not _type_class(spelled, self.rec) and spelled in self.classes():
                end = max(end, self.classes()[spelled])  # the project's own class tells once it is defined
            cls = self._told_by(declaration, end)
            if cls is not None:
                told.append((end, order, cls))
        told.sort()
        offsets, latest, last_order, last_cls = [], [], -1, None
        for at, order, cls in told:
            if order > last_order:
                last_order, last_cls = order, cls
            offsets.append(at)
            latest.append(last_cls)
        return decls, [d[0] for d in decls], offsets, latest

    def initializer_call(self, eq: int, end: int):
        """(`.` / `->` or None, name) of the call the initializer text[eq:end] ends with, or None.  Worked out
        once per end: initializers that share theirs (`auto a = auto b = f();`) would each read it again."""
        if end not in self._calls:
            self._calls[end] = _call_at_end(self.text, end)
        open_at, call = self._calls[end]
        return call if open_at > eq else None  # its `(` in the initializer (the name then is too: `=` stops it)

    def classes(self) -> dict:
        """{name: end of its first `class name` / `struct name`}."""
        if self._classes is None:
            self._classes = {}
            for m in _CLASS_NAME.finditer(self.text):
                self._classes.setdefault(m.group(1), m.end())
        return self._classes


def receiver_class(text: str, start: int, end: int, rec: dict, facts: Optional[FileFacts] = None) -> tuple:
    """(class, description) of the receiver R of a method call `R.name(` / `R->name(` whose name is
    text[start:end], as far as the text shows it (kb/port/receivers.toml): R ending in `.type()` is what that
    method returns, a variable its declared type; anything else gets `default`.  The class is "" when R is of
    the project's own class (`this`, a variable of a class the file defines); (None, None) when the name is
    not called on a receiver there."""
    window = max(0, start - 2000)
    head = text[window:start].rstrip()  # the receiver expression ends here
    if not _CALLED.match(text, end) or not head.endswith((".", "->")):
        return None, None
    head = head[:-2].rstrip() if head.endswith("->") else head[:-1].rstrip()
    default = rec.get("default", "")
    facts = facts or FileFacts(text, rec)
    if head.endswith(")"):  # R ends in a call: what the called method returns, or the class constructed
        i = facts.opening(window + len(head) - 1) - window  # below 0: it opens before the window, or nowhere
        before = head[:max(i, 0)].rstrip()
        name = _name_at_end(before) if i > 0 else ""
        if not name:
            return default, "(an expression)"
        if before[:-len(name)].rstrip().endswith((".", "->")):
            return rec.get("returns", {}).get(name, default), f"`.{name}()`"
        return _type_class(name, rec) or default, f"`{name}(...)`"
    name = _name_at_end(head)
    if not name or head[:-len(name)].rstrip().endswith((".", "->")):
        return default, f"`{name or head[-20:].strip()}`"  # a container element, a member: typed nowhere here
    if name == "this":
        return "", "`this`"
    cls = facts.declared_class(name, start)
    return (default if cls is None else cls), f"`{name}`"


def _type_class(spelled: str, rec: dict) -> str:
    """The class a type name stands for: as written, else by its last component (at::Tensor, torch::Tensor)."""
    types = rec.get("types", {})
    spelled = spelled.replace(" ", "")
    return types.get(spelled) or types.get(spelled.rsplit("::", 1)[-1], "")


_INCLUDE_LINE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*([<\"])([^>\"\n]*)[>\"]", re.MULTILINE)
def _include_candidates(text: str, rel: str, pmap, resolve_include):
    """(path, quote, offset, new path or None) of every line that looks like an #include (a superset of
    the real ones: this decides only whether the file needs lexing at all)."""
    for m in _INCLUDE_LINE.finditer(text):
        path, quote = m.group(2), m.group(1)
        new = None
        if pmap is not None:
            new = resolve_include(rel, path) if quote == '"' else None
            if new is None:
                new = pmap.header(path)
        yield path, quote, m.start(2), new


_DEFINE = re.compile(r"#[ \t]*define[ \t]+(\w+)")
# `name = ...` (not `==`) where the name starts a word; an at::cuda:: name may follow a blank or `(`, not `::`
_ASSIGNED_WORD = re.compile(r"(?<!\w)(\w+)[ \t]*=(?!=)")
_ASSIGNED_CUDA_NAME = re.compile(r"(?<![\w:])((?:at|c10)::cuda::\w+(?:::\w+)*)[ \t]*=(?!=)")
_CONST = re.compile(r"\bconst(?:expr)?\b")


def _own_names(text: str, names, starts: list) -> frozenset:
    """Those of `names` the text defines itself (`#define CUDA_1D_KERNEL_LOOP`, `constexpr int
    CUDA_NUM_THREADS = ...`): the project's own, subtracted from the "left" counts tree-wide.  `starts`: the
    offsets where the text's lines start.  One pass for all names (a search per name is quadratic in a file
    with many)."""
    if not names:
        return frozenset()
    own = set(_DEFINE.findall(text)) & set(names)
    consts = [(m.start(), m.end()) for m in _CONST.finditer(text)]
    for regex in (_ASSIGNED_WORD, _ASSIGNED_CUDA_NAME):
        for m in regex.finditer(text):
            name = m.group(1)
            if name not in names or name in own:
                continue
            # a `const`/`constexpr` before the name on its line
            i = bisect.bisect_left(consts, (starts[bisect.bisect_right(starts, m.start()) - 1],))
            if i < len(consts) and consts[i][1] <= m.start():
                own.add(name)
    return frozenset(own)


_DISPATCH_IMPL = re.compile(r"TORCH_LIBRARY_IMPL\s*\(\s*\w+\s*,\s*(CUDA)\s*,")
_COOPERATIVE = re.compile(r"\bcudaLaunchCooperativeKernel\w*|\bcooperative_groups::this_grid\b|\bgrid\.sync\(\)")
_WARP_SIZE = re.compile(r"\b(?:warpSize|WARP_SIZE|kWarpSize)\b[ \t]*=[ \t]*32\b|&[ \t]*31\b|[%/][ \t]*32\b|\+=[ \t]*32\b")
_PREFILTER = {codes.TP903.id: r"asm", codes.TP904.id: r"CUDA_ARCH|CUDA_VERSION|__CUDACC_VER",
              codes.TP905.id: r"_sync|__activemask|wmma|mma\.sync|syncwarp"}
_REVIEW = tuple((re.compile(_PREFILTER[rule]), regex, why) for regex, rule, why in native.HARD_TO_PORT) + (
    # (cheap prefilter, detector, why): the detectors are slow regexes, most files fail the prefilter
    (re.compile(r"Cooperative|this_grid|grid\.sync"), _COOPERATIVE,
     "cooperative launch: check the target supports grid-wide sync"),
    (re.compile(r"[%/+&=][ \t]*3[12]\b"), _WARP_SIZE, "a literal warp size of 32: the target's warp size may differ"))


def new_name(rel: str, suffixes: dict) -> str:
    """The output path of a file: `.cu` -> `.mu` and so on."""
    for old, new in suffixes.items():
        if rel.endswith(old):
            return rel[: -len(old)] + new
    return rel


class IncludeResolver:
    """Resolves quoted project includes against the files of the tree, the way compilers with a few
    -I flags would: next to the including file first, then any file whose path ends with it."""

    def __init__(self, rels: list, suffixes: dict):
        self.suffixes = suffixes
        self.files = set(rels)
        self.by_tail: dict = {}
        for rel in rels:
            parts = rel.split("/")
            for i in range(len(parts)):
                self.by_tail.setdefault("/".join(parts[i:]), []).append(rel)

    def find(self, including: str, path: str) -> Optional[str]:
        here = posixpath.normpath(posixpath.join(posixpath.dirname(including), path))
        if here in self.files:
            return here
        hits = self.by_tail.get(posixpath.normpath(path).lstrip("./"))
        return sorted(hits)[0] if hits else None

    def __call__(self, including: str, path: str) -> Optional[str]:
        """The include path to write: renamed when the header it names is renamed."""
        target = self.find(including, path)
        if target is None:
            return None
        for old, new in self.suffixes.items():
            if target.endswith(old) and path.endswith(old):
                return path[: -len(old)] + new
        return path
