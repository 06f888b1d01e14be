"""References to CUDA-specific names: torch.cuda.*, AMP, cudnn flags, profiler, DataParallel...

One mechanism, many documented rules: every reference to an imported name is
resolved by the target's ApiMap; the resolution's category picks the rule id
that reports it.  Plain `torch` chains are rewritten where they stand; names
imported from CUDA modules (`from torch.cuda.amp import autocast`, `import
torch.cuda as tc`) are rewritten at their import, and only when every use in
the file can follow, so a file never mixes both meanings of one name.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable, Optional, Union, cast

from ...core import codes
from ...core.finding import ADVICE, CUDA_ONLY_PATH, UNSUPPORTED
from ...kb.apimap import ADAPT, KEEP, MAP
from ...kb.packages import packages
from ..checkers import Phase, checker
from ..flow import Parents, children
from ..guards import imported_before, runs_only_with_device

if TYPE_CHECKING:
    from ...backends import Target
    from ...core.codes import Code
    from ...kb.apimap import Resolution
    from ..context import Binding, FileContext, Located, Span
    from ..python import Ref

NamesIn = dict[str, list[ast.AST]]   # _names_in: identifier -> the nodes that mention it

# resolution category -> the code that reports it
CATEGORY_CODE = {
    "device-api": codes.TP101, "tensor-type": codes.TP102, "rng": codes.TP103, "stream": codes.TP104,
    "memory": codes.TP105, "amp": codes.TP106, "graphs": codes.TP107, "nvtx": codes.TP108,
    "profiler": codes.TP109, "cudnn": codes.TP110, "capability": codes.TP111, "data-parallel": codes.TP112,
    "extension": codes.TP113, "third-party": codes.TP114, "other": codes.TP115, "nccl": codes.TP116,
    "unknown-api": codes.TP117,
}
REFERENCE_CODES = tuple(CATEGORY_CODE.values())


# Categories whose names do harm only when used: a type test against them (`isinstance(m, DataParallel)`)
# asks the same question on every target, so it is neither converted nor reported.
TYPE_TEST_SAFE = {"data-parallel"}


def type_test(parents: Parents, node: ast.AST, scopes: Optional[dict[int, NamesIn]] = None) -> bool:
    """Is `node` the type a value is tested against: `isinstance(x, T)`, `issubclass(C, (T, U))`,
    `type(x) is T`, `x.type() == T`, `type(x) in (T, U)`, or an element of a tuple, list or set bound
    to a name that is only ever tested against (`types = (T, U)` ... `isinstance(x, types)`), or looped
    over by a variable that is (`any(isinstance(m, t) for t in [T, U])`, `for t in (T, U): if type(m) is t`)?
    `scopes` keeps what `_names_in` found per scope, for the next call on the same tree."""
    parent = parents.get(id(node))
    in_literal = isinstance(parent, (ast.Tuple, ast.List, ast.Set))
    if in_literal:   # the parent is a tuple, list or set
        node, parent = cast(ast.AST, parent), parents.get(id(parent))
    if _type_test_call(parent, node):
        return True
    tests = (ast.Is, ast.IsNot, ast.Eq, ast.NotEq) + ((ast.In, ast.NotIn) if in_literal else ())
    if isinstance(parent, ast.Compare) and all(isinstance(op, tests) for op in parent.ops):
        return True
    if not in_literal:
        return False
    scopes = {} if scopes is None else scopes
    return _only_type_tested(parents, node, scopes) or _looped_for_type_tests(parents, node, parent, scopes)


def _type_test_call(call: Optional[ast.AST], arg: ast.AST) -> bool:
    """Is `arg` the second argument of `isinstance(x, arg)` or `issubclass(C, arg)`?"""
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and \
        call.func.id in ("isinstance", "issubclass") and len(call.args) == 2 and call.args[1] is arg


def _tested_against(parents: Parents, node: ast.AST) -> bool:
    """Is this read of a name a type-test position: `isinstance(x, NAME)`, `issubclass(C, (NAME, U))`,
    `type(x) in NAME`, `x.__class__ not in NAME`?"""
    if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
        return False
    parent = parents.get(id(node))
    if isinstance(parent, ast.Tuple):  # isinstance(x, (NAME, U)): a tuple of types may nest
        return _type_test_call(parents.get(id(parent)), parent)
    return _type_test_call(parent, node) or isinstance(parent, ast.Compare) and len(parent.ops) == 1 and \
        isinstance(parent.ops[0], (ast.In, ast.NotIn)) and parent.comparators[0] is node


def _looped_for_type_tests(parents: Parents, literal: ast.AST, loop: Optional[ast.AST],
                           scopes: dict[int, NamesIn]) -> bool:
    """Is `literal` what a `for` clause of a comprehension, or a `for` statement of a module or function,
    iterates over with a single name, every other mention of which (in the comprehension; in the scope of the
    statement, its body and what follows alike) is a type test of it (`_tested_against`, or `type(m) is NAME`)?
    A variable called, passed, returned, rebound or spelled in a string is a use."""
    if not (isinstance(loop, (ast.comprehension, ast.For, ast.AsyncFor)) and loop.iter is literal
            and isinstance(loop.target, ast.Name)):
        return False
    target = loop.target
    mentions: Sequence[ast.AST]
    if isinstance(loop, ast.comprehension):  # the variable is the comprehension's own: one walk of it
        # a comprehension is inside its expression
        mentions = _names_in(cast(ast.AST, parents.get(id(loop)))).get(target.id, ())
    else:
        names = _scope_names(parents, loop, scopes)
        if names is None:  # a class body's loop variable is an attribute
            return False
        mentions = names.get(target.id, ())
    return len(mentions) > 1 and all(n is target or _tested_against(parents, n) or _compared(parents, n)
                                     for n in mentions)


def _compared(parents: Parents, node: ast.AST) -> bool:
    """Is this read of a name one side of a single `is`, `is not`, `==` or `!=` (`type(m) is NAME`)?"""
    parent = parents.get(id(node))
    return isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and isinstance(parent, ast.Compare) \
        and len(parent.ops) == 1 and isinstance(parent.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq))


def _only_type_tested(parents: Parents, literal: ast.AST, scopes: dict[int, NamesIn]) -> bool:
    """Is `literal` (or a branch of `a if c else b` around it) the value of the one binding of a module or
    function name, every other mention of which is a type test (see `_tested_against`) or adds types to it
    (`NAME += (T,)`)?  A name rebound, otherwise augmented, deleted, declared global, passed, returned or
    spelled in a string (`__all__`) is a use."""
    child, stmt = literal, parents.get(id(literal))
    while isinstance(stmt, ast.IfExp) and child is not stmt.test:
        child, stmt = stmt, parents.get(id(stmt))
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
    elif isinstance(stmt, ast.AnnAssign):
        target = stmt.target
    else:
        return False
    if stmt.value is not child or not isinstance(target, ast.Name):
        return False
    names = _scope_names(parents, stmt, scopes)
    if names is None:  # a class attribute is read as `self.NAME`: a use
        return False
    mentions = names.get(target.id, ())
    return len(mentions) > 1 and all(n is target or _tested_against(parents, n) or _extended(parents, n)
                                     for n in mentions)


def _extended(parents: Parents, node: ast.AST) -> bool:
    """Is this mention of a name `NAME += (T, ...)` (or a list): more types for the same tests (accelerate's
    `options = (DDP, DataParallel)`, then `options += (DeepSpeedEngine,)` when it is installed)?"""
    stmt = parents.get(id(node))
    return isinstance(stmt, ast.AugAssign) and stmt.target is node and isinstance(stmt.op, ast.Add) \
        and isinstance(stmt.value, (ast.Tuple, ast.List))


def type_tested(ctx: FileContext, ref: Ref, res: Resolution) -> bool:
    """Is this reference to a name of a TYPE_TEST_SAFE category the type of a type test (see `type_test`)?"""
    return res.category in TYPE_TEST_SAFE and \
        type_test(ctx.parents(), ref.node, ctx.memo.setdefault("type-test-scopes", {}))


def imported_for_type_tests(ctx: FileContext, binding: Binding) -> bool:
    """Is a name bound by `from` imports (`from torch.nn import DataParallel`) read, and only ever as the
    type of a type test (see `type_tested`), and mentioned nowhere else in the scope of its imports but by
    them?  A name never read is not (another module may import it from here), nor one bound in a class
    body (read as `self.NAME`), listed in `__all__`, rebound, deleted or declared global."""
    if not binding.uses or not all(type_tested(ctx, ref, res) for ref, res in binding.uses):
        return False
    names = _scope_names(ctx.parents(), binding.stmts[0], ctx.memo.setdefault("type-test-scopes", {}))
    if names is None:
        return False
    allowed = {id(_chain_nodes(ref.node)[0]) for ref, _ in binding.uses}
    allowed.update(id(alias) for stmt in binding.stmts for alias in stmt.names)
    local = binding.local
    return all(id(n) in allowed or isinstance(n, ast.alias) and (n.asname or n.name.split(".")[0]) != local
               for n in names.get(local, ()))  # `from torch.nn import DataParallel as W` elsewhere binds W


_SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _scope_names(parents: Parents, node: ast.AST, scopes: dict[int, NamesIn]) -> Optional[NamesIn]:
    """`_names_in` of the module or function holding `node`, walked once per scope (`scopes` keeps them);
    None in a class body, whose names are read as attributes."""
    scope = parents.get(id(node))
    while scope is not None and not isinstance(scope, _SCOPES):
        scope = parents.get(id(scope))
    if scope is None or isinstance(scope, ast.ClassDef):
        return None
    names = scopes.get(id(scope))
    if names is None:
        names = scopes[id(scope)] = _names_in(scope)
    return names
_NAMING = ("id", "arg", "name", "asname", "rest")  # the fields that name a variable: read, bound or declared


def _names_in(scope: ast.AST) -> NamesIn:
    """{identifier: [nodes]} of every node under `scope` (nested functions and classes too) that mentions an
    identifier: a Name (read, bound, deleted), a parameter, an import, a def or class, `except ... as`,
    `global`/`nonlocal`, a match capture, or a string constant that spells it.  One walk per scope."""
    found: NamesIn = {}
    stack = [scope]
    while stack:
        node = stack.pop()
        cls = node.__class__
        # (tested by `cls is`, which this hot walk uses and mypy does not narrow by: the casts say it)
        if cls is ast.Constant:
            value = cast(ast.Constant, node).value
            if isinstance(value, str) and value.isidentifier():
                found.setdefault(value, []).append(node)
            continue
        if cls is ast.Global or cls is ast.Nonlocal:
            for name in cast(Union[ast.Global, ast.Nonlocal], node).names:
                found.setdefault(name, []).append(node)
            continue
        for field in _NAMING if cls is not ast.keyword else ():  # `f(NAME=...)` names a parameter of f
            value = getattr(node, field, None)
            if isinstance(value, str):
                found.setdefault(value.split(".")[0], []).append(node)  # `import a.b` binds a
        stack += children(node)
    return found


def rule_for(ctx: FileContext, res: Resolution) -> Code:
    """The rule that reports a resolution: the user rule that decided it, else its category's rule."""
    if res.rule:
        return ctx.user_code(res.rule)
    return CATEGORY_CODE.get(res.category, codes.TP115)


