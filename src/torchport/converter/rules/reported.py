"""Things converted by hand: reported with advice, never rewritten."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional, Union

from ...core import codes
from ...core.finding import ADVICE, UNSUPPORTED
from ..checkers import Phase, checker
from ..flow import reaching_value
from .devices import other_device_type

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


@checker(codes.TP213, phase=Phase.FILE, needs=("cuda",))
def own_target_branches(tree: ast.Module, ctx: FileContext) -> None:
    """After the rules that rewrite (and TP210, which takes back what it keeps): a file that still has
    changes and names the target itself.  A converted file has none, so check does not say it again."""
    t = ctx.target
    if t.host or not t.device or not ctx.edits or t.device not in ctx.source:
        return
    first = _names_target(ctx, tree)
    if first is not None:
        ctx.report(first, codes.TP213, ADVICE,
                   f"this file already handles {t.title} itself, and convert rewrote its CUDA code too: a rewritten "
                   f"CUDA branch that comes first may now take the place of the project's own {t.device} branch; "
                   f"check that the path it meant for {t.device} is the one taken")


def _names_target(ctx: FileContext, tree: ast.Module) -> Optional[Union[ast.expr, ast.stmt]]:
    """The first node of the project's own code that names the target: a string that is its device type
    ("npu", "npu:0"; not a docstring), `torch.npu`, or an import of its package."""
    t = ctx.target
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    found: list[Union[ast.Constant, ast.Attribute, ast.Import, ast.ImportFrom]] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and id(n) not in docstrings and other_device_type(n.value) == t.device \
                or isinstance(n, ast.Attribute) and n.attr == t.device and ctx.qualname(n) == f"torch.{t.device}" \
                or isinstance(n, (ast.Import, ast.ImportFrom)) and t.register and any(
                    (a.name if isinstance(n, ast.Import) else n.module or "").split(".")[0] == t.register
                    for a in n.names):
            found.append(n)
    return min(found, key=lambda n: (n.lineno, n.col_offset), default=None)
