"""Tensor and Module methods: `.cuda(...)` and `.is_cuda`."""
from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from ...core import codes
from ...core.finding import ADVICE
from ..checkers import checker
from .api import device_argument, device_guard, guard_statement, statement_alone

if TYPE_CHECKING:
    from ..context import FileContext, Span


# `.is_cuda = ...` or `.is_cuda: bool = ...` (not `==`), from where a receiver ends (a lookahead: one
# assignment may sit inside another's annotation; no blank before: a run of blanks is read once).  An
# annotation does not run on past another `is_cuda`: a line of `x.is_cuda:` without `=` would be reread
# from each.
_IS_CUDA_ASSIGNED = re.compile(r"(?<!\s)(?=\s*\.\s*is_cuda\s*(?::(?:(?!is_cuda)[^=\n])*)?=(?!=))")


def assigns_is_cuda(ctx: FileContext, receiver: str) -> bool:
    """Does the file assign `<receiver>.is_cuda` (in its text: a commented-out assignment counts too)?  The
    assignments are found once per file and looked up by the receiver's text (searching the file again for
    each use is quadratic)."""
    memo: dict[Any, Any] = ctx.memo.setdefault("is_cuda assigned", {})   # "ends": [offsets]; n: {receivers}
    if "ends" not in memo:
        memo["ends"] = [m.start() for m in _IS_CUDA_ASSIGNED.finditer(ctx.source)]  # where a receiver would end
    n = len(receiver)
    if n not in memo:  # the receivers of that length, each starting where no name or `.` goes on before it
        source = ctx.source
        memo[n] = {source[e - n:e] for e in memo["ends"]
                   if e >= n and (e == n or not (source[e - n - 1].isalnum() or source[e - n - 1] in "_."))}
    return receiver in memo[n]


def _is_module_ref(ctx: FileContext, node: ast.expr) -> bool:
    """Is `node.cuda` the module `torch.cuda` (handled by the name rules), not a method?"""
    q = ctx.qualname(node)
    return q is not None and ctx.api.resolve(q + ".cuda") is not None


@checker(codes.TP501, nodes=(ast.Call,), triggers=("cuda",))
def cuda_method(node: ast.Call, ctx: FileContext) -> None:
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr == "cuda") or _is_module_ref(ctx, func.value) \
            or id(node) in ctx.handled:  # kept on the CPU for an ONNX export (rules/onnx.py)
        return
    t = ctx.target
    r = codes.TP501
    attr_start = ctx.span(func)[1] - len("cuda")
    if ctx.source[attr_start:attr_start + 4] != "cuda":
        return
    if not t.tensor_method and isinstance(func.value, ast.Name) and "storage" in func.value.id.lower():
        # `map_location=lambda storage, loc: storage.cuda()`: a storage's .to() takes only keywords, and the
        # storage map_location is given is on the CPU already
        if t.host:
            ctx.replace(node, func.value.id, r, "the storage is on the CPU already")
        else:
            ctx.replace(node, f"{func.value.id}.to(device={device_argument(ctx)})", r,
                        "a storage's .to() takes the device as a keyword; any index is dropped")
        return
    if t.tensor_method:
        ctx.replace((attr_start, attr_start + 4), t.tensor_method, r, shown=(".cuda(", f".{t.tensor_method}("))
        return
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        ctx.report(node, r, ADVICE, f"not converted: unpacked arguments; use .to({device_argument(ctx)}, ...)")
        return
    device = device_argument(ctx)
    message = f"{t.title} has no .cuda(): moved with .to()"
    index = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "device"), None)
    if index is not None and t.device_expr:  # wrap the index, keeping any rewrite inside it
        start, end = ctx.span(index)
        ctx.insert(start, f"{ctx.torch_name()}.device({device}, ", r, quiet=True)
        ctx.insert(end, ")", r, quiet=True)
    elif index is not None:
        message += f"; device index {ctx.text(index)} dropped ({t.name} is addressed without one)"
        ctx.replace(index, device, r, quiet=True)
    if node.args:
        if len(node.args) > 1:  # Tensor.cuda(device, non_blocking): .to's 2nd positional is dtype
            ctx.insert(ctx.span(node.args[1])[0], "non_blocking=", r, quiet=True)
    else:
        kw = next((k for k in node.keywords if k.arg == "device"), None)
        if kw is None:
            ctx.add_argument(node, device, r, quiet=True, first=True)
    ctx.replace((attr_start, attr_start + 4), "to", r, quiet=True)
    ctx.note_change(_tail(ctx, node, attr_start), r, message)