def _chain_nodes(node: ast.expr) -> list[ast.expr]:
    """[Name, Attribute, Attribute, ...] of a plain chain, innermost first."""
    chain: list[ast.expr] = []
    while isinstance(node, ast.Attribute):
        chain.append(node)
        node = node.value
    chain.append(node)
    chain.reverse()
    return chain


def rename_chain(ctx: FileContext, node: ast.expr, new_text: str, r: Code, message: str, category: str,
                 quiet: bool = False) -> None:
    """Replace a name chain by `new_text`, touching only the components that differ."""
    chain = _chain_nodes(node)   # a plain chain: a Name, then Attributes
    old_parts = [cast(ast.Name, chain[0]).id] + [n.attr for n in cast("list[ast.Attribute]", chain[1:])]
    new_parts = new_text.split(".")
    same = 0
    while same < min(len(old_parts), len(new_parts)) - 1 and old_parts[same] == new_parts[same]:
        same += 1
    start, end = ctx.span(node)
    if same:
        first_changed = cast(ast.Attribute, chain[same])
        start = ctx.span(first_changed)[1] - len(first_changed.attr)
        if ctx.source[start:end].replace(" ", "") != ".".join(old_parts[same:]):
            start = ctx.span(node)[0]  # odd spacing or comments inside the chain: rewrite it whole
            same = 0
    ctx.replace((start, end), ".".join(new_parts[same:]), r, message, category,
                shown=(ctx.text(node), new_text), quiet=quiet)


