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
from functools import lru_cache
from pathlib import Path
from typing import Optional

from ..analyze import native
from ..converter.python import trie_pattern
from ..converter.registry import describe
from ..core import edits as edit_ops
from ..core.errors import UsageError
from ..core.finding import ADVICE, MODIFY, UNSUPPORTED, Finding
from .lexer import include_path, scan

KB_PORT = Path(__file__).resolve().parents[1] / "kb" / "port"

describe("TP950", "port-identifiers", "port",
         """CUDA identifiers (runtime, libraries, PyTorch C++) -> the target's, from the mapping table.

         Whole identifiers and `::`-qualified names only, longest match first, never inside comments
         or string literals: `Accumulate` stays `Accumulate`.""")
describe("TP951", "port-headers", "port",
         """`#include` of CUDA/PyTorch headers -> the target's headers; of renamed project headers -> their new names.""")
describe("TP952", "port-unsupported", "port",
         """Names the mapping marks unsupported on the target: left as they are and listed.""")
describe("TP953", "port-file-names", "port",
         """CUDA source files renamed per target (`.cu` -> `.mu`, `.cuh` -> `.muh` for MUSA).""")
describe("TP954", "port-left", "port",
         """CUDA-looking identifiers the mapping does not know (`cuda*`, `cublas*`, `CUDA_*`...): left and counted.""")

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

    def compile(self) -> "PortMap":
        keys = sorted(set(self.identifiers) | set(self.unsupported) | set(self.review) | set(self.methods))
        self.pattern = re.compile(r"(?<![\w])(?:" + trie_pattern(keys) + r")(?![\w])") if keys else None
        return self


