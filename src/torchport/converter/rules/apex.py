"""apex.amp -> torch.amp: a training loop written for NVIDIA Apex's mixed precision, converted.

Apex's `amp` is one module-level object: `amp.initialize(model, optimizer, opt_level=...)` patches torch
so that every forward afterwards runs in half precision, `with amp.scale_loss(loss, optimizer) as s:
s.backward()` scales the loss, and the next `optimizer.step()` unscales and skips steps whose gradients
overflowed.  torch.amp says the same with a GradScaler and an autocast region:

    amp_scaler = torch.amp.GradScaler(<device>, enabled=False)               # at module level
    amp_scaler = torch.amp.GradScaler(<device>, enabled=<opt_level != "O0">)   # at amp.initialize
    with torch.autocast(<device>, enabled=amp_scaler.is_enabled()):           # the forward and the loss
        output = model(x)
        loss = criterion(output, y)
    amp_scaler.scale(loss).backward()                                          # amp.scale_loss
    amp_scaler.step(optimizer)                                                 # optimizer.step()
    amp_scaler.update()

`amp.state_dict()` / `amp.load_state_dict(s)` become the scaler's; `amp.master_params(optimizer)` becomes the
optimizer's parameters, and a `clip_grad_norm_` of them gets `amp_scaler.unscale_(optimizer)` before it.  The
module-level scaler is disabled until `amp.initialize` makes the real one (declared `global` there), so code that
used amp only when a flag said so (`if args.fp16:`) runs unchanged without it.  A file is converted only when every
use of `amp` in it is one of these forms; otherwise nothing changes and the uses that stop it are named
(TP121), as are what torch.amp does differently (O2/O3 master weights, a static loss scale).

apex.optimizers' fused optimizers become torch.optim's (or the target's own fused class) where kb/apex.toml says
which class and which arguments mean the same (TP122); the others are reported with the steps to take.  The
import names both conversions leave unused go last, in one edit per import statement.
"""
from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any, Optional, Union, cast

from ...core import codes
from ...core.finding import ADVICE
from ...kb import bundled_data
from ..checkers import Phase, checker
from .imports import top_statement

if TYPE_CHECKING:
    from ...core.codes import Code
    from ..context import Binding, FileContext, ImportStmt, Located

SCALER = "amp_scaler"
_NEVER_ENABLED = (
    "mixed precision stays off in this file: it has no amp.initialize, so the module-level {scaler} convert made "
    "here stays disabled (enabled=False), and the torch.autocast regions with it.  apex's amp was one object for "
    "the whole process, enabled by the amp.initialize another file calls; converted, that call makes its own "
    "file's scaler, not this one.  Where amp is initialized, enable this one too (`<this module>.{scaler} = "
    "{enabled}`), or keep training in full precision")
FORWARD = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)
NOT_FORWARD = re.compile(r"\.(?:zero_grad|step|backward)\s*\(")

Chain = tuple[ast.AST, ...]   # a node's parents, outermost first
Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]


def _amp_binding(ctx: FileContext) -> Optional[Binding]:
    """The import binding of apex.amp (`from apex import amp`, `import apex.amp as amp`), or None."""
    found = [b for b in ctx.runtime_bindings() if b.qualname == "apex.amp" and b.kind in ("from", "module")]
    return found[0] if len(found) == 1 and not found[0].ambiguous else None


def _uses(tree: ast.AST, local: str) -> list[tuple[ast.Name, Chain]]:
    """[(Name node, parent chain)] of every read of `local` in the file."""
    out = []
    stack: list[tuple[ast.AST, Chain]] = [(tree, ())]
    while stack:
        node, chain = stack.pop()
        if isinstance(node, ast.Name) and node.id == local:
            out.append((node, chain))
        for child in ast.iter_child_nodes(node):
            stack.append((child, (*chain, node)))
    return out


