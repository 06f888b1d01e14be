"""Targets that may run on the CPU (cpu, and accelerator on a host without one): code that *requires*
CUDA, as opposed to code that asks about it.

`if torch.cuda.is_available():` is a question: CPU torch answers "no" and the project's CPU branch runs
(the cpu target keeps such questions).  `assert torch.cuda.is_available()` and
`assert n <= torch.cuda.device_count()` are requirements: on the CPU they fail, although everything the
converted program does runs there (yolox's distributed worker, on gloo).
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import ast

from ...core.finding import ADVICE, UNSUPPORTED
from ...core import codes
from ..checkers import Phase, checker
from .api import REFERENCE_CODES
from .devices import asks_for_cuda

if TYPE_CHECKING:
    from ..context import FileContext


@checker(codes.TP209, nodes=(ast.Assert, ast.If), triggers=("is_available", "device_count", "is_initialized"),
         needs=("cuda",))  # what it asks about is torch.cuda
def cuda_requirement(node: ast.Assert | ast.If, ctx: FileContext) -> None:
    if not (ctx.target.host or not ctx.target.device):
        return
    r = codes.TP209
    if isinstance(node, ast.Assert) and asks_for_cuda(ctx, node.test):
        ctx.replace(node, "pass", r, "an assertion that CUDA is there fails on the CPU")
    elif isinstance(node, ast.If) and isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not) \
            and asks_for_cuda(ctx, node.test) and node.body and isinstance(node.body[0], ast.Raise):
        ctx.report(node.test, r, ADVICE, "raises when there is no device, which is the case on the CPU: "
                                         "remove the check where the program may run on the CPU")


# Said of a name the target lacks in what a kept question guards (migrate lists it to review: it does not run)
KEPT_BRANCH = "guarded by a CUDA question convert kept"
# the codes of names the target lacks (torch.cuda.X, torch._C._cuda_X, a CUDA-only package's names)
_REFERENCES = frozenset(c.id for c in REFERENCE_CODES)


def _inside(f, node) -> bool:
    start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
    return start <= (f.line, f.col) < end


@checker(codes.TP210, phase=Phase.FILE, triggers=("is_available", "device_count"), needs=("cuda",))
def guard_keeps_cuda_branch(tree: ast.Module, ctx: FileContext) -> None:
    if ctx.target.host:
        return  # the host target keeps every such question anyway
    left = [f for f in ctx.findings if f.action == UNSUPPORTED and f.rule in _REFERENCES]
    if not left:
        return
    for node in ast.walk(tree):
        for test, parts, where in _questions_and_what_they_guard(ctx, node):
            blocking = [f for f in left for part in parts if _inside(f, part)]
            if not blocking:
                continue
            start, end = ctx.span(test)
            ctx.drop_edits_within(start, end)
            ctx.report(test, codes.TP210, UNSUPPORTED,
                       f"kept: {where} calls {blocking[0].old} (line {blocking[0].line}), which {ctx.target.name} "
                       "lacks; convert that, then this test")
            line = ctx.line_of(start)
            ctx.findings[:] = [replace(f, message=f"{f.message} ({KEPT_BRANCH} at line {line}: on {ctx.target.name} "
                                                  "it answers no, so this line does not run there)")
                               if f in blocking and KEPT_BRANCH not in f.message else f for f in ctx.findings]


def _questions_and_what_they_guard(ctx, node) -> list:
    """[(a test that asks whether CUDA is there, the nodes that run only when it says yes, how to name them)]:
    an if's or conditional's branch, and in `a and b` the operands after the question (`torch.cuda.is_available()
    and torch.cuda.get_device_capability() >= (8, 0)`: rewriting the question alone would run the CUDA call on
    the target, where before the `and` stopped at the question)."""
    if isinstance(node, (ast.If, ast.IfExp)) and asks_for_cuda(ctx, node.test):
        return [(node.test, node.body if isinstance(node.body, list) else [node.body], "its branch")]
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        asking = next((i for i, v in enumerate(node.values) if asks_for_cuda(ctx, v)), None)
        if asking is not None and asking + 1 < len(node.values):
            return [(node.values[asking], node.values[asking + 1:], "the `and` after it")]
    return []
