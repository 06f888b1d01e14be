"""Collective backends: "nccl" -> the target's backend, in backend positions only.

A value that chooses the backend (`init_process_group("nccl")`, `backend="nccl"`, a default, an assignment
that reaches one) becomes the target's backend.  A comparison with NCCL's name (`backend == "nccl"`,
`dist.get_backend() != dist.Backend.NCCL`, `backend in ("nccl", "gloo")`, `case "nccl":`) is a question, and
converts as the target's device questions do (`question_policy`):

- where the target's collectives are gloo (cpu, mps), the question keeps its words and answers no: gloo is
  the backend the project's own non-NCCL path already uses, so `backend == "gloo"` would send every gloo run
  into the NCCL branch (pytorch-ignite 0.5.5 native.py: `if backend == NCCL and not torch.cuda.is_available():
  raise`, `barrier(device_ids=[torch.cuda.current_device()])`);
- where the backend is chosen at run time (accelerator), it compares with that backend only where there is an
  accelerator, and answers no elsewhere (there the backend is gloo, as on cpu);
- elsewhere (npu, mlu, musa, xpu) it asks about the target's backend, as `torch.npu.is_available()` asks about
  its device.

A name bound only to NCCL's name that a comparison reads as such (`NCCL = dist.Backend.NCCL` ... `if backend ==
NCCL`) is a question's word too: on the first two kinds of target it keeps its value, its reads that choose a
backend (`init_process_group(NCCL)`) are rewritten where they are, and its other reads are reported.
"""
from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any, Optional, cast

from ...core import codes
from ...core.finding import ADVICE
from ..checkers import checker
from ..flow import ScopeNode, binding_scope, lookups, loop_slot, reads, scope_of, sources, use_site
from .api import device_guard, guard_value
from .devices import last_name, option_name, param_defaults

if TYPE_CHECKING:
    from ...backends import Target
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


NCCL_ATTRIBUTES = {"torch.distributed.Backend.NCCL", "torch.distributed.distributed_c10d.Backend.NCCL"}
_MATCH_VALUE: Any = getattr(ast, "MatchValue", None)   # `case "nccl":` (Python 3.10+; none on 3.9)
_MATCH: Any = getattr(ast, "Match", None)
_MATCH_NODES: tuple[type[ast.AST], ...] = (_MATCH_VALUE,) if _MATCH_VALUE is not None else ()

# question_policy's answers: how a comparison with NCCL's name converts on a target
KEEP, GUARD, REWRITE = "keep", "guard", "rewrite"


def question_policy(target: Target) -> str:
    """KEEP where the target's collectives are gloo (cpu, mps: gloo is also the project's own non-NCCL backend,
    so a question rewritten to it could not tell the two paths apart), GUARD where the backend is chosen at run
    time (accelerator: gloo where there is no accelerator), REWRITE elsewhere (hccl, cncl, mccl, xccl)."""
    if target.backend_expr:
        return GUARD
    return KEEP if target.backend.lower() == "gloo" else REWRITE


def names_nccl(ctx: FileContext, node: ast.AST) -> bool:
    """Is `node` NCCL's name: a "nccl" string (any case) or `Backend.NCCL`?"""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.lower() == "nccl"
    return isinstance(node, ast.Attribute) and node.attr == "NCCL" and ctx.qualname(node) in NCCL_ATTRIBUTES


def question_of(ctx: FileContext, node: ast.AST) -> Optional[ast.AST]:
    """The comparison (or `case` pattern) `node` is an operand of: itself, or an element of the sequence an `in`
    looks in (`backend in ("nccl", "gloo")`); else None."""
    parents = ctx.parents()
    parent = parents.get(id(node))
    if isinstance(parent, (ast.Tuple, ast.List, ast.Set)):
        holder = parents.get(id(parent))
        if isinstance(holder, ast.Compare) and any(
                c is parent and isinstance(op, (ast.In, ast.NotIn)) for op, c in zip(holder.ops, holder.comparators)):
            return holder
        return None
    if isinstance(parent, ast.Compare) or _MATCH_VALUE is not None and isinstance(parent, _MATCH_VALUE):
        return parent
    return None


