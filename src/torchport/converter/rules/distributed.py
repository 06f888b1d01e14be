"""Collective backends: "nccl" -> the target's backend, in backend positions only."""
from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any, Optional, cast

from ...core import codes
from ...core.finding import ADVICE
from ..checkers import checker
from ..flow import ScopeNode, lookups, loop_slot, reads, scope_of, sources, use_site
from .api import guard_value
from .devices import last_name, option_name, param_defaults

if TYPE_CHECKING:
    from ...core.codes import Code
    from ..context import FileContext

BACKEND_NAME = re.compile(r"(?:^|_)backend$", re.IGNORECASE)
# callee -> positional index of its backend argument (looked up with a qualname: None for no plain name)
BACKEND_CALLS: dict[Optional[str], int] = {
    "torch.distributed.init_process_group": 0,
    "torch.distributed.new_group": 2,
    "torch.distributed.new_subgroups": 3,
    "torch.distributed.is_backend_available": 0,
}
_PAIR = re.compile(r"\s*(\w+)\s*:\s*(\w+)\s*")
# the collective backends torch.distributed knows (any case: PyTorch lowercases the name)
BACKENDS = {"nccl", "gloo", "mpi", "ucc", "hccl", "cncl", "mccl", "xccl"}


def backend_text(ctx: FileContext, value: str) -> Optional[str]:
    """New source text for a backend string literal, or None when it is not a CUDA backend."""
    t = ctx.target
    if value.lower() == "nccl":
        if t.backend_expr:
            return t.backend_expr.format(torch=ctx.torch_name())
        return repr(t.backend).replace("'", '"')
    pairs = value.split(",")
    if len(pairs) > 1 and all(_PAIR.fullmatch(p) for p in pairs) and "cuda:nccl" in value.replace(" ", "").lower():
        if not t.device:
            return None
        out: dict[str, str] = {}   # device -> backend
        for p in pairs:
            dev, backend = _PAIR.fullmatch(p).groups()  # type: ignore[union-attr]  # every pair matched above
            if (dev, backend.lower()) == ("cuda", "nccl"):
                dev, backend = t.device, t.backend
            out.setdefault(dev, backend)
        return repr(",".join(f"{d}:{b}" for d, b in out.items())).replace("'", '"')
    return None


def rewrite_backend(ctx: FileContext, node: Optional[ast.expr], r: Code) -> bool:
    """Rewrite the "nccl" strings an expression can take its value from (see flow.sources)."""
    done = False
    for leaf in sources(ctx.parents(), node):
        done = _rewrite_backend_leaf(ctx, leaf, r) or done
    return done


def _rewrite_backend_leaf(ctx: FileContext, node: ast.expr, r: Code) -> bool:
    if id(node) in ctx.handled or not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
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


def backend_choice(node: ast.IfExp) -> bool:
    """`"nccl" if cond else "gloo"`: both branches backend names."""
    return all(isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value.lower() in BACKENDS
               for e in (node.body, node.orelse))


def backend_slot(ctx: FileContext, expr: ast.AST) -> bool:
    """Is `expr`'s value used as a collective backend (through flow.use_site, and loops over it)?"""
    parents = ctx.parents()
    child, parent = use_site(parents, expr)
    looped = loop_slot(parents, child, parent, lambda use: "backend" if backend_slot(ctx, use) else "", ("backend",))
    if looped is not None:
        return bool(looped)
    if isinstance(parent, ast.keyword):
        return bool(parent.arg and BACKEND_NAME.search(parent.arg))
    if isinstance(parent, ast.Call):
        pos = BACKEND_CALLS.get(ctx.qualname(parent.func))
        return pos is not None and len(parent.args) > pos and parent.args[pos] is child
    if isinstance(parent, ast.Compare):
        return any(_is_backend_valued(o) for o in (parent.left, *parent.comparators) if o is not child)
    if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is child:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        return any(BACKEND_NAME.search(last_name(t)) for t in targets)
    return False


def _is_backend_valued(node: ast.expr) -> bool:
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name == "get_backend"
    return bool(BACKEND_NAME.search(last_name(node)))


@checker(codes.TP301, nodes=(ast.Call, ast.Compare, ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef, ast.Dict,
             ast.IfExp, ast.For), triggers=("nccl",))
