"""Local data flow for the string rules: which values an expression can have, and where a name is read.

Scopes are the module, functions and lambdas; a name belongs to the innermost scope that binds it
(closures read it from an outer one).  Bindings seen: `name = value` (also annotated and `:=`) and
`for name in <literal sequence>`, each element of which is a value.  Nothing wider (attributes,
call results, other files): a name bound in a way not seen here just has fewer known values.
"""
from __future__ import annotations

import ast

SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def scope_of(parents: dict, node):
    """The innermost module, function or lambda holding `node`."""
    p = parents.get(id(node))
    while p is not None and not isinstance(p, SCOPES):
        p = parents.get(id(p))
    return p


# Fields that never hold a node of their own: names and constants, and the shared singletons of
# expression context (Load, Store) and operators (Add, Eq...), which have no single parent.
_NOT_CHILDREN = {"ctx", "op", "ops", "id", "attr", "name", "arg", "module", "level", "asname", "conversion",
                 "is_async", "kind", "type_comment"}
CHILD_FIELDS: dict = {}   # ast class -> its child_fields (filled on first use)


def child_fields(cls) -> tuple:
    """The fields of an ast class that can hold child nodes (computed once per class)."""
    found = CHILD_FIELDS.get(cls)
    if found is None:
        found = CHILD_FIELDS[cls] = tuple(f for f in cls._fields if f not in _NOT_CHILDREN
                                           and not (cls is ast.Constant and f == "value"))
    return found


def children(node) -> list:
    """The child nodes of `node` (as ast.iter_child_nodes, less the shared context and operator nodes), without
    its generators: this walk is hot."""
    out = []
    for name in CHILD_FIELDS.get(node.__class__) or child_fields(node.__class__):
        value = getattr(node, name, None)
        if isinstance(value, list):
            out += [item for item in value if isinstance(item, ast.AST)]
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


_NOT_OWN = (*FUNCTIONS, ast.ClassDef)


def _own_nodes(scope):
    """The nodes of a scope, without those of functions and classes nested in it."""
    stack = children(scope)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _NOT_OWN):
            stack += children(node)


def _parameters(scope) -> set:
    if not isinstance(scope, FUNCTIONS):
        return set()
    a = scope.args
    return {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p is not None}


class _ScopeIndex:
    """One walk over a scope's own nodes, kept on the scope node: who is read, bound and assigned what.
    Built once per scope, so asking about every assignment of a long module stays linear."""

    def __init__(self, scope):
        self.loads: dict = {}      # name -> [Name nodes reading it]
        self.bound = set(_parameters(scope))
        self.values: dict = {}     # name -> [expressions it is bound to]
        self.nested: list = []     # functions and lambdas directly inside
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


def _index(scope) -> _ScopeIndex:
    index = getattr(scope, "_torchport_index", None)
    if index is None:
        index = scope._torchport_index = _ScopeIndex(scope)
    return index


def values(scope, name: str) -> list:
    """The expressions `name` is bound to in `scope` (loop elements one by one)."""
    return list(_index(scope).values.get(name, ()))


def binds(scope, name: str) -> bool:
    """Does `scope` bind `name` (parameter, assignment target, loop variable, import...)?"""
    return name in _index(scope).bound


def reads(scope, name: str) -> list:
    """Name nodes reading `name` in `scope`, and in nested functions that do not bind it themselves."""
    out, stack = [], [scope]
    while stack:
        index = _index(stack.pop())
        out += index.loads.get(name, ())
        stack += [f for f in index.nested if not binds(f, name)]
    return out


def binding_scope(parents: dict, name_node):
    """The scope whose binding a Name read refers to, or None (a builtin, a global bound elsewhere)."""
    scope = scope_of(parents, name_node)
    while scope is not None:
        if binds(scope, name_node.id):
            return scope
        scope = scope_of(parents, scope)
    return None


def dict_literals(parents: dict, expr) -> list:
    """The dict literals an expression is: itself, or what a local name is bound to."""
    if isinstance(expr, ast.Dict):
        return [expr]
    if isinstance(expr, ast.Name):
        scope = binding_scope(parents, expr)
        return [v for v in values(scope, expr.id) if isinstance(v, ast.Dict)] if scope is not None else []
    return []


def lookups(parents: dict, mapping) -> list:
    """[(lookup expression, key)] of a dict literal: `{...}[k]`, `{...}.get(k, ...)`, and the same
    through the local name it is assigned to."""
    holders = [mapping]
    parent = parents.get(id(mapping))
    if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is mapping:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        scope = scope_of(parents, parent)
        holders += [use for t in targets if isinstance(t, ast.Name) for use in reads(scope, t.id)]
    found = []
    for holder in holders:
        outer = parents.get(id(holder))
        if isinstance(outer, ast.Subscript) and outer.value is holder:
            found.append((outer, outer.slice))
        elif isinstance(outer, ast.Attribute) and outer.attr == "get":
            call = parents.get(id(outer))
            if isinstance(call, ast.Call) and call.func is outer and call.args:
                found.append((call, call.args[0]))
    return found


def sources(parents: dict, expr, seen=None) -> list:
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


def use_site(parents: dict, expr) -> tuple:
    """(child, parent): where the value of `expr` is used, looking through `a if c else b`, `a or b`
    and the default of a dict lookup (`{...}.get(k, expr)`) around it."""
    child, parent = expr, parents.get(id(expr))
    while isinstance(parent, (ast.IfExp, ast.BoolOp)) and child is not getattr(parent, "test", None) \
            or isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and parent.func.attr == "get" \
            and dict_literals(parents, parent.func.value) and child in parent.args[1:2]:
        child, parent = parent, parents.get(id(parent))
    return child, parent


def loop_slot(parents: dict, child, parent, slot_of, kinds):
    """When `child` is what a loop iterates over (`for x in child`, `[... for x in child]`): the first of
    `kinds` that `slot_of` finds among the reads of its variable `x` ("" if none); None otherwise."""
    if not (isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)) and parent.iter is child):
        return None
    if not isinstance(parent.target, ast.Name):
        return ""
    loop = parent if not isinstance(parent, ast.comprehension) else parents.get(id(parent))
    found = {slot_of(n) for n in ast.walk(loop)
             if isinstance(n, ast.Name) and n.id == parent.target.id and isinstance(n.ctx, ast.Load)}
    return next((k for k in kinds if k in found), "")
