"""ONNX export stays on the CPU: the model and the dummy inputs given to `torch.onnx.export` (or `dynamo_export`)
are not moved to the target device.

Ascend's guide exports from the CPU ("模型保存与转换 / 导出ONNX模型": `device = torch.device("cpu")`, the
checkpoint loaded with `map_location='cpu'`, `model.eval()`, then `torch.onnx.export`).  Where a CUDA export script
puts them on the GPU, the device rules would move them to the target; this rule runs first (on the module node,
before the walk reaches anything else) and, for what feeds an export in the same function, turns the literal CUDA
forms into the CPU: `.cuda(...)` -> `.cpu()`, `.to("cuda")` / `.to(torch.device("cuda:0"))` -> `"cpu"`,
`device="cuda"` -> `device="cpu"`, in the export call itself and in the assignments and bare `name.cuda()` /
`name.to(...)` statements of the names it passes.  The strings it rewrote are marked handled, so the device rules
leave them.  A move by a device variable (`.to(device)`, `device=dev`) may be the training device too: then this
rule rewrites nothing of that export (model and inputs must stay together; the device rules convert them all to the
target, as anywhere else) and reports each such move.  A name bound only to a CPU literal (`device =
torch.device("cpu")`, the guide's own line) moves nothing and is left alone.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Optional

from ...core import codes
from ...core.finding import ADVICE
from ..checkers import checker
from ..flow import SCOPES, Parents
from .devices import PLAIN_DEVICE

if TYPE_CHECKING:
    from ..context import FileContext

EXPORTS = {"torch.onnx.export": (0, 1), "torch.onnx.dynamo_export": (0, None)}  # (model index, inputs index)
MESSAGE = "ONNX export runs on the CPU: the exported model and its example inputs stay there"
NEEDS = ("torch.onnx", "from torch import onnx")
# (kind, node): the node is a Call for 'cuda', a string Constant for 'string', any expression for 'variable'
Move = tuple[str, Any]


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function (or the module) without those of functions and classes defined in it."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (*SCOPES, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _fed(ctx: FileContext, call: ast.Call, spec: tuple[int, Optional[int]]) -> list[ast.expr]:
    """The expressions an export call gives the exporter: its model and its example inputs."""
    model_at, inputs_at = spec
    found: list[ast.expr] = []
    for at, keyword in ((model_at, "model"), (inputs_at, "args")):
        if at is not None and len(call.args) > at and not isinstance(call.args[at], ast.Starred):
            found.append(call.args[at])
        found += [k.value for k in call.keywords if k.arg == keyword]
    if inputs_at is None:  # dynamo_export(model, *inputs)
        found += [a.value if isinstance(a, ast.Starred) else a for a in call.args[model_at + 1:]]
    out: list[ast.expr] = []
    for expr in found:
        out += list(expr.elts) if isinstance(expr, (ast.Tuple, ast.List)) else [expr]
    return out


def _device(node: ast.expr) -> tuple[str, Optional[ast.expr]]:
    """('cuda', its string constant) for a literal CUDA device ("cuda", "cuda:0", torch.device("cuda")), ('other',
    None) for another literal ("cpu", torch.device("cpu"), None), ('variable', node) for anything else."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "device" \
            and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str) and PLAIN_DEVICE.match(node.value):
            return "string", node
        return "other", None
    return "variable", node