def _operands(compare: ast.Compare) -> list[ast.expr]:
    """The operands of a comparison, with the elements of the sequences an `in` looks in."""
    out: list[ast.expr] = [compare.left]
    for op, c in zip(compare.ops, compare.comparators):
        out += c.elts if isinstance(op, (ast.In, ast.NotIn)) and isinstance(c, (ast.Tuple, ast.List, ast.Set)) \
            else [c]
    return out


def subjects(ctx: FileContext, node: ast.AST, question: ast.AST) -> list[ast.expr]:
    """What a question compares NCCL's name `node` with: the other operands, or the `match`'s subject."""
    if isinstance(question, ast.Compare):
        return [o for o in _operands(question) if o is not node]
    parents = ctx.parents()
    holder = parents.get(id(question))
    while holder is not None and not (_MATCH is not None and isinstance(holder, _MATCH)):
        holder = parents.get(id(holder))
    return [holder.subject] if holder is not None else []


def question_text(ctx: FileContext, at: Optional[int] = None) -> str:
    """What NCCL's name in a question at line `at` becomes (on a target whose questions are rewritten or guarded)."""
    new = cast(str, backend_text(ctx, "nccl", at))   # "nccl" always has its text
    if question_policy(ctx.target) == GUARD:   # no accelerator: the backend is gloo, and the answer is no
        return f"({new} if {device_guard(ctx, at)} else None)"
    return new


DEFAULT_ADVICE = ("default left as is: an expression default runs when the module is imported; use None and "
                  "choose the backend inside the function")
CASE_ADVICE = ("kept: a case pattern cannot hold the expression that names the backend, so this case matches only "
               "where the backend is NCCL; compare with == instead, which convert rewrites")
_IDENTITY = re.compile(r"\bis(\s+not)?\b")


def _equality_for_identity(ctx: FileContext, node: ast.AST, r: Code) -> None:
    """`backend is dist.Backend.NCCL` -> `backend == "hccl"` when NCCL's name there is rewritten (`is` with a
    string literal is a SyntaxWarning, and an identity no string built at run time has)."""
    compare = ctx.parents().get(id(node))
    if not isinstance(compare, ast.Compare):
        return
    operands = [compare.left, *compare.comparators]
    at = next((i for i, o in enumerate(operands) if o is node), None)
    if at is None:
        return
    for i in (at - 1, at):
        if 0 <= i < len(compare.ops) and isinstance(compare.ops[i], (ast.Is, ast.IsNot)):
            start, end = ctx.span(operands[i])[1], ctx.span(operands[i + 1])[0]
            m = _IDENTITY.search(ctx.source, start, end)
            if m is not None:
                ctx.replace((m.start(), m.end()), "!=" if m.group(1) else "==", r, quiet=True)


class KeptNames:
    """Names bound only to NCCL's name that a comparison reads as such (`NCCL = dist.Backend.NCCL` ... `backend ==
    NCCL`), on a target whose questions are not rewritten to its backend (KEEP, GUARD): their values stay."""

    def __init__(self, ctx: FileContext) -> None:
        self.values: set[int] = set()                        # id() of the values kept
        self.names: list[tuple[ast.AST, str, ast.expr]] = []  # (scope, name, a value) of each name
        self.settled = False
        if question_policy(ctx.target) == REWRITE:
            return
        parents, seen = ctx.parents(), set()
        for compare in ctx.nodes_by_type().get(ast.Compare, ()):
            operands = _operands(cast(ast.Compare, compare))
            if any(names_nccl(ctx, o) for o in operands):
                continue   # `b == "nccl"`: b is what is asked about
            for operand in operands:
                if not (isinstance(operand, ast.Name) and isinstance(operand.ctx, ast.Load)) \
                        or _is_backend_valued(operand) and "nccl" not in operand.id.lower():
                    continue   # `backend == dist.get_backend()`: a backend variable is asked about, not NCCL's name
                leaves = sources(parents, operand)
                scope = binding_scope(parents, operand)
                if scope is None or not leaves or not all(names_nccl(ctx, v) for v in leaves) \
                        or (id(scope), operand.id) in seen:
                    continue
                seen.add((id(scope), operand.id))
                self.values.update(id(v) for v in leaves)
                self.names.append((scope, operand.id, leaves[0]))


