"""Things converted by hand: reported with advice, never rewritten."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import ast

from ...core.finding import ADVICE, UNSUPPORTED
from ...core import codes
from ..checkers import checker
from ..flow import reaching_value

if TYPE_CHECKING:
    from ..context import FileContext


@checker(codes.TP701, nodes=(ast.Constant,), triggers=("nvidia-smi", "nvidia_smi", "pynvml"))
def nvidia_smi(node: ast.Constant, ctx: FileContext) -> None:
    if not isinstance(node.value, str) or "nvidia-smi" not in node.value or isinstance(ctx.parent, ast.Expr):
        return
    tool = ctx.target.smi
    ctx.report(node, codes.TP701, ADVICE,
               f"use {tool} on {ctx.target.title} (its options and output differ)" if tool
               else f"{ctx.target.title} has no nvidia-smi counterpart")


CUDA_BUILD_KEYWORDS = ("extra_cuda_cflags", "cuda_sources", "with_cuda")


@checker(codes.TP702, nodes=(ast.Call,), triggers=("cuda", "cpp_extension"))
def cpp_extension_build(node: ast.Call, ctx: FileContext) -> None:
    q = ctx.qualname(node.func) or ""
    if q not in ("torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"):
        return
    cuda = [k.arg for k in node.keywords if k.arg in CUDA_BUILD_KEYWORDS
            and not (isinstance(k.value, ast.Constant) and k.value.value in (False, None))]
    sources = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
               and n.value.endswith((".cu", ".cuh"))]
    if cuda == ["extra_cuda_cflags"] and not sources:
        return  # nvcc flags alone build nothing with CUDA: with C++ sources they are ignored (yolox's jit_ops)
    if cuda or sources:
        what = ", ".join(cuda + sources[:3])
        ctx.report(node, codes.TP702, ADVICE,
                   f"CUDA extension build ({what}): {ctx.target.kernel_advice}")


@checker(codes.TP704, nodes=(ast.ImportFrom,), triggers=("cuda",))
def cuda_star_import(node: ast.ImportFrom, ctx: FileContext) -> None:
    if node.level == 0 and node.module and (node.module == "torch.cuda" or node.module.startswith("torch.cuda.")) \
            and any(a.name == "*" for a in node.names):
        ctx.report(node, codes.TP704, UNSUPPORTED,
                   f"replace the star import by explicit names so they can be converted to {ctx.target.namespace}")


CAPABILITY_FIELDS = ("major", "minor", "multi_processor_count", "gcnArchName")


@checker(codes.TP705, nodes=(ast.Attribute,), triggers=CAPABILITY_FIELDS, needs=("get_device_properties",))
def device_properties_fields(node: ast.Attribute, ctx: FileContext) -> None:
    if node.attr not in CAPABILITY_FIELDS:
        return
    call: Optional[ast.expr] = node.value
    if isinstance(call, (ast.Name, ast.Attribute)):  # props = torch.cuda.get_device_properties(i); props.major
        call = reaching_value(ctx.parents(), call)
    if not isinstance(call, ast.Call) or ctx.qualname(call.func) != "torch.cuda.get_device_properties":
        return
    ctx.report(node, codes.TP705, ADVICE,
               f".{node.attr} is a CUDA architecture fact; on {ctx.target.title} it is empty or means something else")