def _function_of(chain: Chain) -> Optional[Function]:
    return next((n for n in reversed(chain) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)


class Plan:
    def __init__(self) -> None:
        # (Assign statement, Call, enclosing function or None)
        self.initialize: list[tuple[ast.Assign, ast.Call, Optional[Function]]] = []
        # (With statement, loss expr, optimizer expr, enclosing function, chain)
        self.scale_loss: list[tuple[ast.With, ast.expr, ast.expr, Optional[Function], Chain]] = []
        self.state: list[tuple[ast.Call, str]] = []       # (Call, method name)
        self.master: list[tuple[ast.Call, Chain]] = []    # (Call, chain): amp.master_params(optimizer)
        self.refusals: list[tuple[Located, str]] = []     # (node, why)


def _plan(tree: ast.AST, local: str) -> Plan:
    plan = Plan()
    for name, chain in _uses(tree, local):
        parent = chain[-1] if chain else None
        if isinstance(name.ctx, ast.Store) or not isinstance(parent, ast.Attribute):
            if isinstance(parent, (ast.Import, ast.ImportFrom, ast.alias)):
                continue
            plan.refusals.append((name, f"`{local}` used as a value"))
            continue
        call = chain[-2] if len(chain) > 1 else None
        attr = parent.attr
        if not isinstance(call, ast.Call) or call.func is not parent:
            plan.refusals.append((parent, f"`{local}.{attr}` not called"))
        elif attr == "initialize":
            stmt = chain[-3] if len(chain) > 2 else None
            if isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1:
                plan.initialize.append((stmt, call, _function_of(chain)))
            else:
                plan.refusals.append((call, f"`{local}.initialize` whose result is not assigned"))
        elif attr == "scale_loss":
            item = chain[-3] if len(chain) > 2 else None
            stmt = chain[-4] if len(chain) > 3 else None
            ok = isinstance(item, ast.withitem) and isinstance(stmt, ast.With) and len(stmt.items) == 1 \
                and isinstance(item.optional_vars, ast.Name) and len(call.args) >= 2 and not call.keywords \
                and all(_backward_of(s, item.optional_vars.id) for s in stmt.body)
            if ok:
                plan.scale_loss.append((cast(ast.With, stmt), call.args[0], call.args[1], _function_of(chain),  # ok
                                        chain[:-4]))
            else:
                plan.refusals.append((call, f"`with {local}.scale_loss(loss, optimizer) as s:` whose body is not "
                                            "only `s.backward(...)`"))
        elif attr in ("state_dict", "load_state_dict"):
            plan.state.append((call, attr))
        elif attr == "master_params" and len(call.args) == 1 and not call.keywords:
            plan.master.append((call, chain[:-2]))
        else:
            plan.refusals.append((call, f"`{local}.{attr}` (no torch.amp counterpart torchport writes)"))
    return plan


def _backward_of(stmt: ast.AST, name: str) -> bool:
    """`<name>.backward(...)` as a statement."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
        and isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr == "backward" \
        and isinstance(stmt.value.func.value, ast.Name) and stmt.value.func.value.id == name


def _keyword(call: ast.Call, name: str) -> Optional[ast.expr]:
    return next((k.value for k in call.keywords if k.arg == name), None)


@checker(codes.TP120, codes.TP121, phase=Phase.FILE, triggers=("apex",), needs=("apex",))
def apex_amp(tree: ast.Module, ctx: FileContext) -> None:
    binding = _amp_binding(ctx)
    if binding is None or any(n == "apex" or n.startswith("apex.amp") for n in ctx.api.user_names):
        return  # the user's rule files say what apex.amp becomes
    plan = _plan(tree, binding.local)
    if not (plan.initialize or plan.scale_loss or plan.state or plan.master):
        return
    stmt: ast.stmt   # each loop's own kind of statement
    for stmt, _loss, optimizer, function, _chain in plan.scale_loss:
        if not _steps(ctx, function, optimizer):  # scaled gradients must be stepped by the scaler: all or nothing
            plan.refusals.append((stmt, f"`{ctx.text(optimizer)}.step()` is not in the function of its scale_loss"))
    if plan.refusals or len(plan.initialize) > 1 or SCALER in ctx.source:
        why = [w for _n, w in plan.refusals] or (["more than one amp.initialize"] if len(plan.initialize) > 1
                                                 else [f"the name {SCALER} is taken"])
        for node, _w in plan.refusals[:1] or [(binding.stmt, "")]:
            ctx.report(node, codes.TP121, ADVICE, "apex.amp not converted in this file: " + "; ".join(sorted(set(why)))
                       + "; see `torchport rules TP120` for the torch.amp equivalent")
        return
    t = ctx.target
    device = f'"{t.device}"' if t.device else t.device_expr.format(torch=ctx.torch_name())
    ctx.needs_register = bool(t.register)  # the scaler and autocast name the target's device
    r = codes.TP120
    at_module_level = any(function is None for _s, _c, function in plan.initialize)
    replaced = None if at_module_level else _module_scaler(ctx, tree, binding, device, r, bool(plan.initialize))
    if not plan.initialize:
        ctx.report(binding.stmt, codes.TP121, ADVICE, _NEVER_ENABLED.format(scaler=SCALER,
                                                                             enabled=_scaler(ctx, device, "True")))
    for stmt, call, function in plan.initialize:
        _convert_initialize(ctx, stmt, call, function, device, r)
    for stmt, loss, optimizer, function, chain in plan.scale_loss:
        _convert_scale_loss(ctx, stmt, loss, optimizer, function, chain, device, r)
    for call, chain in plan.master:
        _convert_master_params(ctx, call, chain, r)
    for call, attr in plan.state:
        ctx.replace(call.func, f"{SCALER}.{attr}", r, "apex amp's state -> the GradScaler's")
    for stmt in binding.stmts:
        if stmt is not replaced:
            _unused_import(ctx, stmt, binding.local, r)
    binding.converted = True


def _scaler(ctx: FileContext, device: str, enabled: str) -> str:
    t = ctx.target
    if t.amp == "namespace":
        return f"{ctx.spell(t.namespace + '.amp.GradScaler')}(enabled={enabled})"
    return f"{ctx.spell('torch.amp.GradScaler')}({device}, enabled={enabled})"


def _module_scaler(ctx: FileContext, tree: ast.Module, binding: Binding, device: str, r: Code,
                   initialized: bool = True) -> Optional[ImportStmt]:
    """`amp_scaler = <disabled GradScaler>` at module level, after the module's imports (it names torch, and the
    target's device, registered after torch's import): in place of apex.amp's import when that is the last one
    (that statement is returned)."""
    line = f"{SCALER} = {_scaler(ctx, device, 'False')}  # made by amp.initialize's replacement"
    ctx.register_at_module = bool(ctx.target.register)
    top = [s for s in binding.stmts if any(s is b for b in tree.body)]
    last = _import_section_end(ctx, tree)
    message = "apex.amp -> a module-level GradScaler, as apex's amp was one module-level object: disabled until " \
              + ("amp.initialize's replacement makes the real one" if initialized else "something enables it (TP121)")
    if top and len(top[0].names) == 1 and top[0] is last:
        ctx.replace(top[0], line, r, message)
        return top[0]
    shown = line.split("  #", 1)[0]
    if last is None:   # no imports: first after the docstring and __future__ imports (and after the imports
        first, last = top_statement(tree)   # convert adds there, which go first: FileContext.insert's `leading`)
        if first is not None:
            ctx.insert(ctx.line_starts[first.lineno - 1], line + ctx.newline, r, message, shown=shown)
            return None
    end = cast(int, last.end_lineno) if last is not None else 0   # set on every parsed node
    after = ctx.line_starts[end] if 0 < end < len(ctx.line_starts) else len(ctx.source) if end else 0
    lead = ctx.newline if after == len(ctx.source) and not ctx.source.endswith(("\n", "\r")) else ""
    ctx.insert(after, lead + line + ctx.newline, r, message, shown=shown,
               anchor=ctx.span(last)[1] if last is not None else None)
    return None


def _import_section_end(ctx: FileContext, tree: ast.Module) -> Optional[ast.stmt]:
    """The last top-level statement that imports: an import, or a `try:`/`if`/`with` holding one (`try: import
    torch`), not a class, nor the `if __name__ == "__main__":` block (module-level code after it runs too late)."""
    holders = {id(p.chain[0]) for p in ctx.places.values() if p.function is None and p.chain}
    last = None
    for s in tree.body:
        if isinstance(s, ast.ImportFrom) and s.module == "__future__":
            continue
        if isinstance(s, (ast.Import, ast.ImportFrom)) or id(s) in holders and not isinstance(s, ast.ClassDef) \
                and not (isinstance(s, ast.If) and "__main__" in ctx.text(s.test)):
            last = s
    return last


def _convert_master_params(ctx: FileContext, call: ast.Call, chain: Chain, r: Code) -> None:
    """amp.master_params(opt) -> opt's parameters; in a clip_grad_norm_/clip_grad_value_ statement, unscale first."""
    opt = ctx.text(call.args[0])
    ctx.replace(call, f'[p for group in {opt}.param_groups for p in group["params"]]', r,
                "apex O1's master params are the optimizer's parameters")
    outer = next((n for n in reversed(chain) if isinstance(n, ast.Call)), None)
    stmt = next((n for n in reversed(chain) if isinstance(n, ast.stmt)), None)
    if outer is not None and isinstance(stmt, ast.Expr) and stmt.value is outer and \
            getattr(outer.func, "attr", getattr(outer.func, "id", "")) in ("clip_grad_norm_", "clip_grad_value_"):
        ctx.insert(ctx.span(stmt)[0], f"{SCALER}.unscale_({opt}){ctx.newline}{_indent(ctx, stmt)}", r,
                   "gradients are clipped unscaled: the scaler unscales them first")