def _backend_default(ctx: FileContext, use: ast.expr) -> bool:
    """Is `use` the default of a backend parameter (`def init(backend=NCCL)`)?"""
    holder = ctx.parents().get(id(use))
    if not isinstance(holder, ast.arguments):
        return False
    positional = holder.posonlyargs + holder.args
    pairs = [*zip(positional[len(positional) - len(holder.defaults):], holder.defaults),
             *zip(holder.kwonlyargs, holder.kw_defaults)]
    return any(d is use and BACKEND_NAME.search(a.arg) for a, d in pairs)


def kept_names(ctx: FileContext) -> KeptNames:
    found: Optional[KeptNames] = ctx.memo.get("kept nccl names")
    if found is None:
        found = ctx.memo["kept nccl names"] = KeptNames(ctx)
    return found


def kept_value(ctx: FileContext, node: ast.AST) -> bool:
    """Is `node` the value of a kept name (KeptNames)?  Its reads are settled then (once per file)."""
    kept = kept_names(ctx)
    if id(node) not in kept.values:
        return False
    if not kept.settled:
        kept.settled = True
        _settle_reads(ctx, kept)
    return True


def _settle_reads(ctx: FileContext, kept: KeptNames) -> None:
    """The reads of kept names: one that chooses a backend becomes the target's backend, one that asks a question
    follows question_policy, any other is reported at the name's value."""
    guard = question_policy(ctx.target) == GUARD
    for scope, name, value in kept.names:
        others: list[int] = []
        for use in reads(scope, name):
            if id(use) in ctx.handled:
                continue
            ctx.handled.add(id(use))
            question = question_of(ctx, use)
            if question is not None:
                if guard and isinstance(question, ast.Compare):
                    ctx.replace(use, question_text(ctx, use.lineno), codes.TP301, f"{name} names NCCL: the question asks "
                                "about the accelerator's backend, and answers no where there is none")
                    _equality_for_identity(ctx, use, codes.TP301)
            elif backend_slot(ctx, use, questions=False) or _backend_default(ctx, use):
                if guard and _backend_default(ctx, use):
                    ctx.report(use, codes.TP301, ADVICE, DEFAULT_ADVICE)
                    continue
                ctx.replace(use, cast(str, backend_text(ctx, "nccl", use.lineno)), codes.TP301,
                            f"{name} names NCCL, and comparisons keep asking about it: here it chooses the backend")
            else:
                others.append(use.lineno)
        if others:
            code = codes.TP302 if isinstance(value, ast.Attribute) else codes.TP303
            lines = ", ".join(map(str, sorted(set(others))))
            asks = "ask about the accelerator's backend where there is one" if guard else \
                f"keep asking about NCCL (on {ctx.target.name} the backend is gloo: they answer no)"
            ctx.report(value, code, ADVICE, f"kept: comparisons read {name} as NCCL's name and {asks}; check whether "
                       f"its other uses (line {lines}) should be {backend_text(ctx, 'nccl')}")


