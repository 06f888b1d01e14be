"""Value groups: the strings one variable can hold and the strings it is tested against, decided together.

A "cuda" can name a device or an accelerator (a registry name beside "gpu", "tpu").  Decided one
literal at a time, a conversion rewrites the tuple a flag is tested against and leaves the flag's own
assignment, and the test stops matching.  A group joins, within a file:
- the variables that pass values to each other (`self.flag = accelerator`): a local or module name, or
  `self.<attr>` across the methods of a class;
- the strings they are bound to (through conditionals and `or`; a loop's literal elements), parameter defaults and the arguments of
  calls of the file's own module-level functions and classes among them;
- the strings they are compared with (`flag == "gpu"`) and the collections they are tested for membership
  in (`flag in ("cuda", "gpu")`, or a name bound to one: `flag not in SUPPORTED`).
`role` says how a group uses its strings: "device" when one of its variables is read where a device goes
(or is named like one), "name" when it never is and it holds accelerator names no torch device has ("gpu",
"tpu"), "" otherwise (no evidence either way: the per-literal rules decide).
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable, Optional, Union, cast

from .flow import Parents, binding_scope, enclosing_class, is_self_attribute, scope_of, sources

if TYPE_CHECKING:
    from .context import FileContext

Key = tuple[int, str]   # (id of the scope binding a name, or of the class for `self.<attr>`; the name)
# values through which `sources` finds strings or variables (a call's result, an arithmetic value: neither)
_FLOWING = (ast.IfExp, ast.BoolOp, ast.Tuple, ast.List, ast.Set, ast.Subscript, ast.Call, ast.BinOp)


class Groups:
    """The value groups of one file (built once, on first use, from one walk)."""

    def __init__(self, tree: ast.Module, parents: Parents) -> None:  # noqa: C901
        self.parents = parents
        self.tree = tree
        self._up: dict[Key, Key] = {}          # union-find over keys
        self.words: dict[Key, set[str]] = {}   # key -> set of strings bound to or tested against it
        self.literals: dict[int, Key] = {}     # id(string constant) -> key of its group
        self._loads: dict[str, list[ast.expr]] = {}   # name or "self.<attr>" -> [nodes reading it] (keys worked out on demand)
        self._members: Optional[dict[Key, list[Key]]] = None
        calls: list[ast.Call] = []   # calls of a plain name
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self._loads.setdefault(node.id, []).append(node)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and is_self_attribute(node):
                self._loads.setdefault("self." + node.attr, []).append(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    key = self.key(target)
                    if key is not None:
                        self._bind(key, node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) \
                    and isinstance(node.iter, (ast.Tuple, ast.List, ast.Set)):
                key = self.key(node.target)
                if key is not None:
                    for element in node.iter.elts:
                        self._bind(key, element)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                positional = args.posonlyargs + args.args
                pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults),
                         *((a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)]
                for arg, default in pairs:
                    self._bind((id(node), arg.arg), default)
            elif isinstance(node, ast.Compare) and len(node.ops) == 1:
                self._compare(node)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                calls.append(node)
        # a module-level function or class -> its parameters (a class: its __init__'s, less self)
        defined: dict[str, tuple[Union[ast.FunctionDef, ast.AsyncFunctionDef], list[str]]] = {}
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defined[stmt.name] = (stmt, [a.arg for a in stmt.args.posonlyargs + stmt.args.args])
            elif isinstance(stmt, ast.ClassDef):
                init = next((f for f in stmt.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
                if init is not None:
                    defined[stmt.name] = (init, [a.arg for a in init.args.posonlyargs + init.args.args][1:])
        for call in calls:   # the arguments of a call of one of them join its parameters' groups
            fn, params = defined.get(cast(ast.Name, call.func).id, (None, []))   # calls holds calls of a Name
            if fn is None:
                continue
            for name, value in [*zip(params, call.args), *((k.arg, k.value) for k in call.keywords if k.arg)]:
                if not isinstance(value, ast.Starred) and name in params + [a.arg for a in fn.args.kwonlyargs]:
                    self._bind((id(fn), name), value)

    # ---- keys and union-find
    def key(self, node: ast.AST) -> Optional[Key]:
        """The variable an expression is: a name (by the scope that binds it) or `self.<attr>` (by its class)."""
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                scope = binding_scope(self.parents, node)
            else:
                scope = scope_of(self.parents, node)
            return (id(scope if scope is not None else self.tree), node.id)
        if is_self_attribute(node):
            cls = enclosing_class(self.parents, node)
            return (id(cls), "self." + node.attr) if cls is not None else None
        return None

    def find(self, key: Key) -> Key:
        while self._up.get(key, key) != key:
            key = self._up[key]
        return key

    def _union(self, a: Key, b: Key) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self._up[ra] = rb
            self.words.setdefault(rb, set()).update(self.words.pop(ra, set()))

    def _member(self, key: Key, leaf: ast.AST) -> None:
        if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str):
            self.words.setdefault(self.find(key), set()).add(leaf.value)
            self.literals[id(leaf)] = key
        else:
            other = self.key(leaf)
            if other is not None:
                self._union(key, other)

    def _bind(self, key: Key, value: ast.AST) -> None:
        if isinstance(value, (ast.Constant, ast.Name)) or is_self_attribute(value):
            self._member(key, value)
        elif isinstance(value, _FLOWING):   # only these can hold a string or a variable deeper down
            for leaf in sources(self.parents, value):
                self._member(key, leaf)

    def _compare(self, node: ast.Compare) -> None:
        left, right, op = node.left, node.comparators[0], node.ops[0]
        if isinstance(op, (ast.In, ast.NotIn)):
            key = self.key(left)
            if key is not None and isinstance(right, ast.Name):   # `flag in SUPPORTED`: the two are one group
                self._union(key, cast(Key, self.key(right)))   # a Name always has a key
            elif key is not None:
                for element in self._elements(right):
                    self._member(key, element)
        elif isinstance(op, (ast.Eq, ast.NotEq)):
            for a, b in ((left, right), (right, left)):
                key = self.key(a)
                if key is not None and isinstance(b, ast.Constant) and isinstance(b.value, str):
                    self._member(key, b)

    def _elements(self, collection: ast.AST) -> list[ast.Constant]:
        """The strings of a literal collection, or of the collection a class attribute (`self.<attr>`) is bound to."""
        if isinstance(collection, (ast.Tuple, ast.List, ast.Set)):
            return [e for e in collection.elts if isinstance(e, ast.Constant)]
        if is_self_attribute(collection):   # a class attribute: SUPPORTED = (...) in the class body
            for stmt in getattr(enclosing_class(self.parents, collection), "body", ()):
                if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == collection.attr
                                                        for t in stmt.targets):
                    return self._elements(stmt.value)
        return []

    # ---- questions
    def group_keys(self, literal: ast.AST) -> list[Key]:
        """The variables of a string literal's group ([] when it belongs to none)."""
        key = self.literals.get(id(literal))
        if key is None:
            return []
        if self._members is None:   # the groups are complete once built: list each one's variables once
            self._members = {}
            for k in {*self.literals.values(), *self._up}:
                self._members.setdefault(self.find(k), []).append(k)
        return self._members.get(self.find(key), [])

    def reads(self, key: Key) -> list[ast.expr]:
        """The nodes that read a variable."""
        return [n for n in self._loads.get(key[1], ()) if self.key(n) == key]

    def words_of(self, literal: ast.AST) -> set[str]:
        key = self.literals.get(id(literal))
        return set(self.words.get(self.find(key), ())) if key is not None else set()