def _call_of(ref: Ref) -> Optional[ast.Call]:
    parent = ref.parent
    if isinstance(parent, ast.Call) and parent.func is ref.node:
        return parent
    return None


def _is_decorator(ref: Ref) -> bool:
    parent = ref.parent
    return isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
        any(d is ref.node for d in parent.decorator_list)


def _partial_of(ref: Ref) -> Optional[ast.Call]:
    """`functools.partial(ref, ...)`: the partial call whose first argument is ref (its arguments are ref's)."""
    parent = ref.parent
    if not (isinstance(parent, ast.Call) and parent.args and parent.args[0] is ref.node):
        return None
    func = parent.func
    named = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return parent if named == "partial" else None


def can_adapt(ref: Ref, res: Resolution) -> bool:
    """Can adapt_call insert the device here (a call with plain arguments, a decorator, or functools.partial
    binding the callable's first arguments)?"""
    adapter = cast("dict[str, Any]", res.adapter)   # an ADAPT resolution has its adapter
    partial = _partial_of(ref)
    call = _call_of(ref) or partial
    if call is None:
        return _is_decorator(ref) and adapter["device"] != "first"
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    positional = adapter.get("positional", [])
    bound = len(call.args) - (1 if partial is not None else 0)
    return not (adapter["device"] == "first" and positional and bound > len(positional))