def backend_text(ctx: FileContext, value: str, at: Optional[int] = None) -> Optional[str]:
    """New source text for a backend string literal (at line `at`), or None when it is not a CUDA backend."""
    t = ctx.target
    if value.lower() == "nccl":
        if t.backend_expr:
            return t.backend_expr.format(torch=ctx.torch_name(at))
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
    """Rewrite the "nccl" strings an expression can take its value from (see flow.sources); the value of a name
    that questions keep (KeptNames) stays, and that name, read here to choose the backend, is rewritten."""
    done = False
    parents = ctx.parents()
    if node is not None and kept_names(ctx).values:
        for name in _reads_of_kept(ctx, node):
            if id(name) not in ctx.handled:   # (kept_value settles the reads of kept names: questions among them)
                ctx.handled.add(id(name))
                ctx.replace(name, cast(str, backend_text(ctx, "nccl", name.lineno)), r)
                done = True
    for leaf in sources(parents, node):
        if not kept_value(ctx, leaf):
            done = _rewrite_backend_leaf(ctx, leaf, r) or done
    return done


def _reads_of_kept(ctx: FileContext, node: ast.expr) -> list[ast.Name]:
    """The names an expression takes its value from (as flow.sources: through `a if c else b`, `a or b`, literal
    sequences) whose values are all kept (KeptNames)."""
    if isinstance(node, ast.IfExp):
        return _reads_of_kept(ctx, node.body) + _reads_of_kept(ctx, node.orelse)
    if isinstance(node, (ast.BoolOp, ast.Tuple, ast.List, ast.Set)):
        return [n for part in (node.values if isinstance(node, ast.BoolOp) else node.elts)
                for n in _reads_of_kept(ctx, part)]
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        leaves = sources(ctx.parents(), node)
        return [node] if leaves and all(kept_value(ctx, v) for v in leaves) else []
    return []


def _rewrite_backend_leaf(ctx: FileContext, node: ast.expr, r: Code) -> bool:
    if id(node) in ctx.handled or not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return False
    new = backend_text(ctx, node.value, node.lineno)
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


def backend_slot(ctx: FileContext, expr: ast.AST, questions: bool = True) -> bool:
    """Is `expr`'s value used as a collective backend (through flow.use_site, and loops over it)?  With
    `questions=False`, only where it chooses one: a comparison with a backend asks about it."""
    parents = ctx.parents()
    child, parent = use_site(parents, expr)
    looped = loop_slot(parents, child, parent,
                       lambda use: "backend" if backend_slot(ctx, use, questions) else "", ("backend",))
    if looped is not None:
        return bool(looped)
    if isinstance(parent, ast.keyword):
        return bool(parent.arg and BACKEND_NAME.search(parent.arg))
    if isinstance(parent, ast.Call):
        pos = BACKEND_CALLS.get(ctx.qualname(parent.func))
        return pos is not None and len(parent.args) > pos and parent.args[pos] is child
    if isinstance(parent, ast.Compare):
        return questions and any(_is_backend_valued(o) for o in (parent.left, *parent.comparators) if o is not child)
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
             ast.IfExp, ast.For, *_MATCH_NODES), triggers=("nccl",))
def backend_strings(  # noqa: C901
        node: ast.Call | ast.Compare | ast.Assign | ast.AnnAssign | ast.FunctionDef | ast.AsyncFunctionDef | ast.Dict | ast.IfExp | ast.For, ctx: FileContext) -> None:
    r = codes.TP301
    if _MATCH_VALUE is not None and isinstance(node, _MATCH_VALUE):
        _backend_question(ctx, node.value, node, r)
    elif isinstance(node, ast.Call):
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
        for operand in _operands(node):
            if isinstance(operand, ast.Constant):
                _backend_question(ctx, operand, node, r)
        operands = [node.left, *node.comparators]
        for left, right in zip(operands, operands[1:]):
            other = right if _is_backend_valued(left) else left if _is_backend_valued(right) else None
            if other is None or names_nccl(ctx, other):
                continue   # NCCL's own name: above, and TP302
            if question_policy(ctx.target) == KEEP:
                ctx.handled.update(id(n) for n in ast.walk(other))   # the question stays
            else:
                rewrite_backend(ctx, other, r)   # `backend == NCCL_NAME`: the name's values (or KeptNames)
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
                ctx.report(default, r, ADVICE, DEFAULT_ADVICE)
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


