"""Environment variables: CUDA_VISIBLE_DEVICES & co. -> the target's variables, in env positions."""
from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Optional, cast

from ...core import codes
from ...core.finding import ADVICE
from ..checkers import checker
from .devices import last_name

if TYPE_CHECKING:
    from typing import TypeGuard  # Python 3.10+

    from ...core.codes import Code
    from ..context import FileContext

ENV_NAME = re.compile(r"(?:CUDA_[A-Z0-9_]+|(?:TORCH_)?NCCL_[A-Z0-9_]+|NVIDIA_VISIBLE_DEVICES|"
                      r"PYTORCH_(?:NO_)?CUDA_[A-Z0-9_]+)\Z")
ENV_IN_TEXT = re.compile(r"\b(CUDA_VISIBLE_DEVICES|(?:TORCH_)?NCCL_[A-Z0-9_]+)\b")
ENV_HOLDER = re.compile(r"^(?:environ|environment|env|envs)$|_env$|^env_", re.IGNORECASE)
ENV_FUNCS = {"os.getenv", "os.putenv", "os.unsetenv", "os.environ.get", "os.environ.setdefault", "os.environ.pop"}


def _is_env_holder(ctx: FileContext, node: Optional[ast.expr]) -> bool:
    return ctx.qualname(node) == "os.environ" or bool(ENV_HOLDER.search(last_name(node)))


def env_decision(ctx: FileContext, name: str) -> tuple[Optional[str], str]:
    """(new name or None, message) for a CUDA/NCCL variable on this target."""
    t = ctx.target
    new = t.env.get(name)
    if new:
        return new, ""
    if name in t.env or name == "CUDA_VISIBLE_DEVICES":
        return None, f"{t.title} has no counterpart of {name}"
    return None, f"{name} has no documented counterpart on {t.title}; review it by hand"


def _rewrite_name(ctx: FileContext, node: ast.Constant, r: Code) -> None:
    if id(node) in ctx.handled:
        return
    ctx.handled.add(id(node))
    value = cast(str, node.value)   # an _env_constant
    new, message = env_decision(ctx, value)
    text = ctx.text(node)
    if new and text[:1] in "'\"" and text[1:-1] == value:
        ctx.replace(node, text[0] + new + text[-1], r, message)
    else:
        ctx.report(node, r, ADVICE, message or "not converted: unusual string literal")


def _env_constant(node: Optional[ast.expr]) -> TypeGuard[ast.Constant]:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(ENV_NAME.match(node.value))


@checker(codes.TP401, nodes=(ast.Subscript, ast.Call, ast.Compare, ast.Dict), triggers=("cuda_", "nccl_", "nvidia_visible"))
def env_vars(node: ast.Subscript | ast.Call | ast.Compare | ast.Dict, ctx: FileContext) -> None:
    r = codes.TP401
    if isinstance(node, ast.Subscript):
        if _env_constant(node.slice) and _is_env_holder(ctx, node.value):
            _rewrite_name(ctx, node.slice, r)
    elif isinstance(node, ast.Call):
        func = node.func
        q = ctx.qualname(func)
        method, holder = (func.attr, func.value) if isinstance(func, ast.Attribute) else ("", None)
        if q in ENV_FUNCS or (method in ("get", "setdefault", "pop") and _is_env_holder(ctx, holder)):
            if node.args and _env_constant(node.args[0]):
                _rewrite_name(ctx, node.args[0], r)
        if method == "update" and _is_env_holder(ctx, holder):
            for k in node.keywords:
                if k.arg and ENV_NAME.match(k.arg):
                    new, message = env_decision(ctx, k.arg)
                    start = ctx.span(k)[0]
                    if new:
                        ctx.replace((start, start + len(k.arg)), new, r, message)
                    else:
                        ctx.report(k, r, ADVICE, message)
    elif isinstance(node, ast.Compare):
        if _env_constant(node.left) and isinstance(node.ops[0], (ast.In, ast.NotIn)) \
                and _is_env_holder(ctx, node.comparators[0]):
            _rewrite_name(ctx, node.left, r)
    else:
        for key in node.keys:
            if _env_constant(key):
                _rewrite_name(ctx, key, r)


@checker(codes.TP402, nodes=(ast.Constant,), triggers=("cuda_visible", "nccl_"))
def env_vars_elsewhere(node: ast.Constant, ctx: FileContext) -> None:
    if id(node) in ctx.handled or not isinstance(node.value, str) or isinstance(ctx.parent, ast.Expr):
        return
    m = ENV_IN_TEXT.search(node.value)
    if m:
        new, message = env_decision(ctx, m.group(1))
        ctx.report(node, codes.TP402, ADVICE,
                   f"{m.group(1)} in a string: use {new} on {ctx.target.name}" if new else message)