def _convert_initialize(ctx: FileContext, stmt: ast.Assign, call: ast.Call, function: Optional[Function], device: str,
                        r: Code) -> None:
    t = ctx.target
    opt_level = _keyword(call, "opt_level")
    level = opt_level.value if isinstance(opt_level, ast.Constant) else None
    enabled = "False" if level == "O0" else "True" if level is not None or opt_level is None else \
        f"{ctx.text(opt_level)} != \"O0\""
    del t
    ctor = _scaler(ctx, device, enabled)
    loss_scale = _keyword(call, "loss_scale")
    notes = []
    if isinstance(loss_scale, ast.Constant) and isinstance(loss_scale.value, (int, float)) \
            and not isinstance(loss_scale.value, bool):
        ctor = ctor[:-1] + f", init_scale={loss_scale.value!r})"
        notes.append("apex kept a static loss scale; the GradScaler starts from it and adapts it")
    elif loss_scale is not None and not isinstance(loss_scale, ast.Constant):
        notes.append(f"loss_scale={ctx.text(loss_scale)}: the GradScaler scales dynamically whatever it holds")
    said = bundled_data("apex.toml")["amp_initialize"]
    if level in ("O2", "O3") or opt_level is not None and level is None:
        notes.append(said["opt_levels"][level if level in ("O2", "O3") else "dynamic"])
    notes += [said["keywords"][k.arg] for k in call.keywords if k.arg in said["keywords"]]
    args = [ctx.text(a) for a in call.args]
    targets = stmt.targets[0]
    names = [ctx.text(e) for e in targets.elts] if isinstance(targets, (ast.Tuple, ast.List)) else [ctx.text(targets)]
    indent = _indent(ctx, stmt)
    lines = []
    if names != args[:len(names)] or len(names) != len(args):
        lines.append(f"{', '.join(names)} = {', '.join(args[:len(names)])}")
    if function is not None and not _declares_global(function):  # the module's scaler, as apex's amp was one
        body = function.body
        first = body[1] if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            else body[0]
        ctx.insert(ctx.line_starts[first.lineno - 1], f"{_indent(ctx, first)}global {SCALER}{ctx.newline}", r,
                   f"amp.initialize's replacement sets the module's {SCALER}, as apex's amp was one module-level "
                   "object")
    message = "apex amp.initialize -> a torch.amp GradScaler" + ("; " + "; ".join(notes) if notes else "")
    if any("cuda" in a.lower() for a in args):  # other rules rewrite inside the arguments: keep their text
        first_arg, last_arg = call.args[0], call.args[len(names) - 1] if len(call.args) >= len(names) else call.args[-1]
        ctx.replace((ctx.span(call)[0], ctx.span(first_arg)[0]), "(", r, message)
        ctx.replace((ctx.span(last_arg)[1], ctx.span(call)[1]), ")", r, quiet=True)
        ctx.insert(ctx.span(stmt)[1], f"{ctx.newline}{indent}{SCALER} = {ctor}", r, quiet=True)
        return
    lines.append(f"{SCALER} = {ctor}")
    ctx.replace(stmt, (ctx.newline + indent).join(lines), r, message)