def adapt_call(ctx: FileContext, ref: Ref, res: Resolution, r: Code) -> None:
    """Insert the device into a torch.amp call built from a torch.cuda.amp one (see can_adapt)."""
    adapter = cast("dict[str, Any]", res.adapter)   # an ADAPT resolution has its adapter
    device = device_argument(ctx, ref.node.lineno)
    call = _call_of(ref)
    if call is None and _partial_of(ref) is None:  # a bare decorator: @custom_fwd -> @custom_fwd(device_type=...)
        end = ctx.span(ref.node)[1]
        ctx.insert(end, f"({adapter['device']}={device})", r, quiet=True)
        ctx.note_change((ctx.span(ref.node)[0], end), r, res.message, res.category)
        return
    positional = adapter.get("positional", [])
    if call is None:   # partial(autocast, enabled=False): the partial's arguments after the callable are its own
        call = cast(ast.Call, _partial_of(ref))   # not a bare decorator: a partial (above)
        bound = call.args[1:]
        if adapter["device"] == "first":
            ctx.insert(ctx.span(ref.node)[1], f", {device}", r, quiet=True)
            for name, arg in zip(positional, bound):
                ctx.insert(ctx.span(arg)[0], f"{name}=", r, quiet=True)
        else:
            ctx.add_argument(call, f"{adapter['device']}={device}", r, quiet=True)
        ctx.note_change(call, r, res.message, res.category)
        return
    if adapter["device"] == "first":
        ctx.add_argument(call, device, r, quiet=True, first=True)
        for name, arg in zip(positional, call.args):
            ctx.insert(ctx.span(arg)[0], f"{name}=", r, quiet=True)
    else:
        ctx.add_argument(call, f"{adapter['device']}={device}", r, quiet=True)
    ctx.note_change(call, r, res.message, res.category)


def device_argument(ctx: FileContext, at: Optional[int] = None) -> str:
    """Source text of the target device type as a call argument, for code at line `at` (ctx.torch_name)."""
    t = ctx.target
    if t.device:
        return repr(t.device).replace("'", '"')
    return t.device_expr.format(torch=ctx.torch_name(at))


# Said of an unsupported name on the path of a CUDA-only package (migrate lists it to review, not as a failure:
# the package is the item that decides whether that path exists on the target).
CUDA_ONLY_ABOVE = "a CUDA-only package imported above"


def _cuda_only(module: str) -> str:
    """kb/packages.toml's name for a module of a CUDA-only package ('tensorrt'), else ''."""
    pkg = packages().by_import(module)
    return pkg.name if pkg is not None and pkg.kind == "cuda-only" else ""


