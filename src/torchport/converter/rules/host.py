"""Targets that may run on the CPU (cpu, and accelerator on a host without one): code that *requires*
CUDA, as opposed to code that asks about it.

`if torch.cuda.is_available():` is a question: CPU torch answers "no" and the project's CPU branch runs
(the cpu target keeps such questions).  `assert torch.cuda.is_available()` and
`assert n <= torch.cuda.device_count()` are requirements (true only where CUDA is there: `without_cuda`; a
conditional assert that holds on the CPU stays): on the CPU they fail, although everything the
converted program does runs there (yolox's distributed worker, on gloo).
"""
from __future__ import annotations

import ast
import operator
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Optional, Union, cast

from ...core import codes, finding
from ...core.finding import ADVICE, UNSUPPORTED
from ...kb.packages import packages
from ..checkers import Phase, checker
from ..flow import sources_through_self, statement_lists
from ..guards import cuda_build_probe, exits
from .api import REFERENCE_CODES
from .devices import PLAIN_DEVICE, asks_for_cuda, is_device_valued

if TYPE_CHECKING:
    from ...core.finding import Finding
    from ...kb.packages import Package
    from ..context import FileContext, Located

# (a test that asks whether CUDA is there, the nodes that run only when it says yes, how to name them)
Guarded = tuple[ast.expr, Sequence[Union[ast.stmt, ast.expr]], str]


@checker(codes.TP209, nodes=(ast.Assert, ast.If), triggers=("is_available", "device_count", "is_initialized"),
         needs=("cuda",))  # what it asks about is torch.cuda
def cuda_requirement(node: ast.Assert | ast.If, ctx: FileContext) -> None:
    if not (ctx.target.host or not ctx.target.device):
        return
    r = codes.TP209
    if not asks_for_cuda(ctx, node.test):
        return
    if isinstance(node, ast.Assert) and without_cuda(ctx, node.test) is False:
        ctx.replace(node, "pass", r, "an assertion that CUDA is there fails on the CPU")
    elif isinstance(node, ast.If) and node.body and isinstance(node.body[0], ast.Raise) \
            and without_cuda(ctx, node.test) is True:
        ctx.report(node.test, r, ADVICE, "raises when there is no device, which is the case on the CPU: "
                                         "remove the check where the program may run on the CPU")


UNKNOWN = object()   # without_cuda: a value the code alone does not tell
# what CPU torch answers to the questions whether CUDA is there
_ANSWERS = {"torch.cuda.is_available": False, "torch.cuda.device_count": 0, "torch.cuda.is_initialized": False}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], object]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge}
# `<count> >= n`, `n <= <count>`, `<count> == n`: a count asked to be at least (or exactly) some number
_AT_LEAST = (ast.Gt, ast.GtE, ast.Eq)
_AT_MOST = (ast.Lt, ast.LtE, ast.Eq)


def without_cuda(ctx: FileContext, test: ast.expr) -> object:
    """The truth of a test where CUDA is not there (CPU torch: is_available() False, device_count() 0): True or
    False when that alone decides it, else UNKNOWN.  `torch.cuda.is_available()` and `n <= torch.cuda.device_count()`
    are False (a requirement: the test holds only with CUDA); `not (use_kernel and not torch.cuda.is_available())`
    and `torch.cuda.is_available() or not use_kernel` are UNKNOWN (they hold on the CPU where the project asks for
    no CUDA)."""
    value = _value_without_cuda(ctx, test)
    return UNKNOWN if value is UNKNOWN else bool(value)


def _value_without_cuda(ctx: FileContext, node: ast.expr) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        return _ANSWERS.get(ctx.qualname(node.func) or "", UNKNOWN)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        value = _value_without_cuda(ctx, node.operand)
        return UNKNOWN if value is UNKNOWN else not value
    if isinstance(node, ast.BoolOp):
        values = [_value_without_cuda(ctx, v) for v in node.values]
        deciding = not isinstance(node.op, ast.And)   # `False and x`, `True or x`
        decided = next((v for v in values if v is not UNKNOWN and bool(v) == deciding), UNKNOWN)
        if decided is not UNKNOWN or any(v is UNKNOWN for v in values):
            return decided
        return values[-1]
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _compared_without_cuda(ctx, node)
    return UNKNOWN


def _compared_without_cuda(ctx: FileContext, node: ast.Compare) -> object:
    left, right, op = node.left, node.comparators[0], node.ops[0]
    a, b = _value_without_cuda(ctx, left), _value_without_cuda(ctx, right)
    compare = _COMPARE.get(type(op))
    if compare is not None and a is not UNKNOWN and b is not UNKNOWN:
        try:
            return compare(a, b)
        except TypeError:
            return UNKNOWN
    if compare is None:
        return UNKNOWN

    def count(side: ast.expr, value: object) -> bool:
        return value is not UNKNOWN and isinstance(side, ast.Call) and ctx.qualname(side.func) == "torch.cuda.device_count"
    # a count compared with a number the code does not tell: `device_count() >= n_gpus`, `n_gpus <= device_count()`
    # ask for at least some devices
    if count(left, a) and isinstance(op, _AT_LEAST) or count(right, b) and isinstance(op, _AT_MOST):
        return False
    return UNKNOWN