def groups(ctx: FileContext) -> Groups:
    """The file's value groups (built on first use)."""
    found: Optional[Groups] = ctx.memo.get("value groups")
    if found is None:
        # the tree is set before any rule runs
        found = ctx.memo["value groups"] = Groups(cast(ast.Module, ctx.tree), ctx.parents())
    return found


def exported(ctx: FileContext, literal: ast.AST) -> bool:
    """Is the literal's group that of a module-level name another file of the project uses as a device
    (converter/project.py)?"""
    if not ctx.device_names:
        return False
    g = groups(ctx)
    return any(scope == id(g.tree) and name in ctx.device_names for scope, name in g.group_keys(literal))


def role(ctx: FileContext, literal: ast.AST, device_slot: Callable[[ast.expr], bool],
         is_device_word: Callable[[str], bool], device_named: Callable[[str], bool]) -> str:
    """"device", "name" or "" for the group of a string literal (see the module's docstring).  The callers'
    notions of a device position and a device word are passed in (converter/rules/devices.py owns them)."""
    g = groups(ctx)
    keys = g.group_keys(literal)
    if not keys:
        return ""
    if any(device_named(name) for _, name in keys) or exported(ctx, literal):
        return "device"
    if any(device_slot(read) for key in keys for read in g.reads(key)):
        return "device"
    others = {w for w in g.words_of(literal) if not is_device_word(w)}
    return "name" if others else ""
