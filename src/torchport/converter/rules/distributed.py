"""Collective backends: "nccl" -> the target's backend, in backend positions only."""
from __future__ import annotations

import ast
import re

from ...core.finding import ADVICE
from ..registry import rule
from .devices import last_name, option_name, param_defaults

BACKEND_NAME = re.compile(r"(?:^|_)backend$", re.IGNORECASE)
BACKEND_CALLS = {  # callee -> positional index of its backend argument
    "torch.distributed.init_process_group": 0,
    "torch.distributed.new_group": 2,
    "torch.distributed.new_subgroups": 3,
}
_PAIR = re.compile(r"\s*(\w+)\s*:\s*(\w+)\s*")


def backend_text(ctx, value: str):
    """New source text for a backend string literal, or None when it is not a CUDA backend."""
    t = ctx.target
    if value == "nccl":
        if t.backend_expr:
            return t.backend_expr.format(torch=ctx.torch_name())
        return repr(t.backend).replace("'", '"')
    pairs = value.split(",")
    if len(pairs) > 1 and all(_PAIR.fullmatch(p) for p in pairs) and "cuda:nccl" in value.replace(" ", ""):
        if not t.device:
            return None
        out = {}
        for p in pairs:
            dev, backend = _PAIR.fullmatch(p).groups()
            if (dev, backend) == ("cuda", "nccl"):
                dev, backend = t.device, t.backend
            out.setdefault(dev, backend)
        return repr(",".join(f"{d}:{b}" for d, b in out.items())).replace("'", '"')
    return None


def rewrite_backend(ctx, node, r) -> bool:
    if node is None or id(node) in ctx.handled:
        return False
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any([rewrite_backend(ctx, e, r) for e in node.elts])
    if isinstance(node, ast.IfExp):
        a, b = rewrite_backend(ctx, node.body, r), rewrite_backend(ctx, node.orelse, r)
        return a or b
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return False
    new = backend_text(ctx, node.value)
    if new is None:
        return False
    ctx.handled.add(id(node))
    text = ctx.text(node)
    if text[:1] in "'\"" and not new.startswith(("'", '"')):
        ctx.replace(node, new, r)
    elif text[:1] in "'\"":
        ctx.replace(node, text[0] + new[1:-1] + text[-1], r)
    else:
        return False  # prefixed or concatenated literal: leave it
    return True


def _is_backend_valued(node) -> bool:
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name == "get_backend"
    return bool(BACKEND_NAME.search(last_name(node)))


@rule("TP301", "backend-strings", "distributed",
      nodes=(ast.Call, ast.Compare, ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef, ast.Dict),
      triggers=("nccl",),
      example=('dist.init_process_group("nccl", init_method=url)\nif dist.get_backend() == "nccl":\n    pass\n',
               'dist.init_process_group("hccl", init_method=url)\nif dist.get_backend() == "hccl":\n    pass\n'))
def backend_strings(node, ctx):
    """"nccl" as a collective backend -> the target's backend ("hccl", "cncl", "mccl", "xccl", "gloo").

    In `init_process_group`/`new_group` (positional or `backend=`), any `backend=`-like
    keyword, defaults of `backend` parameters, assignments to backend variables,
    argparse options named like a backend (`--dist-backend`, default and choices),
    comparisons with `get_backend()` or backend variables, and combined specs
    (`"cpu:gloo,cuda:nccl"`).  Any other "nccl" text is left alone.
    """
    r = backend_strings.rule
    if isinstance(node, ast.Call):
        q = ctx.qualname(node.func)
        pos = BACKEND_CALLS.get(q) if q else None
        if pos is not None and len(node.args) > pos:
            rewrite_backend(ctx, node.args[pos], r)
        for k in node.keywords:
            if k.arg and BACKEND_NAME.search(k.arg):
                rewrite_backend(ctx, k.value, r)
        if option_name(node) and BACKEND_NAME.search(option_name(node)):
            for k in node.keywords:
                if k.arg in ("default", "choices", "const"):
                    rewrite_backend(ctx, k.value, r)
    elif isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        for left, right in zip(operands, operands[1:]):
            if _is_backend_valued(left):
                rewrite_backend(ctx, right, r)
            elif _is_backend_valued(right):
                rewrite_backend(ctx, left, r)
    elif isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and BACKEND_NAME.search(key.value):
                rewrite_backend(ctx, value, r)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for arg, default in param_defaults(node):
            if not BACKEND_NAME.search(arg.arg):
                continue
            if ctx.target.backend_expr and isinstance(default, ast.Constant) and default.value == "nccl":
                ctx.handled.add(id(default))
                ctx.report(default, r, ADVICE, "default left as is: an expression default runs when the "
                           "module is imported; use None and choose the backend inside the function")
            else:
                rewrite_backend(ctx, default, r)
    else:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is not None and any(BACKEND_NAME.search(last_name(t)) for t in targets):
            rewrite_backend(ctx, node.value, r)


@rule("TP302", "nccl-availability", "distributed", nodes=(ast.Call, ast.Attribute), triggers=("nccl",),
      example=("ok = dist.is_nccl_available()\nb = dist.Backend.NCCL\n",
               'ok = dist.is_backend_available("hccl")\nb = "hccl"\n'))
def nccl_availability(node, ctx):
    """`is_nccl_available()` -> `is_backend_available("<backend>")`; `Backend.NCCL` -> the backend string."""
    r = nccl_availability.rule
    if isinstance(node, ast.Call):
        q = ctx.qualname(node.func)
        if q == "torch.distributed.is_nccl_available" and not node.args and not node.keywords:
            backend = backend_text(ctx, "nccl")
            head = ctx.text(node.func)
            new_head = head[: -len("is_nccl_available")] + "is_backend_available" \
                if head.endswith("is_nccl_available") else ctx.spell("torch.distributed.is_backend_available")
            ctx.replace(node, f"{new_head}({backend})", r)
        return
    if node.attr == "NCCL" and ctx.qualname(node) in ("torch.distributed.Backend.NCCL",
                                                      "torch.distributed.distributed_c10d.Backend.NCCL"):
        ctx.replace(node, backend_text(ctx, "nccl"), r)


@rule("TP303", "nccl-other", "distributed", nodes=(ast.Constant,), triggers=("nccl",))
def nccl_other(node, ctx):
    """A bare "nccl" string outside a backend position: reported for review, not changed."""
    if id(node) in ctx.handled or node.value != "nccl" or isinstance(ctx.parent, ast.Expr):
        return
    ctx.report(node, nccl_other.rule, ADVICE,
               f'"nccl" outside a recognised backend position: check whether it should be {backend_text(ctx, "nccl")}')
