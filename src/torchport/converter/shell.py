"""Launch scripts (*.sh): environment variables, backend flags and nvidia-smi, outside comments."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

from ..core import codes, suppress
from ..core import edits as edit_ops
from ..core.edits import Edit
from ..core.finding import ADVICE, Finding
from ..kb.apimap import ApiMap
from .checkers import Checker, Phase, checker
from .context import FileContext
from .rules.env import ENV_NAME, env_decision

if TYPE_CHECKING:
    from .context import FileContext

SHELL_SUFFIXES = (".sh", ".bash")
_ENV_WORD = re.compile(r"(?<![\w$])\$?\{?((?:CUDA|NCCL|TORCH_NCCL|NVIDIA|PYTORCH_CUDA|PYTORCH_NO_CUDA)_[A-Z0-9_]*)\b")


def _flag(word: str) -> str:
    """Group 1: a `--` option naming `word` (`--dist-backend`), as the first `--` of a run of name characters:
    the match starts at the run (a later `--` in it cannot match where the first did not), and `word` is looked
    for once, so a long run of dashes or of `word` is read in linear time."""
    return r"(?<![\w-])(?:\w|-(?!-))*(--(?=[\w-]*?" + word + r")[\w-]*)"


_BACKEND_FLAG = re.compile(_flag("backend") + r"(=|\s+)(['\"]?)nccl\3(?![\w-])")
_NVIDIA_SMI = re.compile(r"\bnvidia-smi\b")


def code_spans(line: str) -> list[tuple[int, int]]:
    """(start, end) of the parts of one shell line that are code, not a comment."""
    quote = ""
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\" and quote != "'":
            i += 2
            continue
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t;|&("):
            return [(0, i)]
        i += 1
    return [(0, len(line))]


@checker(codes.TP801, phase=Phase.SHELL, triggers=("cuda_", "nccl_"))
def shell_env_vars(ctx: FileContext, start: int, code: str) -> None:
    r = codes.TP801
    for m in _ENV_WORD.finditer(code):
        name = m.group(1)
        if not ENV_NAME.match(name):
            continue
        new, message = env_decision(ctx, name)
        s = start + m.start(1)
        if new:
            ctx.replace((s, s + len(name)), new, r, message)
        else:
            ctx.report_span(s, s + len(name), r, ADVICE, message)


@checker(codes.TP802, phase=Phase.SHELL, triggers=("nccl",))
def shell_backend_flags(ctx: FileContext, start: int, code: str) -> None:
    if not ctx.target.backend or ctx.target.backend_expr:
        return
    for m in _BACKEND_FLAG.finditer(code):
        s = start + m.end() - len("nccl") - len(m.group(3))
        ctx.replace((s, s + 4), ctx.target.backend, codes.TP802)


_DEVICE_FLAG = re.compile(_flag("device") + r"(=|\s+)(['\"]?)(cuda(?::\d+)?)\3(?![\w:-])")


@checker(codes.TP804, phase=Phase.SHELL, triggers=("cuda",))
def shell_device_flags(ctx: FileContext, start: int, code: str) -> None:
    t = ctx.target
    if not t.device:
        return
    for m in _DEVICE_FLAG.finditer(code):
        old = m.group(4)
        new = t.device + (old[4:] if t.device_index else "")
        s = start + m.start(4)
        ctx.replace((s, s + len(old)), new, codes.TP804)


@checker(codes.TP803, phase=Phase.SHELL, triggers=("nvidia-smi",))
def shell_nvidia_smi(ctx: FileContext, start: int, code: str) -> None:
    for m in _NVIDIA_SMI.finditer(code):
        tool = ctx.target.smi
        ctx.report_span(start + m.start(), start + m.end(), codes.TP803, ADVICE,
                        f"use {tool} on {ctx.target.title}" if tool else f"{ctx.target.title} has no nvidia-smi counterpart")


class ShellConverter:
    def __init__(self, api: ApiMap, checkers: list[Checker]) -> None:
        self.api = api
        self.rules = checkers
        words = sorted({w for r in self.rules for w in r.triggers})
        self.trigger = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)  # scripts are small
        self.selection = suppress.Selection()  # the codes this run reports (see PythonConverter.selection)

    def convert(self, path: str, source: str, newline: str = "\n", suppressed: Optional[list[Finding]] = None
                ) -> tuple[str, list[Edit], list[Finding]]:
        if not self.trigger.search(source):
            return source, [], []
        ctx = FileContext(path, source, self.api, newline)
        for line_no, line_start in enumerate(ctx.line_starts, 1):
            end = ctx.line_starts[line_no] if line_no < len(ctx.line_starts) else len(source)
            line = source[line_start:end]
            if not self.trigger.search(line):
                continue
            for s, e in code_spans(line):
                for r in self.rules:
                    r.check(ctx, line_start + s, line[s:e])
        suppress.take(ctx, *suppress.shell_comments(ctx.source, code_spans), self.selection, suppressed)
        new_source, kept, _ = edit_ops.apply(source, ctx.edits)
        findings = [e.finding for e in kept if e.finding is not None] + ctx.findings
        findings.sort(key=lambda f: (f.line, f.col, f.rule))
        return new_source, kept, findings
