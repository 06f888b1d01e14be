"""Local data flow for the rules: which values an expression can have, where a name is read, and which
value reaches a read.

Scopes are the module, functions and lambdas; a name belongs to the innermost scope that binds it
(closures read it from an outer one).  Bindings seen: `name = value` (also annotated and `:=`) and
`for name in <literal sequence>`, each element of which is a value.  Nothing wider (attributes,
call results, other files): a name bound in a way not seen here just has fewer known values.

`reaching_value` is the one flow-sensitive question: the value a name or a dotted attribute
(`args.cuda`, `self.use_gpu`) holds where it is read, when one plain assignment can be told to reach it.
"""
from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Callable, Optional, Union, cast

if TYPE_CHECKING:  # typing.TypeGuard is Python 3.10+; the annotation is never evaluated
    from typing import TypeGuard

SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
Parents = dict[int, ast.AST]   # {id(node): its parent}
Function = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]
ScopeNode = Union[ast.Module, Function]


def is_self_attribute(node: object) -> TypeGuard[ast.Attribute]:
    """`self.<attr>`."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def enclosing_class(parents: Parents, node: ast.AST) -> Optional[ast.ClassDef]:
    """The innermost class holding `node`, or None."""
    cls = parents.get(id(node))
    while cls is not None and not isinstance(cls, ast.ClassDef):
        cls = parents.get(id(cls))
    return cls


def scope_of(parents: Parents, node: ast.AST) -> Optional[ScopeNode]:
    """The innermost module, function or lambda holding `node`."""
    p = parents.get(id(node))
    while p is not None and not isinstance(p, SCOPES):
        p = parents.get(id(p))
    return p


# Fields that never hold a node of their own: names and constants, and the shared singletons of
# expression context (Load, Store) and operators (Add, Eq...), which have no single parent.
_NOT_CHILDREN = {"ctx", "op", "ops", "id", "attr", "name", "arg", "module", "level", "asname", "conversion",
                 "is_async", "kind", "type_comment"}
CHILD_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}   # ast class -> its child_fields (filled on first use)


def child_fields(cls: type[ast.AST]) -> tuple[str, ...]:
    """The fields of an ast class that can hold child nodes (computed once per class)."""
    found = CHILD_FIELDS.get(cls)
    if found is None:
        found = CHILD_FIELDS[cls] = tuple(f for f in cls._fields if f not in _NOT_CHILDREN
                                           and not (cls is ast.Constant and f == "value"))
    return found


def children(node: ast.AST) -> list[ast.AST]:
    """The child nodes of `node` (as ast.iter_child_nodes, less the shared context and operator nodes), without
    its generators: this walk is hot."""
    out: list[ast.AST] = []
    for name in CHILD_FIELDS.get(node.__class__) or child_fields(node.__class__):
        value = getattr(node, name, None)
        if isinstance(value, list):
            out += [item for item in value if isinstance(item, ast.AST)]
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


_NOT_OWN = (*FUNCTIONS, ast.ClassDef)


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a scope, without those of functions and classes nested in it."""
    stack = children(scope)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _NOT_OWN):
            stack += children(node)


def _parameters(scope: ast.AST) -> set[str]:
    if not isinstance(scope, FUNCTIONS):
        return set()
    a = scope.args
    return {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p is not None}