SPAWNS = {"torch.multiprocessing.spawn": 2, "torch.multiprocessing.start_processes": 2,
          "torch.multiprocessing.spawn.spawn": 2, "torch.multiprocessing.spawn.start_processes": 2}
DEVICE_COUNTS = {"torch.cuda.device_count"}


@checker(codes.TP214, nodes=(ast.Call,), triggers=("spawn", "start_processes"), needs=("cuda",))
def device_count_as_processes(node: ast.Call, ctx: FileContext) -> None:
    if not (ctx.target.host or not ctx.target.device):   # cpu, and accelerator where there is none
        return
    position = SPAWNS.get(ctx.qualname(node.func) or "")
    if position is None:
        return
    given = [k.value for k in node.keywords if k.arg == "nprocs"] or node.args[position:position + 1]
    for value in given:
        for leaf in sources_through_self(ctx.parents(), value):
            if isinstance(leaf, ast.Call) and ctx.qualname(leaf.func) in DEVICE_COUNTS and id(leaf) not in ctx.handled:
                ctx.handled.add(id(leaf))
                if ctx.target.host:
                    ctx.replace(leaf, "1", codes.TP214, "one process on the CPU: CUDA's device count is 0 here, and "
                                                       "spawn would start none")
                else:   # the count is rewritten to the accelerator's; where there is none, one process
                    start, end = ctx.span(leaf)
                    ctx.insert(start, "max(", codes.TP214, quiet=True)
                    ctx.insert(end, ", 1)", codes.TP214, "at least one process: where there is no accelerator the "
                                                          "count is 0, and spawn would start none", shown="max(..., 1)",
                               anchor=start)


# Said of a name the target lacks in what a kept question guards (migrate lists it to review: it does not run)
KEPT_BRANCH = "guarded by a CUDA question convert kept"
# the codes of names the target lacks (torch.cuda.X, torch._C._cuda_X, a CUDA-only package's names)
_REFERENCES = frozenset(c.id for c in REFERENCE_CODES)


def _inside(f: Finding, node: Located) -> bool:
    start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
    return start <= (f.line, f.col) < end


@checker(codes.TP210, phase=Phase.FILE, triggers=("is_available", "device_count", "cuda"), needs=("cuda",))
def guard_keeps_cuda_branch(tree: ast.Module, ctx: FileContext) -> None:
    if ctx.target.host:
        return  # the host target keeps every such question anyway
    left = [f for f in ctx.findings if f.action == UNSUPPORTED and f.rule in _REFERENCES]
    libraries = _mentions_cuda_path_package(ctx)
    if not left and not libraries:
        return
    by_type = ctx.nodes_by_type()
    for node in sorted((n for kind in _QUESTION_NODES for n in by_type.get(kind, ())),
                       key=lambda n: (n.lineno, n.col_offset)):
        for test, parts, where in _questions_and_what_they_guard(ctx, node):
            blocking = [f for f in left for part in parts if _inside(f, part)]
            package = _cuda_path_package(ctx, parts) if libraries and not blocking else None
            if not blocking and package is None:
                continue
            start, end = ctx.span(test)
            ctx.drop_edits_within(start, end)
            if package is not None:
                ctx.report(test, codes.TP210, UNSUPPORTED,
                           f"kept: {where} is the CUDA path of {package[0].name} ({package[1]}), which would run "
                           f"on {ctx.target.name} if the question were rewritten; {package[0].advice(ctx.target.name)[0]}")
                continue
            ctx.report(test, codes.TP210, UNSUPPORTED,
                       f"kept: {where} calls {blocking[0].old} (line {blocking[0].line}), which {ctx.target.name} "
                       "lacks; convert that, then this test")
            line = ctx.line_of(start)
            ctx.findings[:] = [replace(f, message=f"{f.message} ({KEPT_BRANCH} at line {line}: on {ctx.target.name} "
                                                  "it answers no, so this line does not run there)",
                                       reasons=f.reasons + (finding.KEPT_BRANCH,))
                               if f in blocking and finding.KEPT_BRANCH not in f.reasons else f for f in ctx.findings]


_QUESTION_NODES = (ast.If, ast.IfExp, ast.BoolOp)
# the words of any question whether CUDA is there (an alias of is_available names no "cuda"): a test without one
# is not read further
_QUESTION_WORDS = ("cuda", "is_available", "device_count", "is_initialized")


def _may_ask(ctx: FileContext, test: ast.expr) -> bool:
    text = ctx.text(test)
    return any(word in text for word in _QUESTION_WORDS)