def _tail(ctx: FileContext, node: ast.Call, attr_start: int) -> Span:
    """Span of `.cuda(...)`, without the receiver."""
    return (attr_start - 1, ctx.span(node)[1])


@checker(codes.TP502, nodes=(ast.Attribute,), triggers=("is_cuda",))
def is_cuda(node: ast.Attribute, ctx: FileContext) -> None:
    if node.attr != "is_cuda" or not isinstance(node.ctx, ast.Load):
        return
    if ctx.target.host:
        if isinstance(ctx.parent, ast.Assert):
            ctx.report(node, codes.TP502, ADVICE, f"asserts a CUDA tensor: on {ctx.target.title} this assertion fails")
        return
    if assigns_is_cuda(ctx, ctx.text(node.value)):
        return
    t = ctx.target
    start = ctx.span(node)[1] - len("is_cuda")
    if ctx.source[start:start + 7] != "is_cuda":
        return
    if t.is_attr:
        ctx.replace((start, start + 7), t.is_attr, codes.TP502, shown=(".is_cuda", f".{t.is_attr}"))
    else:
        device = device_argument(ctx)
        ctx.replace(node, f"({ctx.text(node.value)}.device.type == {device})", codes.TP502)


@checker(codes.TP503, nodes=(ast.Attribute,), triggers=("cuda",))
def cuda_method_reference(node: ast.Attribute, ctx: FileContext) -> None:
    if node.attr != "cuda" or not isinstance(node.ctx, ast.Load):
        return
    owner = ctx.qualname(node.value)
    if owner is not None and owner not in ("torch.Tensor", "torch.nn.Module"):
        return  # torch.cuda, torch.version.cuda...: names, not the method
    if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
        return  # an attribute of the user's own class
    parent = ctx.parent
    passed = isinstance(parent, ast.Call) and parent.func is not node
    assigned = isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node
    if not (passed or assigned):
        return  # `if args.cuda:` is a flag of the user's, not the method
    ctx.report(node, codes.TP503, ADVICE,
               f"method reference not converted; {ctx.target.name} needs "
               + (f".{ctx.target.tensor_method}" if ctx.target.tensor_method else f".to({device_argument(ctx)})"))


@checker(codes.TP504, nodes=(ast.Call,), triggers=("record_stream",))
def record_stream_on_host(node: ast.Call, ctx: FileContext) -> None:
    func = node.func
    t = ctx.target
    if not (t.host or not t.device) or not (isinstance(func, ast.Attribute) and func.attr == "record_stream"):
        return
    r = codes.TP504
    if not t.host:  # accelerator: the tensor is on the CPU only where there is no accelerator
        stmt = statement_alone(ctx, node)
        if stmt is not None and stmt.value is node:
            guard_statement(ctx, stmt, r, "a CPU tensor is not tied to a stream")
        else:
            ctx.report(node, r, ADVICE, f"fails on a CPU tensor (where there is no accelerator): guard it with "
                                        f"{device_guard(ctx)}")
        return
    holder = ctx.parents().get(id(node))
    if isinstance(holder, ast.Expr):
        ctx.replace(holder, "pass", r, "a CPU tensor's memory is not tied to a stream")
    else:  # a value (a comprehension, a conditional): record_stream returns None
        ctx.replace(node, "None", r, "a CPU tensor's memory is not tied to a stream (record_stream returns None)")
