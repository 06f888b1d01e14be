"""Tensor and Module methods: `.cuda(...)` and `.is_cuda`.

The rules know these by their names alone: any `x.cuda()` is a tensor's or a module's.  A class of the file may
give its objects a `cuda`, `is_cuda` or `record_stream` of its own (ring-attention's rotary embedding has an
`is_cuda` property that asks its buffer); a read of it through `self`, `cls`, the class or an object the file
builds from it is left as it is (`own_attribute`), and reported once (TP501/TP502/TP504, advice): what the
class's own attribute does is converted where it is defined."""
from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any, Optional, cast

from ...core import codes
from ...core.finding import ADVICE
from ..checkers import checker
from ..flow import enclosing_class, is_self_attribute, sources_through_self
from .api import device_argument, device_guard, guard_statement, statement_alone

if TYPE_CHECKING:
    from ...core.codes import Code
    from ..context import FileContext, Span

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


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


def _file_classes(ctx: FileContext) -> dict[str, list[ast.ClassDef]]:
    """{name: [the file's classes of that name]}, found once per file."""
    memo: dict[str, Any] = ctx.memo
    if "classes" not in memo:
        found: dict[str, list[ast.ClassDef]] = {}
        for cls in ctx.nodes_by_type().get(ast.ClassDef, ()):
            found.setdefault(cls.name, []).append(cls)
        memo["classes"] = found
    return cast("dict[str, list[ast.ClassDef]]", memo["classes"])


def _binds(target: ast.expr, name: str, self_attribute: bool) -> bool:
    """Does an assignment target bind `name` (`name`, or `self.name` where `self_attribute`), alone or unpacked?"""
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_binds(t, name, self_attribute) for t in target.elts)
    if isinstance(target, ast.Starred):
        return _binds(target.value, name, self_attribute)
    if self_attribute:
        return is_self_attribute(target) and target.attr == name
    return isinstance(target, ast.Name) and target.id == name


def _targets(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return node.targets
    return [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []


Own = tuple[ast.ClassDef, ast.stmt]   # (a class of the file, where it gives its objects an attribute)


def _gives(ctx: FileContext, cls: ast.ClassDef, name: str, seen: set[int]) -> Optional[Own]:
    """Where `cls` or a base class of the file's gives its objects the attribute `name`: a def (a method or a
    property), a class attribute (`is_cuda = False`, `is_cuda: bool`), or `self.name = ...` in a method; None
    where neither does."""
    seen.add(id(cls))
    for stmt in cls.body:
        if isinstance(stmt, _DEFS) and stmt.name == name \
                or any(_binds(t, name, self_attribute=False) for t in _targets(stmt)):
            return cls, stmt
    for stmt in cls.body:
        if isinstance(stmt, _DEFS):
            for n in ast.walk(stmt):
                if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)) \
                        and any(_binds(t, name, self_attribute=True) for t in _targets(n)):
                    return cls, n
    for base in cls.bases:
        for other in _file_classes(ctx).get(base.id, ()) if isinstance(base, ast.Name) else ():
            found = _gives(ctx, other, name, seen) if id(other) not in seen else None
            if found is not None:
                return found
    return None


# a module's methods that return the module itself: `Rotary().cuda()` is a Rotary (and, by convention, what a
# class's own cuda() returns)
_RETURNS_SELF = frozenset({"cuda", "cpu", "to", "train", "eval", "half", "float", "double", "bfloat16",
                           "requires_grad_"})


def _classes_of(ctx: FileContext, leaf: ast.expr) -> list[ast.ClassDef]:
    """The file's classes whose object (or the class itself) `leaf` is: `self`/`cls` in a class, the class's
    name, a call of it (`Rotary()`); [] where it is none of these."""
    if isinstance(leaf, ast.Name) and leaf.id in ("self", "cls"):
        cls = enclosing_class(ctx.parents(), leaf)
        return [cls] if cls is not None else []
    if isinstance(leaf, ast.Call):
        leaf = leaf.func
    return _file_classes(ctx).get(leaf.id, []) if isinstance(leaf, ast.Name) else []


def _objects_of(ctx: FileContext, expr: ast.expr, seen: set[int]) -> Optional[list[ast.ClassDef]]:
    """The file's classes every value of `expr` is an object of (or is): _classes_of, through the methods that
    return their module (`Rotary().cuda()`) and through names and `self.<attr>` (flow.sources_through_self);
    None where a value may be anything else."""
    if id(expr) in seen:
        return []   # `held = held.cuda()`: the value read is one of the others
    seen.add(id(expr))
    direct = _classes_of(ctx, expr)
    if direct:
        return direct
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _RETURNS_SELF:
        return _objects_of(ctx, expr.func.value, seen)
    leaves = sources_through_self(ctx.parents(), expr)
    if not leaves or leaves == [expr]:
        return None
    found: list[ast.ClassDef] = []
    for leaf in leaves:
        classes = _objects_of(ctx, leaf, seen)
        if classes is None:
            return None
        found += classes
    return found


def own_attribute(ctx: FileContext, receiver: ast.expr, name: str) -> Optional[Own]:
    """(the class, where it gives it) when `<receiver>.<name>` is the attribute a class of the file gives its
    objects: the receiver is `self` or `cls` in that class, the class, an object built from it, or a name or
    `self.<attr>` every value of which is one (_objects_of); None where it may be anything else (a tensor, a
    module)."""
    classes = _objects_of(ctx, receiver, set())
    found: Optional[Own] = None
    gives: dict[tuple[int, str], Optional[Own]] = ctx.memo.setdefault("classes give", {})
    for cls in classes or ():
        key = (id(cls), name)
        if key not in gives:
            gives[key] = _gives(ctx, cls, name, set())
        given = gives[key]
        if given is None:
            return None
        found = found or given
    return found


