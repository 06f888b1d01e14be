"""Targets that may run on the CPU (cpu, and accelerator on a host without one): code that *requires*
CUDA, as opposed to code that asks about it.

`if torch.cuda.is_available():` is a question: CPU torch answers "no" and the project's CPU branch runs
(the cpu target keeps such questions).  `assert torch.cuda.is_available()` and
`assert n <= torch.cuda.device_count()` are requirements: on the CPU they fail, although everything the
converted program does runs there (yolox's distributed worker, on gloo).
"""
from __future__ import annotations

import ast

from ...core.finding import ADVICE
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
