"""C/C++/CUDA sources: kernels, inline PTX, arch checks, warp intrinsics, exported ops.

Comments are blanked before matching (positions kept), so nothing in a comment
counts; string literals are kept because op names live in them
(`m.def("nms", ...)`, `TORCH_LIBRARY(ns, m) { m.def("op(Tensor x) -> Tensor") }`).
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import cast

from ..core import codes
from ..core.finding import ADVICE, Finding

NATIVE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".c", ".h", ".hpp", ".cxx", ".inl")
CUDA_SUFFIXES = (".cu", ".cuh")


# Comments and literals.  A `/*` never closed is taken to the end here, so that it is read once (blank_comments
# then reads the rest as the text it is: no comment after it closes either).  A quote right after a backslash
# starts no literal: in a literal left open on its line every later quote is escaped (and fails as a start
# too), and each would reread the line.
_LITERAL_OR_LINE_COMMENT = r'//[^\n]*|(?<!\\)"(?:\\.|[^"\\\n])*"|(?<!\\)\'(?:\\.|[^\'\\\n])*\''
_COMMENT_OR_STRING = re.compile(r"/\*.*?(?:\*/|\Z)|" + _LITERAL_OR_LINE_COMMENT, re.S)
_STRING_OR_LINE_COMMENT = re.compile(_LITERAL_OR_LINE_COMMENT)
_NOT_NEWLINE = re.compile(r"[^\n]")
_NEWLINE = re.compile(r"\n")
_BLOCK_END = re.compile(r"\n\}")
# __launch_bounds__(...) up to the first `)`, not past another `__launch_bounds__`: each one left open would
# read on to the same `)`.
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\((?:(?!__launch_bounds__)[^)])*\)")
# `__global__ <qualifiers and return type> name[<template args>](`.  Linear on any text: the words before the
# name stop at the next `__global__` (else each of many unclosed `__global__`s rescans the same text), the
# template arguments nest at most two deep (`k<float>`, `k<Pair<int>>`) and hold no other `<`, and the blanks
# before `(` are matched once.
_KERNEL = re.compile(r"__global__\b((?:(?!__global__)[^;{}()])*?)\b([A-Za-z_]\w*)"
                     r"\s*(?:<(?:[^;{}()<>]|<[^;{}()<>]*>)*>\s*)?\(")
_ASM = re.compile(r"\b(?:asm|__asm__)\s*(?:volatile\s*|__volatile__\s*)?\(")
_ARCH = re.compile(r"\b(?:__CUDA_ARCH__|CUDA_VERSION|__CUDACC_VER_MAJOR__)\b")
_WARP = re.compile(r"\b(?:__shfl(?:_up|_down|_xor)?_sync|__ballot_sync|__any_sync|__all_sync|__activemask|"
                   r"wmma::\w+|__syncwarp)\b|mma\.sync")
# Constructs no mapping ports faithfully: (detector, analyze rule, why).  port-ext reports the same ones.
HARD_TO_PORT = ((_ASM, codes.TP903.id, "inline assembly (PTX) cannot be ported automatically"),
                (_ARCH, codes.TP904.id, "CUDA architecture/version check: the numbers differ on other vendors"),
                (_WARP, codes.TP905.id, "warp/tensor-core intrinsic: warp size and matrix units differ per vendor"))
_RUNTIME = re.compile(r"\b(?:cuda[A-Z]\w*|cublas\w*|cudnn[A-Z]\w*|curand\w*|cusparse\w*|cusolver\w*|cufft\w*|"
                      r"nccl[A-Z]\w*|at::cuda::\w+|c10::cuda::\w+)\b")
_PYBIND = re.compile(r"PYBIND11_MODULE\s*\(")
_PYBIND_DEF = re.compile(r'\.def\s*\(\s*"(\w+)"')
_TORCH_LIBRARY = re.compile(r"TORCH_LIBRARY(?:_FRAGMENT)?\s*\(\s*(\w+)\s*,")
_LIBRARY_DEF = re.compile(r'\.def\s*\(\s*(?:TORCH_SELECTIVE_SCHEMA\s*\(\s*)?"(?:\w+::)?(\w+)')  # one run of blanks


@dataclass
class NativeScan:
    """What the C/C++/CUDA sources of a project contain."""

    findings: list = field(default_factory=list)
    kernels: list = field(default_factory=list)          # (file, line, name)
    pybind_ops: set = field(default_factory=set)         # names exported with pybind11
    library_ops: dict = field(default_factory=dict)      # namespace -> set of op names
    cuda_files: int = 0
    native_files: int = 0


def blank_comments(text: str) -> str:
    """Comments replaced by spaces (newlines kept); strings left in place."""
    def blank(m):
        s = m.group(0)
        return _NOT_NEWLINE.sub(" ", s) if s.startswith(("//", "/*")) else s

    parts, pos = [], 0
    for m in _COMMENT_OR_STRING.finditer(text):
        if m.group(0).startswith("/*") and m.end() == len(text) and text.find("*/", m.start() + 2) < 0:
            # a `/*` never closed is no comment: what follows is code, literals and `//` comments
            parts += [text[pos:m.start() + 1], _STRING_OR_LINE_COMMENT.sub(blank, text[m.start() + 1:])]
            return "".join(parts)
        parts += [text[pos:m.start()], blank(m)]
        pos = m.end()
    parts.append(text[pos:])
    return "".join(parts)


def line_finder(text: str):
    """offset -> 1-based line of `text`, by bisection (counting newlines again for each finding is quadratic)."""
    ends = [m.end() for m in _NEWLINE.finditer(text)]
    return lambda pos: bisect.bisect_right(ends, pos) + 1


def scan_native(rel: str, text: str, out: NativeScan) -> None:
    """Add the findings of one C/C++/CUDA file to `out` (target-independent; readiness weighs them per target)."""
    code = blank_comments(text)
    is_cuda = rel.endswith(CUDA_SUFFIXES)
    out.native_files += 1
    if is_cuda:
        out.cuda_files += 1
    line_of = line_finder(code)
    kernels = [(line_of(m.start()), m.group(2))
               for m in _KERNEL.finditer(_LAUNCH_BOUNDS.sub(lambda x: " " * len(x.group(0)), code))]
    if is_cuda:
        out.findings.append(Finding(rel, 1, 1, codes.TP901.id, "extension", ADVICE, old=rel,
                                    message=f"CUDA source file with {len(kernels)} kernel(s)"))
    for line, name in kernels:
        out.kernels.append((rel, line, name))
        out.findings.append(Finding(rel, line, line, codes.TP902.id, "extension", ADVICE, old=f"__global__ {name}",
                                    message="CUDA kernel: `torchport port-ext --to musa` ports it; other targets "
                                            "rewrite it (`port-ext --to npu` lists what that covers)"))
    for regex, rule, why in HARD_TO_PORT:
        for m in regex.finditer(code):
            line = line_of(m.start())
            out.findings.append(Finding(rel, line, line, rule, "extension", ADVICE, old=m.group(0).strip(), message=why))
    calls = _RUNTIME.findall(code)
    if calls:
        first = cast("re.Match[str]", _RUNTIME.search(code))   # findall found some
        line = line_of(first.start())
        names = sorted(set(calls))
        out.findings.append(Finding(rel, line, line, codes.TP906.id, "extension", ADVICE, old=", ".join(names[:6]),
                                    message=f"{len(calls)} CUDA runtime/library calls ({len(names)} distinct)"))
    if _PYBIND.search(code):
        for m in _PYBIND_DEF.finditer(code):
            out.pybind_ops.add(m.group(1))
    libraries = list(_TORCH_LIBRARY.finditer(code))
    if libraries:
        # A library's block runs to the next line that starts with `}`; its ops are the .def()s in it.  Blocks
        # left open share their end: each (end, namespace) is read once, from its first library on.
        closers = [m.start() for m in _BLOCK_END.finditer(code)]
        defs = [(m.start(), m.group(1)) for m in _LIBRARY_DEF.finditer(code)]
        def_starts = [start for start, _ in defs]
        opened: dict[tuple[int, str], int] = {}   # (block end, namespace) -> where its first library opens
        for lib in libraries:
            i = bisect.bisect_left(closers, lib.end())
            opened.setdefault((closers[i] if i < len(closers) else len(code), lib.group(1)), lib.end())
        for (end, ns), start in opened.items():
            in_block = defs[bisect.bisect_left(def_starts, start):bisect.bisect_left(def_starts, end)]
            out.library_ops.setdefault(ns, set()).update(op for _, op in in_block)