def _backend_question(ctx: FileContext, node: ast.expr, question: ast.AST, r: Code) -> None:
    """A "nccl" string that a comparison or `case` compares with (question_policy): kept where the target keeps
    such questions; elsewhere rewritten where what it is compared with is a backend (`get_backend()`, a
    backend variable), other strings being left to TP303."""
    if id(node) in ctx.handled or not (isinstance(node, ast.Constant) and names_nccl(ctx, node)):
        return
    policy = question_policy(ctx.target)
    if policy == KEEP:
        ctx.handled.add(id(node))   # `get_backend() == "nccl"` stays: it answers no where the backend is gloo
        return
    if not any(_is_backend_valued(s) for s in subjects(ctx, node, question)):
        return
    ctx.handled.add(id(node))
    if policy == GUARD and not isinstance(question, ast.Compare):   # a `case` pattern holds no expression
        ctx.report(node, r, ADVICE, CASE_ADVICE)
        return
    text = ctx.text(node)
    new = question_text(ctx, node.lineno)
    if policy == REWRITE and text[:1] in "'\"":
        new = text[0] + new[1:-1] + text[-1]   # the literal's own quotes
    elif text[:1] not in "'\"":
        return   # prefixed or concatenated literal: leave it
    ctx.replace(node, new, r)
    _equality_for_identity(ctx, node, r)


@checker(codes.TP302, nodes=(ast.Call, ast.Attribute), triggers=("nccl",))
def nccl_availability(node: ast.Call | ast.Attribute, ctx: FileContext) -> None:
    r = codes.TP302
    if isinstance(node, ast.Call):
        q = ctx.qualname(node.func)
        if q == "torch.distributed.is_nccl_available" and not node.args and not node.keywords:
            backend = backend_text(ctx, "nccl", node.lineno)
            head = ctx.text(node.func)
            new_head = head[: -len("is_nccl_available")] + "is_backend_available" \
                if head.endswith("is_nccl_available") else ctx.spell("torch.distributed.is_backend_available", node.lineno)
            ctx.replace(node, f"{new_head}({backend})", r)
        return
    if id(node) in ctx.handled or not names_nccl(ctx, node) or kept_value(ctx, node):
        return
    ctx.handled.add(id(node))
    question = question_of(ctx, node)
    policy = question_policy(ctx.target)
    if question is None or policy == REWRITE:   # a value, or a question about the vendor's backend
        ctx.replace(node, cast(str, backend_text(ctx, "nccl", node.lineno)), r)   # "nccl" always has its text
        _equality_for_identity(ctx, node, r)
    elif policy == GUARD and isinstance(question, ast.Compare):
        ctx.replace(node, question_text(ctx, node.lineno), r, "a question: it asks about the accelerator's backend, and answers "
                    "no where there is none (there the backend is gloo)")
        _equality_for_identity(ctx, node, r)
    elif policy == GUARD:
        ctx.report(node, r, ADVICE, CASE_ADVICE)
    # KEEP: a question, which answers no where the backend is gloo (question_policy)


@checker(codes.TP303, nodes=(ast.Constant,), triggers=("nccl",))
def nccl_other(node: ast.Constant, ctx: FileContext) -> None:
    if id(node) in ctx.handled or not isinstance(node.value, str) or node.value.lower() != "nccl" \
            or isinstance(ctx.parent, ast.Expr) or kept_value(ctx, node):
        return
    if question_policy(ctx.target) == KEEP and question_of(ctx, node) is not None:
        return   # a question (`x == "nccl"`): it keeps its words where the backend is gloo
    ctx.report(node, codes.TP303, ADVICE,
               f'"nccl" outside a recognised backend position: check whether it should be {backend_text(ctx, "nccl", node.lineno)}')


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