def _declares_global(function: ast.AST) -> bool:
    return any(isinstance(n, ast.Global) and SCALER in n.names for n in ast.walk(function))


def _indent(ctx: FileContext, stmt: ast.stmt) -> str:
    start = ctx.line_starts[stmt.lineno - 1]
    return ctx.source[start:ctx.span(stmt)[0]]


def _convert_scale_loss(ctx: FileContext, stmt: ast.With, loss: ast.expr, optimizer: ast.expr,
                        function: Optional[Function], chain: Chain, device: str, r: Code) -> None:
    loss_text = ctx.text(loss)
    calls = []
    for s in stmt.body:
        call = cast(ast.Call, cast(ast.Expr, s).value)   # _plan took only `s.backward(...)` statements
        inner = ctx.source[ctx.span(call.func)[1]:ctx.span(call)[1]]  # "(...)" of backward
        calls.append(f"{SCALER}.scale({loss_text}).backward{inner}")
    ctx.replace(stmt, (ctx.newline + _indent(ctx, stmt)).join(calls), r, "amp.scale_loss -> GradScaler.scale")
    opt = ctx.text(optimizer)
    for node in _steps(ctx, function, optimizer):
        ctx.replace(node, f"{SCALER}.step({opt}){ctx.newline}{_indent(ctx, node)}{SCALER}.update()",
                    r, "optimizer.step() -> the scaler's step (skipped when gradients overflowed) and update")
    found = _loss_assignment(chain, stmt, loss.id) if isinstance(loss, ast.Name) else None
    if found is None:
        ctx.report(stmt, codes.TP121, ADVICE, f"the loss is not computed before this in the function: run the "
                                              f"forward and the loss under torch.autocast({device}) by hand")
        return
    _wrap_forward(ctx, found[0], found[1], device, r)


