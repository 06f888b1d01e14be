"""Profiler arguments: `use_cuda=True`, `sort_by="cuda_time_total"`."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ...core import codes
from ..checkers import checker
from .api import device_argument

if TYPE_CHECKING:
    from ..context import FileContext

# CUDA-named profiler table keys and their device-neutral names (torch >= 2.4)
SORT_KEYS = {
    "cuda_time": "device_time",
    "cuda_time_total": "device_time_total",
    "self_cuda_time_total": "self_device_time_total",
    "cuda_memory_usage": "device_memory_usage",
    "self_cuda_memory_usage": "self_device_memory_usage",
}


def _profiler_call(ctx: FileContext, node: ast.Call) -> bool:
    q = ctx.qualname(node.func) or ""
    if q.startswith(("torch.profiler.", "torch.autograd.profiler.", "torch.autograd.profile")):
        return True
    func = node.func
    return q == "" and getattr(func, "attr", getattr(func, "id", "")) in ("profile", "emit_nvtx")


@checker(codes.TP601, nodes=(ast.Call,), triggers=("use_cuda", "cuda_time", "cuda_memory"))
def profiler_arguments(node: ast.Call, ctx: FileContext) -> None:
    r = codes.TP601
    for k in node.keywords:
        if k.arg == "use_cuda" and _profiler_call(ctx, node):
            device = "None" if ctx.target.device == "cpu" else device_argument(ctx, node.lineno)
            value = k.value
            if isinstance(value, ast.Constant) and value.value is True:
                new = f"use_device={device}"
            elif isinstance(value, ast.Constant) and value.value is False:
                new = "use_device=None"
            else:
                new = f"use_device=({device} if {ctx.text(value)} else None)"
            ctx.replace(k, new, r)
        elif k.arg in ("sort_by", "metric") and isinstance(k.value, ast.Constant) and k.value.value in SORT_KEYS:
            text = ctx.text(k.value)
            if text[:1] in "'\"":
                ctx.replace(k.value, text[0] + SORT_KEYS[k.value.value] + text[-1], r)
