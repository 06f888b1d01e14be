"""Error-message text the code matches: CUDA's wording of an error becomes words every target's
message has, so recovery code (retry on out-of-memory) keeps working."""
from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from ...core import codes
from ..checkers import checker

if TYPE_CHECKING:
    from ..context import FileContext

# What each target's allocator says when it is out of memory ("NPU out of memory. Tried to allocate",
# torch_npu NPUCachingAllocator; "MLU out of memory", torch_mlu; "MUSA out of memory", torch_musa;
# "XPU out of memory", torch xpu; torchport sim says the same): all share the words after the device name.
CUDA_OOM = re.compile(r"CUDA (?=out of memory)")


@checker(codes.TP208, nodes=(ast.Compare,), triggers=("out of memory",))
def oom_message(node: ast.Compare, ctx: FileContext) -> None:
    if not all(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
        return
    literal = node.left
    if not (isinstance(literal, ast.Constant) and isinstance(literal.value, str) and CUDA_OOM.match(literal.value)):
        return
    start = ctx.span(literal)[0]
    text = ctx.text(literal)
    m = CUDA_OOM.search(text)
    if m is None or text[:m.start()].strip("rRuUbB") not in ("'", '"', "'''", '"""'):
        return  # a prefix or an escape before the words: leave it
    ctx.replace((start + m.start(), start + m.end()), "", codes.TP208,
                f"{ctx.target.title} words it differently: match the words all targets share",
                shown=(literal.value[:30], literal.value[5:35]))