def _steps(ctx: FileContext, function: Optional[Function], optimizer: ast.expr) -> list[ast.Expr]:
    """The `<optimizer>.step()` statements in the function holding a scale_loss (or the module): the optimizer
    a plain name or attribute chain (`self.optimizer`), matched by its text."""
    if not isinstance(optimizer, (ast.Name, ast.Attribute)):
        return []
    text = ctx.text(optimizer)
    return [node for node in ast.walk(function if function is not None else cast(ast.Module, ctx.tree))  # a FILE rule
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and not node.value.args
            and not node.value.keywords and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr == "step" and ctx.text(node.value.func.value) == text]


def _block_of(parent: ast.AST, stmt: ast.AST) -> Optional[list[ast.stmt]]:
    """The statement list of `parent` holding `stmt`."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return block
    return None


def _loss_assignment(chain: Chain, stmt: ast.stmt, loss: str) -> Optional[tuple[list[ast.stmt], int]]:
    """(block, index) of the last assignment of `loss` before `stmt` in its block or, going out, in the blocks
    holding it (`if args.fp16: with amp.scale_loss(...)` after the forward), within its function."""
    inner: ast.AST = stmt
    for parent in reversed(chain):
        block = _block_of(parent, inner)
        if block is None:
            return None
        at = next(i for i, s in enumerate(block) if s is inner)
        end = next((i for i in range(at - 1, -1, -1) if _assigns(block[i], loss)), None)
        if end is not None:
            return block, end
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            return None
        inner = parent
    return None


def _wrap_forward(ctx: FileContext, block: list[ast.stmt], end: int, device: str, r: Code) -> None:
    """Indent the run of simple statements ending with block[end] (the loss) under `with torch.autocast(...)`."""
    start = end
    while start > 0 and isinstance(block[start - 1], FORWARD) and not NOT_FORWARD.search(ctx.text(block[start - 1])) \
            and not _initializes(block[start - 1]):
        start -= 1
    first, last = block[start], block[end]
    if any(isinstance(n, (ast.Constant, ast.JoinedStr)) and n.lineno != n.end_lineno
           for s in block[start:end + 1] for n in ast.walk(s)):
        ctx.report(first, codes.TP121, ADVICE, "a string over several lines in the forward: wrap it in "
                                               f"torch.autocast({device}) by hand")
        return
    indent = _indent(ctx, first)
    unit = "\t" if indent.startswith("\t") else "    "
    begin = ctx.line_starts[first.lineno - 1]
    head = f"{indent}with {ctx.spell('torch.autocast', first.lineno)}({device}, enabled={SCALER}.is_enabled()):{ctx.newline}"
    ctx.insert(begin, head, r, "apex O1's half precision -> torch.autocast around the forward and the loss",
               anchor=ctx.span(first)[0])
    # insertions only: other rules' edits inside stay (end_lineno: set on every parsed node)
    for line in range(first.lineno, cast(int, last.end_lineno) + 1):
        start = ctx.line_starts[line - 1]
        end = ctx.line_starts[line] if line < len(ctx.line_starts) else len(ctx.source)
        if ctx.source[start:end].strip():
            ctx.insert(start, unit, r, quiet=True)


def _initializes(stmt: ast.AST) -> bool:
    """Does the statement call `<x>.initialize(...)`?  (amp.initialize makes the scaler: never in the forward.)"""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "initialize"
               for n in ast.walk(stmt))


def _assigns(stmt: ast.AST, name: str) -> bool:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] \
        if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) else []
    return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t))


def _unused_import(ctx: FileContext, stmt: ImportStmt, local: str, r: Code) -> None:
    """Say that `local` is no longer used; apex_imports removes it from `stmt` with the others."""
    ctx.memo.setdefault("apex-unused", {}).setdefault(id(stmt), (stmt, set(), r))[1].add(local)


def _drop_import(ctx: FileContext, stmt: ImportStmt, gone: set[str], r: Code) -> None:
    """Remove the names `gone` from their import statement: the names it also imports stay; a statement left
    with none goes with its line, or becomes `pass` where it was its block's only statement."""
    names = stmt.names
    kept = [a for a in names if (a.asname or a.name.split(".")[0]) not in gone and a.asname not in gone]
    message = f"apex import: {', '.join(sorted(gone))} no longer used (converted)"
    if kept:
        text = ", ".join(f"{a.name} as {a.asname}" if a.asname else a.name for a in kept)
        head = f"from {'.' * stmt.level}{stmt.module or ''} import " if isinstance(stmt, ast.ImportFrom) else "import "
        ctx.replace(stmt, head + text, r, message)
        return
    parent = ctx.parents().get(id(stmt))
    block = next((b for f in ("body", "orelse", "finalbody", "handlers") for b in [getattr(parent, f, None)]
                  if isinstance(b, list) and any(x is stmt for x in b)), [])
    start, end = ctx.span(stmt)
    line_start = ctx.line_starts[stmt.lineno - 1]
    last = cast(int, stmt.end_lineno)   # set on every parsed node
    line_end = ctx.line_starts[last] if last < len(ctx.line_starts) else len(ctx.source)
    alone = not ctx.source[line_start:start].strip() and not ctx.source[end:line_end].strip()
    if len(block) > 1 and alone:
        ctx.replace((line_start, line_end), "", r, message + "; the line goes", shown=(ctx.text(stmt), ""))
    else:
        ctx.replace(stmt, "pass", r, message + "; `pass` keeps its block"
                    + ("; the handler of its `try:` no longer runs" if isinstance(parent, ast.Try) else ""))