def _dtype_like(node: ast.expr) -> bool:
    """`torch.float16`, `x.dtype`, `dtype`: what `.to(...)` takes besides a device."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return name.startswith(("float", "int", "half", "double", "bfloat", "bool", "long", "uint", "complex")) \
        or "dtype" in name.lower()


def _moves(expr: ast.expr) -> list[Move]:
    """The device moves along an expression's call chain: [(kind, node)], kind 'cuda' (a `.cuda(...)` call),
    'string' (a CUDA device constant to make "cpu"), or 'variable' (a move by a device that is not a literal)."""
    moves: list[Move] = []
    node: Optional[ast.expr] = expr
    while isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "cuda":
            moves.append(("cuda", node))
        elif isinstance(func, ast.Attribute) and func.attr == "to" and node.args \
                and not isinstance(node.args[0], ast.Starred) and not _dtype_like(node.args[0]):
            kind, where = _device(node.args[0])
            if kind != "other":
                moves.append((kind, where))
        for k in node.keywords:
            if k.arg == "device":
                kind, where = _device(k.value)
                if kind != "other":
                    moves.append((kind, where))
        node = func.value if isinstance(func, ast.Attribute) else None
    return moves


def _bound_moves(scope: ast.AST, name: str, call: ast.Call) -> list[Move]:
    """The moves of `name` in its scope before the export call: in its assignments, and in bare statements
    `name.cuda()` / `name.to(...)` (a module moves in place)."""
    moves: list[Move] = []
    for node in _own_nodes(scope):
        if getattr(node, "lineno", 0) > call.lineno:
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                moves += _moves(node.value)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            root: ast.expr = node.value
            while isinstance(root, ast.Call) and isinstance(root.func, ast.Attribute):
                root = root.func.value
            if isinstance(root, ast.Name) and root.id == name:
                moves += _moves(node.value)
    return moves


@checker(codes.TP212, nodes=(ast.Module,), triggers=NEEDS)
def export_on_the_cpu(node: ast.Module, ctx: FileContext) -> None:
    r = codes.TP212
    calls = [(n, EXPORTS[q]) for n in ast.walk(node) if isinstance(n, ast.Call)
             for q in [ctx.qualname(n.func)] if q in EXPORTS]
    if not calls:
        return
    parents = ctx.parents()
    for call, spec in calls:
        scope = next((p for p in _ancestors(parents, call) if isinstance(p, SCOPES)), node)
        moves: list[Move] = []
        for expr in _fed(ctx, call, spec):
            moves += _moves(expr)
            if isinstance(expr, ast.Name):
                moves += _bound_moves(scope, expr.id, call)
        moves = list({id(n): (kind, n) for kind, n in moves}.values())  # a node reached twice, once
        moves = [(kind, n) for kind, n in moves if not (kind == "variable" and _cpu_name(n, scope, node))]
        if any(kind == "variable" for kind, _ in moves):
            for kind, n in moves:
                if kind == "variable":
                    ctx.report(n, r, ADVICE, "ONNX export runs on the CPU, but what the export gets is moved by a "
                                             "device variable here: nothing of this export is kept on the CPU (the "
                                             "device rules convert it); export a CPU model with CPU inputs "
                                             "(model.cpu(), dummy.cpu())")
            continue
        for kind, n in moves:
            if id(n) in ctx.handled:
                continue
            if kind == "string":
                ctx.handled.add(id(n))
                text = ctx.text(n)
                quote = text[-1]
                ctx.replace(n, f"{text[:text.index(quote)]}{quote}cpu{quote}", r, MESSAGE)
                continue
            start = ctx.span(n.func)[1] - len("cuda")
            if ctx.source[start - 1:start + 4] != ".cuda":  # `x .cuda()`, a line break: the method rule's
                continue
            ctx.handled.update(id(inner) for a in [*n.args, *n.keywords] for inner in ast.walk(a))
            ctx.handled.add(id(n))
            ctx.replace((start - 1, ctx.span(n)[1]), ".cpu()", r, MESSAGE)


def _cpu_name(expr: ast.expr, scope: ast.AST, module: ast.Module) -> bool:
    """Is `expr` a name every assignment of which, in the export's function and at module level, is a literal
    that is not CUDA (`device = torch.device("cpu")`, the guide's own line)?"""
    if not isinstance(expr, ast.Name):
        return False
    values = [n.value for s in {id(scope): scope, id(module): module}.values() for n in _own_nodes(s)
              if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == expr.id for t in n.targets)]
    return bool(values) and all(_device(v)[0] == "other" for v in values)


def _ancestors(parents: Parents, node: ast.AST) -> Iterator[ast.AST]:
    p = parents.get(id(node))
    while p is not None:
        yield p
        p = parents.get(id(p))
