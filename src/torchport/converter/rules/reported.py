"""Things converted by hand: reported with advice, never rewritten."""
from __future__ import annotations

import ast

from ...core.finding import ADVICE, UNSUPPORTED
from ..registry import rule


@rule("TP701", "nvidia-smi", "tooling", nodes=(ast.Constant,), triggers=("nvidia-smi", "nvidia_smi", "pynvml"),
      example=('out = os.popen("nvidia-smi -L").read()\n', 'out = os.popen("nvidia-smi -L").read()\n'))
def nvidia_smi(node, ctx):
    """`nvidia-smi` in strings and commands: reported with the target's tool (`npu-smi`, `cnmon`...).

    Its options and output format differ per vendor, so the command is not rewritten.
    """
    if not isinstance(node.value, str) or "nvidia-smi" not in node.value or isinstance(ctx.parent, ast.Expr):
        return
    tool = ctx.target.smi
    ctx.report(node, nvidia_smi.rule, ADVICE,
               f"use {tool} on {ctx.target.title} (its options and output differ)" if tool
               else f"{ctx.target.title} has no nvidia-smi counterpart")


CUDA_BUILD_KEYWORDS = ("extra_cuda_cflags", "cuda_sources", "with_cuda")


@rule("TP702", "cpp-extension-build", "extension", nodes=(ast.Call,), triggers=("cuda", "cpp_extension"),
      example=('mod = load(name="ops", sources=["ops.cpp", "ops.cu"], extra_cuda_cflags=["-O3"])\n',
               'mod = load(name="ops", sources=["ops.cpp", "ops.cu"], extra_cuda_cflags=["-O3"])\n'))
def cpp_extension_build(node, ctx):
    """JIT CUDA builds (`cpp_extension.load/load_inline` with `.cu` sources, `cuda_sources` or
    `with_cuda`): reported.

    Renaming `extra_cuda_cflags` would only produce a TypeError; the kernels need porting first
    (`torchport port-ext`).  nvcc flags alone with sources it cannot see (yolox's C++-only jit_ops) are
    not reported: without CUDA sources they are ignored (and `.cu` files of the project are found by
    `analyze` and `port-ext` anyway).
    """
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
        ctx.report(node, cpp_extension_build.rule, ADVICE,
                   f"CUDA extension build ({what}): port the kernels with `torchport port-ext --to {ctx.target.name}`")


@rule("TP704", "cuda-star-import", "device-api", nodes=(ast.ImportFrom,), triggers=("cuda",),
      example=("from torch.cuda import *\n", "from torch.cuda import *\n"))
def cuda_star_import(node, ctx):
    """`from torch.cuda import *`: the names it brings in cannot be followed; reported as unsupported."""
    if node.level == 0 and node.module and (node.module == "torch.cuda" or node.module.startswith("torch.cuda.")) \
            and any(a.name == "*" for a in node.names):
        ctx.report(node, cuda_star_import.rule, UNSUPPORTED,
                   f"replace the star import by explicit names so they can be converted to {ctx.target.namespace}")


CAPABILITY_FIELDS = ("major", "minor", "multi_processor_count", "gcnArchName")


@rule("TP705", "device-properties-fields", "capability", nodes=(ast.Attribute,), triggers=("get_device_properties",),
      example=("ok = torch.cuda.get_device_properties(0).major >= 8\n",
               "ok = torch.npu.get_device_properties(0).major >= 8\n"))
def device_properties_fields(node, ctx):
    """`get_device_properties(...).major` (and minor, SM count): CUDA architecture facts, reported."""
    call = node.value
    if node.attr not in CAPABILITY_FIELDS or not isinstance(call, ast.Call):
        return
    if ctx.qualname(call.func) != "torch.cuda.get_device_properties":
        return
    ctx.report(node, device_properties_fields.rule, ADVICE,
               f".{node.attr} is a CUDA architecture fact; on {ctx.target.title} it is empty or means something else")