# ------------------------------------------------------------------ apex.optimizers (TP122)
OPTIMIZERS = "apex.optimizers"


@checker(codes.TP122, phase=Phase.FILE, triggers=("apex",), needs=("apex",))
def apex_optimizers(tree: ast.Module, ctx: FileContext) -> None:
    """Each call of an apex fused optimizer: converted as kb/apex.toml says, or reported with the steps."""
    if any(n == "apex" or n.startswith(OPTIMIZERS) for n in ctx.api.user_names):
        return  # the user's rule files say what apex's optimizers become
    data = bundled_data("apex.toml")
    if not any(name.rsplit(".", 1)[1] in ctx.source for table in ("optimizers", "reported", "aliases")
               for name in data[table]):
        return  # no apex optimizer class is named in the file (a cheap test before walking the tree)
    converted: set[int] = ctx.memo.setdefault("apex-optimizer-calls", set())
    parents = ctx.parents()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _optimizer(ctx, node.func, data)
            if name is not None and _convert_optimizer(ctx, node, name, data):
                converted.add(id(_root(node.func)))
        elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            parent = parents.get(id(node))
            if isinstance(parent, ast.Attribute) or isinstance(parent, ast.Call) and parent.func is node:
                continue
            name = _optimizer(ctx, node, data)
            if name is not None:  # `optimizer_cls = FusedAdam`: the arguments are not in sight
                ctx.report(node, codes.TP122, ADVICE, f"apex {name.rsplit('.', 1)[1]} not converted: used as a "
                                                      "value, not called; call the torch.optim class there (see "
                                                      "`torchport rules TP122`)")


