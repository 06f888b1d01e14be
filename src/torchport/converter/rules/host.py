"""Targets that may run on the CPU (cpu, and accelerator on a host without one): code that *requires*
CUDA, as opposed to code that asks about it.

`if torch.cuda.is_available():` is a question: CPU torch answers "no" and the project's CPU branch runs
(the cpu target keeps such questions).  `assert torch.cuda.is_available()` and
`assert n <= torch.cuda.device_count()` are requirements: on the CPU they fail, although everything the
converted program does runs there (yolox's distributed worker, on gloo).
"""
from __future__ import annotations

import ast

from ...core.finding import ADVICE, UNSUPPORTED
from ..registry import rule
from .devices import asks_for_cuda


@rule("TP209", "cuda-requirement-on-host", "device-api", nodes=(ast.Assert, ast.If),
      triggers=("is_available", "device_count", "is_initialized"))
def cuda_requirement(node, ctx):
    """On targets that may run on the CPU (cpu; accelerator, where there is none): `assert
    torch.cuda.is_available()` (or any assert about CUDA's presence or device count) -> `pass`;
    `if not torch.cuda.is_available(): raise ...` is reported.

    The assertion only held on a CUDA machine; on the CPU it would stop a program that otherwise runs."""
    if not (ctx.target.host or not ctx.target.device):
        return
    r = cuda_requirement.rule
    if isinstance(node, ast.Assert) and asks_for_cuda(ctx, node.test):
        ctx.replace(node, "pass", r, "an assertion that CUDA is there fails on the CPU")
    elif isinstance(node, ast.If) and isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not) \
            and asks_for_cuda(ctx, node.test) and node.body and isinstance(node.body[0], ast.Raise):
        ctx.report(node.test, r, ADVICE, "raises when there is no device, which is the case on the CPU: "
                                         "remove the check where the program may run on the CPU")


def _inside(f, node) -> bool:
    start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
    return start <= (f.line, f.col) < end


@rule("TP210", "guard-keeps-cuda-branch", "device-api", nodes=("finalize",), triggers=("is_available", "device_count"))
def guard_keeps_cuda_branch(tree, ctx):
    """A CUDA availability test whose branch still calls torch.cuda APIs the target lacks keeps asking about
    CUDA: `torch.cuda.get_device_capability() if torch.cuda.is_available() else None` stays as it is on npu.

    Rewritten to the target's question, the test would send the target into code that calls CUDA (on an NPU
    host `torch.npu.is_available()` is true, and the kept `torch.cuda` call fails).  Kept, the branch is
    skipped there as on any machine without CUDA, and the test is reported with the calls to convert first."""
    if ctx.target.host:
        return  # the host target keeps every such question anyway
    left = [f for f in ctx.findings if f.action == UNSUPPORTED and f.old.startswith("torch.cuda")]
    if not left:
        return
    for node in ast.walk(tree):
        if not isinstance(node, (ast.If, ast.IfExp)) or not asks_for_cuda(ctx, node.test):
            continue
        branch = node.body if isinstance(node, ast.IfExp) else node.body
        parts = [branch] if isinstance(branch, ast.AST) else branch
        blocking = [f for f in left for part in parts if _inside(f, part)]
        if not blocking:
            continue
        start, end = ctx.span(node.test)
        ctx.drop_edits_within(start, end)
        ctx.report(node.test, guard_keeps_cuda_branch.rule, UNSUPPORTED,
                   f"kept: its branch calls {blocking[0].old} (line {blocking[0].line}), which {ctx.target.name} "
                   "lacks; convert that, then this test")