def _questions_and_what_they_guard(ctx: FileContext, node: Union[ast.If, ast.IfExp, ast.BoolOp]) -> list[Guarded]:
    """[(a test that asks whether CUDA is there, the nodes that run only when it says yes, how to name them)]:
    an if's or conditional's branch, and in `a and b` the operands after the question (`torch.cuda.is_available()
    and torch.cuda.get_device_capability() >= (8, 0)`: rewriting the question alone would run the CUDA call on
    the target, where before the `and` stopped at the question).  A test whether a device or tensor is CUDA's
    (`device.type == "cuda"`, `x.is_cuda`) is such a question too."""
    if isinstance(node, ast.If) and _negated(node.test) and not node.orelse and node.body \
            and exits(node.body[-1]) and _may_ask(ctx, node.test) and asks_for_cuda(ctx, node.test):
        holder = cast(ast.AST, ctx.parents().get(id(node)))   # a statement has a parent
        block: list[ast.stmt] = next((b for b in statement_lists(holder) if node in b), [])
        after = block[block.index(node) + 1:] if node in block else []   # `if not available: return` ... the rest
        return [(node.test, after, "the code after its early exit")] if after else []
    if isinstance(node, (ast.If, ast.IfExp)) and _may_ask(ctx, node.test) \
            and (asks_for_cuda(ctx, node.test) or _asks_cuda_type(node.test)):
        return [(node.test, node.body if isinstance(node.body, list) else [node.body], "its branch")]
    if isinstance(node, ast.BoolOp):
        conjunction = isinstance(node.op, ast.And)   # `q and x`; `not q or x`: x runs only where q is true
        asking = next((i for i, v in enumerate(node.values) if _negated(v) != conjunction
                       and _may_ask(ctx, v) and asks_for_cuda(ctx, v)), None)
        if asking is not None and asking + 1 < len(node.values):
            return [(node.values[asking], node.values[asking + 1:],
                     f"the `{'and' if conjunction else 'or'}` after it")]
    return []


def _negated(test: ast.expr) -> bool:
    return isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)


def _asks_cuda_type(test: ast.expr) -> bool:
    """Does a test ask whether a device or tensor is CUDA's (`x.is_cuda`, `device.type == "cuda"`,
    `"cuda" in str(device)`), or whether this is a CUDA build (a hasattr probe of a CUDA-only name)?"""
    for n in ast.walk(test):
        if isinstance(n, ast.Attribute) and n.attr == "is_cuda":
            return True
        if cuda_build_probe(n):
            return True   # hasattr(torch._C, "_cuda_clearCublasWorkspaces"): only a CUDA build says yes
        if isinstance(n, ast.Compare):
            operands = [n.left, *n.comparators]
            if any(isinstance(o, ast.Constant) and isinstance(o.value, str) and PLAIN_DEVICE.match(o.value)
                   for o in operands) and any(is_device_valued(o) for o in operands):
                return True
    return False


def _mentions_cuda_path_package(ctx: FileContext) -> bool:
    """Does the file's text name a package whose use makes a branch CUDA's (kb/packages.toml cuda_path), or one of
    their markers?  (Cheap: the walk for such branches runs only then.)"""
    pattern = _cuda_path_words()
    return pattern is not None and pattern.search(ctx.source) is not None


@lru_cache(maxsize=1)
def _cuda_path_words() -> Optional[re.Pattern[str]]:
    words = {w for p in packages().packages if p.cuda_path
             for w in (*(i.split(".")[0] for i in p.imports if p.flag_imports), *p.markers)}
    return re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, words))) + r")\b") if words else None


def _cuda_path_package(ctx: FileContext, parts: Sequence[ast.AST]) -> Optional[tuple[Package, str]]:
    """(the package, what shows it) of the first use in `parts` of a package whose use makes a branch CUDA's: an
    import of it, a name imported from it, or one of its markers ("CUDAExecutionProvider"); else None."""
    kb = packages()

    def cuda_path(pkg: Optional[Package]) -> Optional[Package]:
        return pkg if pkg is not None and pkg.cuda_path else None

    for part in parts:
        for n in ast.walk(part):
            if isinstance(n, ast.Import):
                found = next((p for p in (cuda_path(kb.by_import(a.name)) for a in n.names) if p), None)
                shown = f"import {n.names[0].name}"
            elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
                found, shown = cuda_path(kb.by_import(n.module)), f"from {n.module} import ..."
            elif isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load):
                name = ctx.qualname(n)
                found, shown = (cuda_path(kb.by_import(name)), name) if name else (None, "")
            elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                found, shown = cuda_path(kb.by_marker(n.value)), repr(n.value)
            else:
                continue
            if found is not None:
                return found, f"line {getattr(n, 'lineno', 0)}: {shown}"
    return None