def report_unconverted(ctx: FileContext, node: ast.expr, res: Resolution, r: Code, why: str = "") -> None:
    """Report a reference left as it is: a torch.cuda name that stays is always 'unsupported'; one on the path
    of a CUDA-only package (`import tensorrt` above it in its function or module) says so."""
    stays_cuda = res.qualname == "torch.cuda" or res.qualname.startswith("torch.cuda.")
    action = UNSUPPORTED if res.kind == UNSUPPORTED or stays_cuda else ADVICE
    message = res.message if res.kind in (UNSUPPORTED, KEEP) else why or res.message
    package = imported_before(ctx.parents(), node, _cuda_only) \
        if action == UNSUPPORTED and res.category != "third-party" and not res.rule else ""  # not its own names
    if package:
        message += f" (on the path of {package}, {CUDA_ONLY_ABOVE}: that package decides whether it runs on " \
                   f"{ctx.target.name})"
    ctx.report(node, r, action, message, res.category, reasons=(CUDA_ONLY_PATH,) if package else ())


@checker(*REFERENCE_CODES, codes.TP123, phase=Phase.REFERENCE,
         triggers=("cuda", "cudnn", "nccl", "nvtx", "dataparallel", "cpp_extension"))
def check_reference(ref: Ref, ctx: FileContext) -> None:
    """Resolve every use of an imported name against the target; the category picks the code."""
    res = ctx.api.resolve(ref.qualname)
    if res is None:
        return
    binding = ref.binding
    if binding.kind != "package" and ctx.api.resolve(binding.qualname) is not None:
        binding.uses.append((ref, res))  # decided with the import, in finalize_bindings
        return
    if type_tested(ctx, ref, res):
        return  # the same question on every target
    if swap_similar(ctx, ref, res):
        return
    if kept_under_guard(ctx, ref, res):
        return  # never runs where there is no device: the guard convert writes (or the user wrote) is the fix
    r = rule_for(ctx, res)
    if res.kind == MAP and res.qualname in ctx.target.no_arguments and _with_arguments(ref):
        report_unconverted(ctx, ref.node, res, r, f"not converted: {ctx.target.no_arguments[res.qualname]}")
    elif needs_guard(ctx, ref, res):
        if res.kind == MAP:
            rename_chain(ctx, ref.node, ctx.spell(res.new, ref.node.lineno), r, res.message, res.category, quiet=True)
        guard_device_call(ctx, ref, res, r)
    elif res.kind == MAP:
        rename_chain(ctx, ref.node, ctx.spell(res.new, ref.node.lineno), r, res.message, res.category)
    elif res.kind == ADAPT:
        if can_adapt(ref, res):
            rename_chain(ctx, ref.node, ctx.spell(res.new, ref.node.lineno), r, res.message, res.category,
                         quiet=True)
            adapt_call(ctx, ref, res, r)
        else:
            report_unconverted(ctx, ref.node, res, r,
                               f"not converted: {res.qualname} needs a device argument on {ctx.target.name}, "
                               f"rewrite it as {res.new}(<device>, ...)")
    else:
        report_unconverted(ctx, ref.node, res, r)


# calls that take a dotted name to replace for a test: unittest.mock.patch("torch.cuda.is_available", ...),
# monkeypatch.setattr("torch.cuda.device_count", ...)
_PATCHERS = {"unittest.mock.patch", "mock.patch", "patch"}


@checker(codes.TP101, nodes=(ast.Call,), triggers=("patch", "setattr"), needs=("cuda",))
def patched_names(node: ast.Call, ctx: FileContext) -> None:
    """A test that replaces a CUDA API by its dotted name keeps replacing what the converted code calls:
    `patch("torch.cuda.is_available", return_value=False)` -> `patch("torch.npu.is_available", ...)`."""
    func = node.func
    q = ctx.qualname(func) or ""
    monkeypatch = isinstance(func, ast.Attribute) and func.attr == "setattr" and \
        isinstance(func.value, ast.Name) and func.value.id == "monkeypatch"
    if not (q in _PATCHERS or q.endswith(".mock.patch") or monkeypatch) or not node.args:
        return
    target = node.args[0]
    if not (isinstance(target, ast.Constant) and isinstance(target.value, str) and target.value.startswith("torch.cuda.")):
        return
    res = ctx.api.resolve(target.value)
    if res is None or res.kind != MAP or not res.new:
        return
    quote = ctx.text(target)[:1] if ctx.text(target)[:1] in "'\"" else '"'
    ctx.handled.add(id(target))
    ctx.replace(target, f"{quote}{res.new}{quote}", rule_for(ctx, res),
                "the replaced name is the one the converted code calls")