def kept_own(ctx: FileContext, node: ast.Attribute, rule: Code, instead: str) -> bool:
    """Is `node` (`<receiver>.<name>`) a class's own attribute (own_attribute)?  Then it is left as it is, and
    that is said once per class and name, where the class gives it (`instead`: what the name is taken for)."""
    own = own_attribute(ctx, node.value, node.attr)
    if own is None:
        return False
    cls, where = own
    reported: set[int] = ctx.memo.setdefault("own attributes reported", set())
    if id(where) not in reported:
        reported.add(id(where))
        if isinstance(where, _DEFS):
            decorators = {getattr(d, "id", getattr(d, "attr", "")) for d in where.decorator_list}
            kind = "property" if decorators & {"property", "cached_property"} else "method"
        else:
            kind = "attribute"
        start, end = ctx.span(where)
        line_end = ctx.source.find("\n", start)
        ctx.report_span(start, end if line_end < 0 else min(end, line_end), rule, ADVICE,
                        f"kept: {cls.name}.{node.attr} is the class's own {kind}, not {instead}: its uses through "
                        "self, the class and its objects are not renamed; its own code is converted where it is "
                        "written")
    return True


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
    if kept_own(ctx, func, codes.TP501, "a tensor's or a module's .cuda()"):
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
            ctx.replace(node, f"{func.value.id}.to(device={device_argument(ctx, node.lineno)})", r,
                        "a storage's .to() takes the device as a keyword; any index is dropped")
        return
    if t.tensor_method:
        ctx.replace((attr_start, attr_start + 4), t.tensor_method, r, shown=(".cuda(", f".{t.tensor_method}("))
        return
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        ctx.report(node, r, ADVICE, f"not converted: unpacked arguments; use .to({device_argument(ctx, node.lineno)}, ...)")
        return
    device = device_argument(ctx, node.lineno)
    message = f"{t.title} has no .cuda(): moved with .to()"
    index = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "device"), None)
    if index is not None and t.device_expr:  # wrap the index, keeping any rewrite inside it
        start, end = ctx.span(index)
        ctx.insert(start, f"{ctx.torch_name(node.lineno)}.device({device}, ", r, quiet=True)
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
    if kept_own(ctx, node, codes.TP502, "a tensor's") or assigns_is_cuda(ctx, ctx.text(node.value)):
        return
    t = ctx.target
    start = ctx.span(node)[1] - len("is_cuda")
    if ctx.source[start:start + 7] != "is_cuda":
        return
    if t.is_attr:
        ctx.replace((start, start + 7), t.is_attr, codes.TP502, shown=(".is_cuda", f".{t.is_attr}"))
    else:
        device = device_argument(ctx, node.lineno)
        ctx.replace(node, f"({ctx.text(node.value)}.device.type == {device})", codes.TP502)


@checker(codes.TP503, nodes=(ast.Attribute,), triggers=("cuda",))
def cuda_method_reference(node: ast.Attribute, ctx: FileContext) -> None:
    if node.attr != "cuda" or not isinstance(node.ctx, ast.Load):
        return
    owner = ctx.qualname(node.value)
    if owner is not None and owner not in ("torch.Tensor", "torch.nn.Module"):
        return  # torch.cuda, torch.version.cuda...: names, not the method
    if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls") \
            or own_attribute(ctx, node.value, "cuda") is not None:
        return  # an attribute of the user's own class
    parent = ctx.parent
    passed = isinstance(parent, ast.Call) and parent.func is not node
    assigned = isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node
    if not (passed or assigned):
        return  # `if args.cuda:` is a flag of the user's, not the method
    ctx.report(node, codes.TP503, ADVICE,
               f"method reference not converted; {ctx.target.name} needs "
               + (f".{ctx.target.tensor_method}" if ctx.target.tensor_method else f".to({device_argument(ctx, node.lineno)})"))


@checker(codes.TP504, nodes=(ast.Call,), triggers=("record_stream",))
def record_stream_on_host(node: ast.Call, ctx: FileContext) -> None:
    func = node.func
    t = ctx.target
    if not (t.host or not t.device) or not (isinstance(func, ast.Attribute) and func.attr == "record_stream") \
            or kept_own(ctx, func, codes.TP504, "a tensor's"):
        return
    r = codes.TP504
    if not t.host:  # accelerator: the tensor is on the CPU only where there is no accelerator
        stmt = statement_alone(ctx, node)
        if stmt is not None and stmt.value is node:
            guard_statement(ctx, stmt, r, "a CPU tensor is not tied to a stream")
        else:
            ctx.report(node, r, ADVICE, f"fails on a CPU tensor (where there is no accelerator): guard it with "
                                        f"{device_guard(ctx, node.lineno)}")
        return
    holder = ctx.parents().get(id(node))
    if isinstance(holder, ast.Expr):
        ctx.replace(holder, "pass", r, "a CPU tensor's memory is not tied to a stream")
    else:  # a value (a comprehension, a conditional): record_stream returns None
        ctx.replace(node, "None", r, "a CPU tensor's memory is not tied to a stream (record_stream returns None)")