def backend_strings(  # noqa: C901
        node: ast.Call | ast.Compare | ast.Assign | ast.AnnAssign | ast.FunctionDef | ast.AsyncFunctionDef | ast.Dict | ast.IfExp | ast.For, ctx: FileContext) -> None:
    r = codes.TP301
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
            other = right if _is_backend_valued(left) else left if _is_backend_valued(right) else None
            if other is not None and ctx.target.host:  # `get_backend() == "nccl"` stays: false on the host
                ctx.handled.update(id(n) for n in ast.walk(other))
            elif other is not None:
                rewrite_backend(ctx, other, r)
    elif isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and BACKEND_NAME.search(key.value):
                rewrite_backend(ctx, value, r)
        if any(backend_slot(ctx, lookup) for lookup, _ in lookups(ctx.parents(), node)):
            for value in node.values:  # a map whose lookups are backends: {"cuda": "nccl"}.get(kind, "gloo")
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
    elif isinstance(node, ast.IfExp):
        if backend_choice(node):
            rewrite_backend(ctx, node, r)
    elif isinstance(node, ast.For):
        if isinstance(node.iter, (ast.Tuple, ast.List, ast.Set)) and backend_slot(ctx, node.iter):
            rewrite_backend(ctx, node.iter, r)
    else:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is None:
            return
        if any(BACKEND_NAME.search(last_name(t)) for t in targets):
            rewrite_backend(ctx, node.value, r)
            return
        scope = cast(ScopeNode, scope_of(ctx.parents(), node))   # a statement is inside a module at least
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if any(backend_slot(ctx, use) for name in names for use in reads(scope, name)):
            rewrite_backend(ctx, node.value, r)


@checker(codes.TP302, nodes=(ast.Call, ast.Attribute), triggers=("nccl",))
def nccl_availability(node: ast.Call | ast.Attribute, ctx: FileContext) -> None:
    r = codes.TP302
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
        ctx.replace(node, cast(str, backend_text(ctx, "nccl")), r)   # "nccl" always has its text


@checker(codes.TP303, nodes=(ast.Constant,), triggers=("nccl",))
def nccl_other(node: ast.Constant, ctx: FileContext) -> None:
    if id(node) in ctx.handled or not isinstance(node.value, str) or node.value.lower() != "nccl" \
            or isinstance(ctx.parent, ast.Expr):
        return
    ctx.report(node, codes.TP303, ADVICE,
               f'"nccl" outside a recognised backend position: check whether it should be {backend_text(ctx, "nccl")}')


DDP = {"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel"}


@checker(codes.TP304, nodes=(ast.Call,), triggers=("device_ids", "output_device", "distributeddataparallel"))
def ddp_device_ids(node: ast.Call, ctx: FileContext) -> None:
    t = ctx.target
    if not (t.host or not t.device) or ctx.qualname(node.func) not in DDP:
        return
    given = [*((n, a) for n, a in zip(("module", "device_ids", "output_device"), node.args)),
             *((k.arg, k.value) for k in node.keywords if k.arg)]
    for k in node.keywords:   # DistributedDataParallel(model, **kwargs): the entries that dict is given
        if k.arg is None and isinstance(k.value, ast.Name):
            given += _dict_entries(ctx, node, k.value.id)
    for name, value in given:
        if name not in ("device_ids", "output_device") or isinstance(value, ast.Constant) and value.value is None \
                or isinstance(value, ast.IfExp) and "is_available" in ctx.text(value.test):
            continue  # nothing to take away, or converted already
        if t.host:
            ctx.replace(value, "None", codes.TP304, "a CPU module takes no device ids")
        else:
            guard_value(ctx, ctx.span(value), "None", codes.TP304)
            ctx.note_change(value, codes.TP304, "a CPU module (no accelerator) takes no device ids")


def _dict_entries(ctx: FileContext, use: ast.Call, name: str) -> list[tuple[Any, ast.expr]]:
    """[(key, value)] given to the dict `name` in the function (or module) of `use`, before it: `name["k"] = v`,
    `name = dict(k=v)` / `{"k": v}`, `name.update(k=v)` / `name.update({"k": v})`, `name.setdefault("k", v)`."""
    scope = cast(ScopeNode, scope_of(ctx.parents(), use))   # an expression is inside a module at least
    entries: list[tuple[Any, ast.expr]] = []   # (key: a string, or a setdefault's constant, value)

    def literal(d: ast.expr) -> None:
        if isinstance(d, ast.Dict):
            entries.extend((k.value, v) for k, v in zip(d.keys, d.values)
                           if isinstance(k, ast.Constant) and isinstance(k.value, str))
        elif isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "dict":
            entries.extend((k.arg, k.value) for k in d.keywords if k.arg)

    for n in ast.walk(scope):
        if getattr(n, "lineno", 0) > use.lineno or scope_of(ctx.parents(), n) is not scope:
            continue
        if isinstance(n, ast.Assign):
            for target in n.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    literal(n.value)
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                        and target.value.id == name and isinstance(target.slice, ast.Constant) \
                        and isinstance(target.slice.value, str):
                    entries.append((target.slice.value, n.value))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                and n.func.value.id == name:
            if n.func.attr == "update":
                entries.extend((k.arg, k.value) for k in n.keywords if k.arg)
                if n.args:
                    literal(n.args[0])
            elif n.func.attr == "setdefault" and len(n.args) == 2 and isinstance(n.args[0], ast.Constant):
                entries.append((n.args[0].value, n.args[1]))
    return entries
