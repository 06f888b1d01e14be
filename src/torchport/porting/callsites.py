"""Python call sites of the ops a project's C++ extensions export (TP907): `torch.ops.<ns>.<op>`, calls through a
receiver that looks like an extension module, and calls of exported names specific enough not to be confused.

`analyze` reports them per file; `port-ext` lists each op's callers.  Here, beside the C++ scanner (native.py),
so that both use them and porting imports nothing of analyze (analyze imports porting).
"""
from __future__ import annotations

import re
from typing import Optional

from ..core import codes
from ..core.finding import ADVICE, Finding
from ..core.words import trie_pattern
from .native import line_finder

_EXT_RECEIVER = re.compile(r"(?:^|_)(?:C|ext|ext_module|cuda|cuda_ext|ops|lib)$", re.IGNORECASE)


def call_site_pattern(ext_ops, library_ops) -> Optional[re.Pattern]:
    """A pattern for the names of extension ops (a trie: cheap to run over every file); call_sites
    then checks what precedes and follows each hit."""
    names = set(ext_ops) | {op for _ns, ops in library_ops for op in ops}
    # the leading "." lets the regex engine skip ahead to dots: ~25x faster than a word boundary
    return re.compile(r"\.(" + trie_pattern(sorted(names)) + r")\b") if names else None


_CALL_AFTER = re.compile(r"\s*\(")


def receiver_before(text: str, end: int, limit: int = 120) -> str:
    """The dotted name (`torch.ops.ns`, `self._C`) that ends at `end` (or at the newline just before it), within
    `limit` characters before it; "" when none.  Read backwards: a regex anchored at `end` would try every start
    before it, each reading on."""
    start = max(0, end - limit)
    if end > start and text[end - 1] == "\n":
        end -= 1
    i = end
    while i > start and (text[i - 1].isalnum() or text[i - 1] in "_."):
        i -= 1
    run = text[i:end]  # names and dots; the name is what follows its last `..`, leading dots dropped
    if not run or run.endswith("."):
        return ""
    return run[run.rfind("..") + 2:].lstrip(".") if ".." in run else run.lstrip(".")


_GENERIC_NAMES = {"forward", "backward", "apply", "call", "run", "init", "load", "get", "set", "update", "step",
                  "compute", "launch", "main", "test"}
_LIBRARY_RECEIVERS = {"tf", "tensorflow", "np", "numpy", "math", "torch", "jnp", "jax", "F", "nn", "scipy", "os",
                      "sys", "self", "super", "keras", "mx", "paddle"}


def call_sites(rel: str, text: str, pattern) -> list:
    """TP907 findings: calls of ops exported by the project's C++ extensions: `torch.ops.<ns>.<op>`,
    any call through a receiver that looks like an extension module (`_C`, `ext_module`, `_ext`...),
    and calls of exported names specific enough not to be confused (`ms_deform_attn_forward`)."""
    out, line_of = [], None
    for m in pattern.finditer(text):
        op = m.group(1)
        receiver = written = receiver_before(text, m.start())
        if not receiver:
            continue
        if receiver.startswith("torch.ops."):
            receiver = "torch.ops"
        elif not _CALL_AFTER.match(text, m.end()):
            continue
        specific = op not in _GENERIC_NAMES and ("_" in op.strip("_") or len(op) >= 10)
        if receiver != "torch.ops" and (receiver.split(".")[-1] in _LIBRARY_RECEIVERS or
                                        not (_EXT_RECEIVER.search(receiver) or specific)):
            continue
        line_of = line_of or line_finder(text)
        line = line_of(m.start())
        out.append(Finding(rel, line, line, codes.TP907.id, "extension", ADVICE, old=f"{written}.{op}",
                           message="calls a CUDA extension op: it works only once the extension is ported"))
    return out