def _optimizer(ctx: FileContext, func: ast.expr, data: Any) -> Optional[str]:
    """The canonical apex.optimizers class a callee names through the file's imports, or None."""
    q = ctx.qualname(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
    if q is None or not q.startswith(OPTIMIZERS + "."):
        return None
    return cast(str, data["aliases"].get(q, q))   # kb/apex.toml's aliases: class name -> class name


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def _literal(node: ast.AST) -> tuple[bool, Any]:
    """(True, value) of a literal True/False/number/None, else (False, None)."""
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (bool, int, float))):
        return True, node.value
    return False, None


def _convert_optimizer(ctx: FileContext, call: ast.Call, name: str, data: Any) -> bool:
    r, short = codes.TP122, name.rsplit(".", 1)[1]
    spec = data["optimizers"].get(name)
    if spec is None:
        said = data["reported"].get(name, {})
        why = said.get(ctx.target.name) or said.get("all") or "no torch.optim counterpart torchport writes"
        ctx.report(call, r, ADVICE, f"apex {short} not converted: {why}")
        return False
    manual, problems, dropped = spec.get("manual", {}), [], []
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        problems.append("arguments passed with * or **: name them")
    elif len(call.args) > len(spec["positional"]):
        problems.append(f"more than {len(spec['positional'])} positional arguments ({', '.join(spec['positional'])}):"
                        " pass the others by keyword")
    choice, mode = "any", spec.get("mode")
    if mode:
        given = _keyword(call, mode)
        known, value = _literal(given) if given is not None else (True, spec["mode_default"])
        choice = str(bool(value)).lower()
        if not known or choice not in spec["new"]:
            problems.append(manual[mode])
    for k in call.keywords:
        if k.arg is None or k.arg in spec["keep"]:
            continue
        if k.arg == mode:
            dropped.append(k)
            continue
        known, value = _literal(k.value)
        wanted = spec["drop"].get(k.arg)
        if wanted == "*" or wanted is not None and known and bool(value) is wanted:
            dropped.append(k)
        else:
            problems.append(manual.get(k.arg) or f"{k.arg}={ctx.text(k.value)} has no counterpart in torch.optim")
    if problems:
        ctx.report(call, r, ADVICE, f"apex {short} not converted: " + "; ".join(problems))
        return False
    arguments: list[Union[ast.expr, ast.keyword]] = sorted([*call.args, *call.keywords], key=lambda n: ctx.span(n)[0])
    if arguments and any(arguments[0] is k for k in dropped):
        ctx.report(call, r, ADVICE, f"apex {short} not converted: pass the parameters first")
        return False
    vendor = spec.get("vendor", {}).get(ctx.target.name)
    new = (vendor or spec["new"])[choice]
    default = " (apex's default)" if mode and _keyword(call, mode) is None else ""
    notes = [f"{mode}={choice.capitalize()}{default}: {'decoupled' if choice == 'true' else 'L2'} weight decay"
             ] if mode == "adam_w_mode" else []
    notes += [f"{k.arg} dropped: {data['why'][k.arg]}" for k in dropped if k.arg != mode]
    added = []
    passed = {k.arg for k in call.keywords} | set(spec["positional"][:len(call.args)])
    for key, value in spec.get("defaults", {}).get(choice, {}).items():
        if key not in passed:
            added.append(f"{key}={value}")
            notes.append(f"{key}={value} passed: apex's default, which {new.rsplit('.', 1)[1]} does not share")
    if vendor is None and ctx.target.device in data["fused"]["devices"]:
        added.append("fused=True")
        notes.append(f"fused=True: torch has fused optimizer kernels for {ctx.target.device}")
    _edit_arguments(ctx, call, arguments, dropped, added, r)
    if vendor is not None:
        notes.append(f"{ctx.target.title}'s fused optimizer: never re-allocate the parameters it was given "
                     "(no .cpu() of the model, no new parameter objects)")
    ctx.replace(call.func, ctx.spell(new, call.lineno), r, f"apex {short} -> {new}; " + "; ".join(notes),
                shown=(ctx.text(call.func), new))
    return True