def swap_similar(ctx: FileContext, ref: Ref, res: Resolution) -> bool:
    """convert --similar: an unsupported name with an entry in kb/similar.toml for the target is replaced by
    its similar API (TP123, saying what changes); a call the entry's max_args does not allow is reported as
    it would be without --similar, with the reason.  True when the reference was handled here."""
    found = ctx.api.similar_swap(res)
    if found is None:
        return False
    entry, new = found
    call = _call_of(ref)
    if entry.max_args >= 0 and (call is None or call.keywords or len(call.args) > entry.max_args
                                or any(isinstance(a, ast.Starred) for a in call.args)):
        ctx.report(ref.node, rule_for(ctx, res), UNSUPPORTED,
                   f"{res.message}; --similar: not swapped for {entry.new}: only a call with at most "
                   f"{entry.max_args} positional argument(s) and no keywords is", res.category)
        return True
    rename_chain(ctx, ref.node, ctx.spell(new, ref.node.lineno), codes.TP123,
                 f"--similar: {entry.new} instead of {res.qualname}, not the same: {entry.change}", res.category)
    return True


def _with_arguments(ref: Ref) -> bool:
    call = _call_of(ref)
    return call is not None and bool(call.args or call.keywords)


def in_branch_of(ctx: FileContext, node: ast.AST, asks: Callable[[ast.expr], bool]) -> bool:
    """Is `node` in a branch (not the test) of an `if`, conditional or `while` of its function whose test
    `asks(test)` says yes to?"""
    parents = ctx.parents()
    child, parent = node, parents.get(id(node))
    while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                                         ast.ClassDef)):
        if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and child is not parent.test and asks(parent.test):
            return True
        child, parent = parent, parents.get(id(parent))
    return False


def _guarded(ctx: FileContext, node: ast.AST) -> bool:
    """Is `node` reached only where a device is there: in the branch a device question takes, or after an
    early exit when there is none (any device's spelling; converter/guards.py)?"""
    return runs_only_with_device(ctx.parents(), node)


def kept_under_guard(ctx: FileContext, ref: Ref, res: Resolution) -> bool:
    """An unsupported call that runs only where a device is there, left without a finding: a call of the
    target's needs_device (`torch.cuda.memory_reserved()` on cpu; a second conversion of convert's own
    `(call if torch.cuda.is_available() else 0)` must not report what it fixed), and on the host target any
    call the CPU lacks (`torch.cuda.get_device_properties(d)` after `if d.type == "cpu": return`): there the
    branch never runs."""
    return res.kind == UNSUPPORTED and (res.qualname in ctx.target.needs_device or ctx.target.host) \
        and _call_of(ref) is not None and _guarded(ctx, ref.node)


def needs_guard(ctx: FileContext, ref: Ref, res: Resolution) -> bool:
    """Is this a call of a function that fails on a host without a device (the target's needs_device),
    not yet under a question about the device?"""
    name = res.new if res.kind == MAP else res.qualname
    if not (res.kind in (MAP, UNSUPPORTED) and name in ctx.target.needs_device and _call_of(ref) is not None
            and not _guarded(ctx, ref.node)):
        return False
    if ctx.torch_binding(ref.node.lineno) is None:
        # the file imports torch only through `from ... import` (perhaps conditionally, transformers):
        # adding `import torch` for the guard could break it, so the call is reported instead
        ctx.report(ref.node, rule_for(ctx, res), ADVICE, f"fails where there is no device: guard it with "
                                                          f"{guard_name(ctx.target)}()")
        return False
    return True


def in_fstring(expr: str, quote: str) -> str:
    """`expr` as a replacement field of an f-string quoted with `quote`: before Python 3.12 it may not
    use that quote character, so its own strings take the other one."""
    q = quote[0]
    return expr.replace(q, "'" if q == '"' else '"')


def _fstring_quote(ctx: FileContext, node: ast.AST) -> Optional[str]:
    """The quote character of the f-string `node` sits in, if any."""
    parents = ctx.parents()
    parent = parents.get(id(node))
    while parent is not None and not isinstance(parent, ast.stmt):
        if isinstance(parent, ast.JoinedStr):
            text = ctx.text(parent).lstrip("rRbBuUfF")
            return text[:1] or None
        parent = parents.get(id(parent))
    return None