class _ScopeIndex:
    """One walk over a scope's own nodes, kept on the scope node: who is read, bound and assigned what.
    Built once per scope, so asking about every assignment of a long module stays linear."""

    def __init__(self, scope: ast.AST) -> None:
        self.loads: dict[str, list[ast.Name]] = {}   # name -> [Name nodes reading it]
        self.bound = set(_parameters(scope))
        self.values: dict[str, list[ast.expr]] = {}  # name -> [expressions it is bound to]
        self.nested: list[Function] = []            # functions and lambdas directly inside
        for node in _own_nodes(scope):
            if isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Load):
                    self.loads.setdefault(node.id, []).append(node)
                else:
                    self.bound.add(node.id)
            elif isinstance(node, FUNCTIONS):
                self.nested.append(node)
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.values.setdefault(t.id, []).append(node.value)
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)):
                if isinstance(node.target, ast.Name) and node.value is not None:
                    self.values.setdefault(node.target.id, []).append(node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                if isinstance(node.target, ast.Name) and isinstance(node.iter, (ast.Tuple, ast.List, ast.Set)):
                    self.values.setdefault(node.target.id, []).extend(node.iter.elts)


def _index(scope: ast.AST) -> _ScopeIndex:
    index: Optional[_ScopeIndex] = getattr(scope, "_torchport_index", None)
    if index is None:
        index = _ScopeIndex(scope)
        scope._torchport_index = index  # type: ignore[attr-defined]  # kept on the node (no ast field)
    return index


def values(scope: ast.AST, name: str) -> list[ast.expr]:
    """The expressions `name` is bound to in `scope` (loop elements one by one)."""
    return list(_index(scope).values.get(name, ()))


def binds(scope: ast.AST, name: str) -> bool:
    """Does `scope` bind `name` (parameter, assignment target, loop variable, import...)?"""
    return name in _index(scope).bound


def reads(scope: ast.AST, name: str) -> list[ast.Name]:
    """Name nodes reading `name` in `scope`, and in nested functions that do not bind it themselves."""
    out: list[ast.Name] = []
    stack: list[ast.AST] = [scope]
    while stack:
        index = _index(stack.pop())
        out += index.loads.get(name, ())
        stack += [f for f in index.nested if not binds(f, name)]
    return out


def binding_scope(parents: Parents, name_node: ast.Name) -> Optional[ScopeNode]:
    """The scope whose binding a Name read refers to, or None (a builtin, a global bound elsewhere)."""
    scope = scope_of(parents, name_node)
    while scope is not None:
        if binds(scope, name_node.id):
            return scope
        scope = scope_of(parents, scope)
    return None


def dict_literals(parents: Parents, expr: ast.AST) -> list[ast.Dict]:
    """The dict literals an expression is: itself, or what a local name is bound to."""
    if isinstance(expr, ast.Dict):
        return [expr]
    if isinstance(expr, ast.Name):
        scope = binding_scope(parents, expr)
        return [v for v in values(scope, expr.id) if isinstance(v, ast.Dict)] if scope is not None else []
    return []


def lookups(parents: Parents, mapping: ast.Dict) -> list[tuple[ast.expr, ast.expr]]:
    """[(lookup expression, key)] of a dict literal: `{...}[k]`, `{...}.get(k, ...)`, and the same
    through the local name it is assigned to."""
    holders: list[ast.expr] = [mapping]
    parent = parents.get(id(mapping))
    if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is mapping:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        scope = cast(ScopeNode, scope_of(parents, parent))   # an assignment is inside a module at least
        holders += [use for t in targets if isinstance(t, ast.Name) for use in reads(scope, t.id)]
    found: list[tuple[ast.expr, ast.expr]] = []
    for holder in holders:
        outer = parents.get(id(holder))
        if isinstance(outer, ast.Subscript) and outer.value is holder:
            found.append((outer, outer.slice))
        elif isinstance(outer, ast.Attribute) and outer.attr == "get":
            call = parents.get(id(outer))
            if isinstance(call, ast.Call) and call.func is outer and call.args:
                found.append((call, call.args[0]))
    return found


def sources(parents: Parents, expr: Optional[ast.expr], seen: Optional[set[int]] = None) -> list[ast.expr]:
    """The leaf expressions `expr` can take its value from: through local names, `a if c else b`,
    `a or b`, literal sequences, `[...] + [...]`, and lookups in a dict literal (`{...}[k]`,
    `{...}.get(k, default)`).  A leaf is whatever is not one of those (a literal, a call, ...)."""
    seen = set() if seen is None else seen
    if expr is None or id(expr) in seen:
        return []
    seen.add(id(expr))
    if isinstance(expr, ast.IfExp):
        parts = [expr.body, expr.orelse]
    elif isinstance(expr, ast.BoolOp):
        parts = expr.values
    elif isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        parts = expr.elts
    elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add) \
            and isinstance(expr.left, (ast.List, ast.Tuple, ast.Name, ast.BinOp, ast.IfExp)) \
            and not isinstance(expr.right, ast.Constant):
        parts = [expr.left, expr.right]
    elif isinstance(expr, ast.Subscript) and dict_literals(parents, expr.value):
        parts = [v for d in dict_literals(parents, expr.value) for v in d.values]
    elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "get" \
            and dict_literals(parents, expr.func.value):
        parts = [*(v for d in dict_literals(parents, expr.func.value) for v in d.values), *expr.args[1:2]]
    elif isinstance(expr, ast.Name) and isinstance(expr.ctx, ast.Load):
        scope = binding_scope(parents, expr)
        parts = values(scope, expr.id) if scope is not None else []
    else:
        return [expr]
    return [leaf for part in parts for leaf in sources(parents, part, seen)]


def sources_through_self(parents: Parents, expr: ast.expr) -> list[ast.expr]:
    """`sources`, and for a `self.<attr>` leaf the leaves of the values its class assigns to it (catalyst keeps
    its process count in `self.num_local_workers` and spawns in another method)."""
    out: list[ast.expr] = []
    for leaf in sources(parents, expr):
        if is_self_attribute(leaf):
            cls = enclosing_class(parents, leaf)
            assigned = [n.value for n in ast.walk(cls) if isinstance(n, ast.Assign) and any(
                is_self_attribute(t) and t.attr == leaf.attr for t in n.targets)] if cls is not None else []
            out += [v for a in assigned for v in sources(parents, a)]
        else:
            out.append(leaf)
    return out


def use_site(parents: Parents, expr: ast.AST) -> tuple[ast.AST, Optional[ast.AST]]:
    """(child, parent): where the value of `expr` is used, looking through `a if c else b`, `a or b`
    and the default of a dict lookup (`{...}.get(k, expr)`) around it."""
    child, parent = expr, parents.get(id(expr))
    while isinstance(parent, (ast.IfExp, ast.BoolOp)) and child is not getattr(parent, "test", None) \
            or isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and parent.func.attr == "get" \
            and dict_literals(parents, parent.func.value) and child in parent.args[1:2]:
        child, parent = parent, parents.get(id(parent))
    return child, parent