def _edit_arguments(ctx: FileContext, call: ast.Call, arguments: list[Union[ast.expr, ast.keyword]],
                    dropped: list[ast.keyword], added: list[str], r: Code) -> None:
    """Remove the `dropped` keywords (never the first argument) and add `added` at the end: a dropped argument
    goes up to the next one's start; the run of dropped ones at the end is replaced by the added ones."""
    gone = {id(k) for k in dropped}
    last = max(i for i, n in enumerate(arguments) if id(n) not in gone)
    for i, n in enumerate(arguments[:last]):
        if id(n) in gone:
            ctx.replace((ctx.span(n)[0], ctx.span(arguments[i + 1])[0]), "", r, quiet=True)
    tail = "".join(", " + a for a in added)
    if last < len(arguments) - 1:
        ctx.replace((ctx.span(arguments[last])[1], ctx.span(arguments[-1])[1]), tail, r, quiet=True)
    else:
        for a in added:
            ctx.add_argument(call, a, r, quiet=True)


@checker(codes.TP120, codes.TP122, phase=Phase.FILE, triggers=("apex",), needs=("apex",))
def apex_imports(tree: ast.Module, ctx: FileContext) -> None:
    """The apex import names the conversions above left unused go, one edit per statement (after both, so a
    `from apex import amp, optimizers` loses both names in one edit)."""
    calls = ctx.memo.get("apex-optimizer-calls", set())
    for b in ctx.all_bindings():
        if b.ambiguous or not calls or not (b.qualname == "apex" or b.qualname.startswith(OPTIMIZERS)):
            continue
        uses = [n for n, chain in _uses(tree, b.local)
                if not (chain and isinstance(chain[-1], (ast.Import, ast.ImportFrom, ast.alias)))]
        if uses and all(id(n) in calls for n in uses):
            for stmt in b.stmts:
                _unused_import(ctx, stmt, b.local, codes.TP122)
            b.converted = True
    for stmt, gone, r in ctx.memo.get("apex-unused", {}).values():
        _drop_import(ctx, stmt, gone, r)