def _read_map(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise UsageError(f"cannot read mapping file {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: a mapping file must hold a JSON object")
    return data


def port_targets() -> list:
    return sorted(p.stem for p in KB_PORT.glob("*.json"))  # musa.pytorch.toml is a supplement, not a target


@lru_cache(maxsize=None)
def _bundled(name: str) -> dict:
    path = KB_PORT / f"{name}.json"
    if not path.is_file():
        return {}
    return _read_map(path)


@lru_cache(maxsize=None)
def _toml(name: str) -> dict:
    """kb/port/<target>.pytorch.toml: curated PyTorch C++ names the vendor tables lack, `methods` (renamed
    only on receivers whose class has the new method) and `kept`: patterns of CUDA-looking names that are
    valid on the target unchanged (not counted as left).  kb/port/receivers.toml: how a receiver's class is read."""
    from ..backends import tomllib

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
        if section == "headers":
            ok = _PATH_KEY.match(key)
        elif section == "suffixes":
            ok = key and not any(c.isspace() or c == "/" for c in key)
        else:
            ok = _NAME_KEY.match(key)
        if not ok:
            raise UsageError(f"{path}: the {section} key {key!r} can never match: {_KEY_HELP}")


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
    for p in user_maps:
        data = _read_map(Path(p))
        sections = ("identifiers", "headers", "unsupported", "review", "suffixes")
        if not set(sections) & set(data):
            data = {"identifiers": data}
        for key in (k for k in sections if k in data):
            if not isinstance(data[key], dict) or not all(isinstance(v, str) for v in data[key].values()):
                raise UsageError(f"{p}: '{key}' must map names to strings")
            _check_keys(p, key, data[key])
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

    regions, include_spans, comments = scan(text)
    starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
    region_starts, comment_starts = [r[0] for r in regions], [c[0] for c in comments]

    def in_code(start, end=None):
        """The span lies inside one code region."""
        i = bisect.bisect_right(region_starts, start) - 1
        return i >= 0 and (start if end is None else end) <= regions[i][1] and start < regions[i][1]

    def in_comment(pos):
        i = bisect.bisect_right(comment_starts, pos) - 1
        return i >= 0 and pos < comments[i][1]

    def finding(start, end, rule, action, old, new="", message=""):
        line = bisect.bisect_right(starts, start)
        return Finding(rel, line, bisect.bisect_right(starts, max(start, end - 1)), rule, "port", action, old, new,
                       message)

    edits, findings = [], []
    converted, left = Counter(), Counter()
    review = 0
    reviewed = set()  # (line, name) reported from the map: the generic detectors below do not repeat them
    ids, unsupported = pmap.identifiers, pmap.unsupported
    for m in hits:
        if not in_code(m.start(), m.end()):
            continue
        key = m.group(0)
        new = ids.get(key)
        if key in pmap.methods:
            spec = pmap.methods[key]
            cls, what = receiver_class(text, m.start(), m.end(), pmap.receivers)
            if what is None:
                continue  # not called on a receiver (a variable, a free function): a name of the project's own
            if cls in spec["valid"]:
                converted[key] += 1
                f = finding(m.start(), m.end(), "TP950", MODIFY, key, spec["new"])
                edits.append(edit_ops.Edit(m.start(), m.end(), spec["new"], f))
            else:
                header, to = pmap.receivers.get("classes", {}).get(cls), spec["new"]
                findings.append(finding(m.start(), m.end(), "TP955", ADVICE, key, message=(
                    f"not renamed to {to}(): the receiver {what} is {cls} ({header}), which has no {to}(); "
                    f"test the tensor or the device itself: .{to}()" if cls else
                    f"not renamed to {to}(): the receiver {what} is of the project's own class; rename its "
                    f"{key}() by hand if it stands for PyTorch's")))
                review += 1
            continue
        at_line = (0 if key in pmap.review_once else bisect.bisect_right(starts, m.start()), key)
        if key in pmap.review and at_line not in reviewed:  # one finding per line (or file) and name
            findings.append(finding(m.start(), m.end(), "TP955", ADVICE, key, message=pmap.review[key]))
            reviewed.add(at_line)
            review += 1
        if new is None:
            if key not in pmap.review:
                findings.append(finding(m.start(), m.end(), "TP952", UNSUPPORTED, key,
                                        message=unsupported.get(key) or f"no {pmap.target} counterpart"))
            continue
        converted[key] += 1
        f = finding(m.start(), m.end(), "TP950", MODIFY, key, new)
        edits.append(edit_ops.Edit(m.start(), m.end(), new, f))
    for m in looking:
        name = m.group(0)
        if in_code(m.start(), m.end()) and name not in ids and name not in unsupported and name not in pmap.review \
                and not (pmap.kept and pmap.kept.match(name)):
            left[name] += 1
    quoted = []
    for s, e in include_spans:
        found = include_path(text[s:e], s)
        if found is None:
            continue
        path, quote, at = found
        if quote == '"':
            quoted.append((bisect.bisect_right(starts, s), path))
        new = resolve_include(rel, path) if quote == '"' else None
        if new is None:
            new = pmap.header(path)
        if new is not None and new != path:
            f = finding(at, at + len(path), "TP951", MODIFY, path, new)
            edits.append(edit_ops.Edit(at, at + len(path), new, f))
            converted[path] += 1
    for m in dispatch:
        if in_code(m.start(1)):
            f = finding(m.start(1), m.end(1), "TP950", MODIFY, "CUDA", pmap.dispatch_key,
                        "dispatch key of the kernels registered here")
            edits.append(edit_ops.Edit(m.start(1), m.end(1), pmap.dispatch_key, f))
            converted["TORCH_LIBRARY_IMPL(..., CUDA, ...)"] += 1
    seen = reviewed
    for regex, why, m in reviews:  # strings count (PTX lives in asm strings), comments do not
        line = bisect.bisect_right(starts, m.start())
        code = m.group(0).strip()
        if in_comment(m.start()) or (line, code) in seen:
            continue  # one finding per line and construct
        seen.add((line, code))
        review += 1
        findings.append(finding(m.start(), m.end(), "TP955", ADVICE, code, message=why))
    defines = _own_names(text, left)
    new_text, kept, _ = edit_ops.apply(text, edits)
    findings += [e.finding for e in kept]
    findings.sort(key=lambda f: (f.line, f.col, f.rule))
    changed = len({f.line for f in findings if f.action == MODIFY})
    return FilePort(new_text if new_text != text else None, findings, converted, left, review, changed, defines,
                    quoted)


_CALLED = re.compile(r"\s*\(")
_NAME_AT_END = re.compile(r"[\w:]*\Z")  # an identifier or ::-qualified name ending where the text ends


def receiver_class(text: str, start: int, end: int, rec: dict) -> tuple:
    """(class, description) of the receiver R of a method call `R.name(` / `R->name(` whose name is
    text[start:end], as far as the text shows it (kb/port/receivers.toml): R ending in `.type()` is what that
    method returns, a variable its declared type; anything else gets `default`.  The class is "" when R is of
    the project's own class (`this`, a variable of a class the file defines); (None, None) when the name is
    not called on a receiver there."""
    head = text[max(0, start - 2000):start].rstrip()  # the receiver expression ends here
    if not _CALLED.match(text, end) or not head.endswith((".", "->")):
        return None, None
    head = head[:-2].rstrip() if head.endswith("->") else head[:-1].rstrip()
    default = rec.get("default", "")
    if head.endswith(")"):  # R ends in a call: what the called method returns, or the class constructed
        depth, i = 0, len(head) - 1
        while i >= 0:
            depth += {")": 1, "(": -1}.get(head[i], 0)
            if depth == 0:
                break
            i -= 1
        before = head[:max(i, 0)].rstrip()
        name = _NAME_AT_END.search(before).group(0) if i > 0 else ""
        if not name:
            return default, "(an expression)"
        if before[:-len(name)].rstrip().endswith((".", "->")):
            return rec.get("returns", {}).get(name, default), f"`.{name}()`"
        return _type_class(name, rec) or default, f"`{name}(...)`"
    name = _NAME_AT_END.search(head).group(0)
    if not name or head[:-len(name)].rstrip().endswith((".", "->")):
        return default, f"`{name or head[-20:].strip()}`"  # a container element, a member: typed nowhere here
    if name == "this":
        return "", "`this`"
    cls = _declared_class(text[:start], name, rec)
    return (default if cls is None else cls), f"`{name}`"


def _type_class(spelled: str, rec: dict) -> str:
    """The class a type name stands for: as written, else by its last component (at::Tensor, torch::Tensor)."""
    types = rec.get("types", {})
    spelled = spelled.replace(" ", "")
    return types.get(spelled) or types.get(spelled.rsplit("::", 1)[-1], "")


@lru_cache(maxsize=256)
def _declaration(name: str) -> re.Pattern:
    """`Type [const] [&*] name [= init]`: a declaration of `name` (or a look-alike such as `return name`,
    which names no known class and is skipped)."""
    return re.compile(r"(?<![\w:])((?:[A-Za-z_]\w*[ \t]*::[ \t]*)*[A-Za-z_]\w*)[ \t]*(?:const\b[ \t]*)?"
                      r"(?:[&*]+\s*|\s+)" + re.escape(name) + r"\b[ \t]*(=[^;{}]*)?")


def _declared_class(before: str, name: str, rec: dict) -> Optional[str]:
    """The class of the last declaration of `name` in `before` that tells one: a known class, a class the
    text defines itself (""), or `auto x = R.f()`; None when none tells."""
    found, own = None, None
    for m in _declaration(name).finditer(before):
        spelled, init = m.group(1), m.group(2)
        if spelled == "auto":
            call = re.search(r"(?:(\.|->)\s*)?([\w:]+)\s*\([^()]*\)\s*$", init or "")
            if call and call.group(1):
                found = rec.get("returns", {}).get(call.group(2), rec.get("default", ""))
            else:
                found = (_type_class(call.group(2), rec) if call else "") or rec.get("default", "")
        elif _type_class(spelled, rec):
            found = _type_class(spelled, rec)
        else:
            if own is None:
                own = set(re.findall(r"\b(?:class|struct)\s+(\w+)", before))
            if spelled in own:
                found = ""  # the project's own class: its methods are its own
    return found


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


def _own_names(text: str, names) -> frozenset:
    """Those of `names` the text defines itself (`#define CUDA_1D_KERNEL_LOOP`, `constexpr int
    CUDA_NUM_THREADS = ...`): the project's own, subtracted from the "left" counts tree-wide.
    Each search starts with a literal, so the regex engine skips ahead fast."""
    own = set()
    for name in names:
        if re.search(r"#[ \t]*define[ \t]+" + re.escape(name) + r"\b", text):
            own.add(name)
            continue
        for m in re.finditer(re.escape(name) + r"[ \t]*=(?!=)", text):
            line = text[text.rfind("\n", 0, m.start()) + 1:m.start()]
            if re.search(r"\bconst(?:expr)?\b", line) and _starts_word(text, m.start()):
                own.add(name)
                break
    return frozenset(own)


_DISPATCH_IMPL = re.compile(r"TORCH_LIBRARY_IMPL\s*\(\s*\w+\s*,\s*(CUDA)\s*,")
_COOPERATIVE = re.compile(r"\bcudaLaunchCooperativeKernel\w*|\bcooperative_groups::this_grid\b|\bgrid\.sync\(\)")
_WARP_SIZE = re.compile(r"\b(?:warpSize|WARP_SIZE|kWarpSize)\b[ \t]*=[ \t]*32\b|&[ \t]*31\b|[%/][ \t]*32\b|\+=[ \t]*32\b")
_PREFILTER = {"TP903": r"asm", "TP904": r"CUDA_ARCH|CUDA_VERSION|__CUDACC_VER",
              "TP905": r"_sync|__activemask|wmma|mma\.sync|syncwarp"}
_REVIEW = tuple((re.compile(_PREFILTER[rule]), regex, why) for regex, rule, why in native.HARD_TO_PORT) + (
    # (cheap prefilter, detector, why): the detectors are slow regexes, most files fail the prefilter
    (re.compile(r"Cooperative|this_grid|grid\.sync"), _COOPERATIVE,
     "cooperative launch: check the target supports grid-wide sync"),
    (re.compile(r"[%/+&=][ \t]*3[12]\b"), _WARP_SIZE, "a literal warp size of 32: the target's warp size may differ"))

describe("TP955", "port-needs-review", "port",
         """Code no mapping can port faithfully, reported at file:line with the reason: inline PTX,
         `__CUDA_ARCH__`/`CUDA_VERSION` checks, warp intrinsics and masks, literal warp sizes,
         cooperative launches, tensor-core intrinsics (`wmma`, `mma.sync`).""")


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