def loop_slot(parents: Parents, child: ast.AST, parent: Optional[ast.AST], slot_of: Callable[[ast.Name], str],
              kinds: Iterable[str]) -> Optional[str]:
    """When `child` is what a loop iterates over (`for x in child`, `[... for x in child]`): the first of
    `kinds` that `slot_of` finds among the reads of its variable `x` ("" if none); None otherwise."""
    if not (isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)) and parent.iter is child):
        return None
    if not isinstance(parent.target, ast.Name):
        return ""
    loop = parent if not isinstance(parent, ast.comprehension) else parents.get(id(parent))
    # a comprehension is always inside an expression of the parent map: loop is never None
    found = {slot_of(n) for n in ast.walk(cast(ast.AST, loop))
             if isinstance(n, ast.Name) and n.id == parent.target.id and isinstance(n.ctx, ast.Load)}
    return next((k for k in kinds if k in found), "")


# ------------------------------------------------------------------ the value that reaches a read
LOOPS = (ast.For, ast.AsyncFor, ast.While)


def dotted(node: Optional[ast.AST]) -> Optional[str]:
    """`x` -> "x", `args.cuda` -> "args.cuda", `self.opt.gpu` -> "self.opt.gpu"; anything else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def statement_lists(node: ast.AST) -> list[list[ast.stmt]]:
    """The statement lists of `node` (body, orelse, finalbody; handlers' bodies are their own nodes)."""
    return [getattr(node, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(node, f, None), list)]


def _bound_here(node: ast.AST) -> list[Optional[str]]:
    """The names and dotted attributes `node` itself binds (not those of the nodes inside it)."""
    if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Store):
        return [dotted(node)]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    return []


def _binds_key(node: ast.AST, key: str) -> bool:
    """Does `node` (a statement, or a function's arguments) bind `key` in the scope it runs in?  A function or
    class statement binds its name; what its body binds is its own."""
    if key in _bound_here(node):
        return True
    return not isinstance(node, _NOT_OWN) and any(key in _bound_here(n) for n in _own_nodes(node))


def _module_bindings(module: ast.Module) -> dict[Optional[str], list[ast.AST]]:
    """Every binding in the module, all scopes together: key -> the nodes binding it (kept on the module)."""
    found: Optional[dict[Optional[str], list[ast.AST]]] = getattr(module, "_torchport_bindings", None)
    if found is None:
        found = {}
        for n in ast.walk(module):
            for key in _bound_here(n):
                found.setdefault(key, []).append(n)
        module._torchport_bindings = found  # type: ignore[attr-defined]
    return found


def _plain_value(stmt: Optional[ast.AST], key: str) -> Optional[ast.expr]:
    """`key = value` (one target) or `key: T = value`: the value; any other binding tells nothing."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and dotted(stmt.targets[0]) == key:
        return stmt.value
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and dotted(stmt.target) == key:
        return stmt.value
    return None


def _statements(function: Function) -> Sequence[ast.AST]:
    """A function's (or lambda's) top-level body as a list of nodes."""
    return function.body if isinstance(function.body, list) else [function.body]


def reaching_value(parents: Parents, read: ast.AST) -> Optional[ast.expr]:
    """The value the variable `read` (a name or dotted attribute) holds where it is read: the last plain
    assignment before it in its block or an enclosing one, none between; a loop binding it again, a
    parameter, a binding in a branch or a `global` tells nothing (None).  Read in a function that does not
    bind it (a global, `args.cuda` set in main, `self.use_gpu` set in __init__): the one binding of it in the
    whole module, when that is a plain assignment."""
    key = dotted(read)
    if key is None:
        return None
    child, parent = read, parents.get(id(read))
    while parent is not None:
        if isinstance(child, ast.stmt):
            for block in statement_lists(parent):
                if child in block:
                    for stmt in reversed(block[:block.index(child)]):
                        if _binds_key(stmt, key):
                            return _plain_value(stmt, key)
        if isinstance(parent, LOOPS) and child is not getattr(parent, "iter", None) and _binds_key(parent, key):
            return None          # the value may come from the iteration before
        if isinstance(parent, FUNCTIONS) and child in _statements(parent):
            if _binds_key(parent.args, key) or any(_binds_key(s, key) for s in _statements(parent)):
                return None      # local, and no plain assignment reaches the read
            break                # a global or an attribute set elsewhere: the module's one binding of it
        child, parent = parent, parents.get(id(parent))
    else:
        return None              # a module-level read with no assignment before it
    while parent is not None:
        child, parent = parent, parents.get(id(parent))
    if not isinstance(child, ast.Module):
        return None
    bindings = _module_bindings(child).get(key, [])
    binder = parents.get(id(bindings[0])) if len(bindings) == 1 else None
    return _plain_value(binder, key) if binder is not None else None