def statement_alone(ctx: FileContext, node: ast.AST) -> Optional[ast.Expr]:
    """The expression statement `node` is part of, when that statement has its lines to itself (so that
    `if ...: ` can go in front of it), else None."""
    parents = ctx.parents()
    stmt = parents.get(id(node))
    while stmt is not None and not isinstance(stmt, ast.stmt):
        stmt = parents.get(id(stmt))
    if not isinstance(stmt, ast.Expr):
        return None
    start, end = ctx.span(stmt)
    line_start = ctx.line_starts[ctx.line_of(start) - 1]
    next_line = ctx.line_of(end)
    after = ctx.source[end:ctx.line_starts[next_line] if next_line < len(ctx.line_starts) else None].strip()
    alone = not ctx.source[line_start:start].strip() and (not after or after.startswith("#"))
    return stmt if alone else None


def guard_name(target: Target) -> str:
    """The function that asks whether the target's device is there (`torch.accelerator.is_available`)."""
    return target.device_guard or target.namespace + ".is_available"


def device_guard(ctx: FileContext, at: Optional[int] = None) -> str:
    """The question as source text, with the file's spelling of torch (for code at line `at`)."""
    return ctx.spell(guard_name(ctx.target), at) + "()"


def guard_value(ctx: FileContext, span: Span, absent: str, r: Code) -> None:
    """`(<value> if <device question> else <absent>)` around a span of source."""
    start, end = span
    ctx.insert(start, "(", r, quiet=True)
    ctx.insert(end, f" if {device_guard(ctx, ctx.line_of(start))} else {absent})", r, quiet=True)


def guard_statement(ctx: FileContext, stmt: Located, r: Code, message: str = "", quiet: bool = False) -> None:
    """`if <device question>: ` in front of a statement that has its lines to itself (once, whichever
    rule asks first)."""
    start, text = ctx.span(stmt)[0], f"if {device_guard(ctx, stmt.lineno)}: "
    if not any(e.start == e.end == start and e.text == text for e in ctx.edits_within(start, start)):
        ctx.insert(start, text, r, message, quiet=quiet)


def guard_device_call(ctx: FileContext, ref: Ref, res: Resolution, r: Code) -> None:
    """A call that fails on a host without a device runs only when there is one (target's needs_device):
    a statement of its own gets `if <namespace>.is_available(): `; a value becomes
    `(call if <namespace>.is_available() else <absent>)`; a value without a stand-in ("!") is reported."""
    call = cast(ast.Call, _call_of(ref))   # needs_guard asked for a call
    absent = ctx.target.needs_device[res.new if res.kind == MAP else res.qualname]
    quote = _fstring_quote(ctx, call)
    if quote:
        absent = in_fstring(absent, quote)
    guard = device_guard(ctx, call.lineno)
    start, end = ctx.span(call)
    stmt = statement_alone(ctx, call)
    if stmt is not None and (stmt.value is call or absent == "!"):
        start, end = ctx.span(stmt)
        guard_statement(ctx, stmt, r, quiet=True)
        how = "runs only where there is a device"
    elif absent == "!":  # the rename stands; the call is reported
        ctx.note_change((start, end), r, res.message if res.kind == MAP else "", res.category)
        ctx.report(call, r, ADVICE, f"fails where there is no device and has no stand-in: guard it with {guard}")
        return
    else:
        guard_value(ctx, (start, end), absent, r)
        how = f"is {absent} where there is no device"
    message = res.message if res.kind == MAP else ""
    ctx.note_change((start, end), r, (message + "; " if message else "") + how, res.category)


TENSOR_TYPE_NAME = re.compile(r"torch\.cuda\.[A-Za-z0-9]*Tensor")


@checker(codes.TP118, nodes=(ast.Constant,), triggers=("cuda",))  # names "torch.cuda.*Tensor"
def tensor_type_string(node: ast.Constant, ctx: FileContext) -> None:
    if not (isinstance(node.value, str) and TENSOR_TYPE_NAME.fullmatch(node.value)):
        return
    res = ctx.api.resolve(node.value)
    if res is None:
        return
    r = codes.TP118
    start, end = ctx.span(node)
    if res.kind == MAP and ctx.source[start + 1:end - 1] == node.value and ctx.source[start] in "'\"":
        ctx.replace((start + 1, end - 1), res.new, r, res.message, res.category, shown=(node.value, res.new))
    else:
        report_unconverted(ctx, node, res, r)
