"""Where an import statement runs, for the code convert writes next to one.

An import under `if TYPE_CHECKING:` (`typing.TYPE_CHECKING`, `if False:`) never runs: the name it binds is
there for type checkers only, and a statement written after it never runs either.  An import inside a
branch or a `try:` runs only on some paths: a registration import written after it in that block runs only
there.  So each import statement gets its place: whether it never runs, and the compound statements holding
it within its scope (the module, or the function it is in).  `anchor` then says after which statement code
that must run once the module is loaded goes: the outermost statement holding the import after which the
module is surely loaded (`try: import torch` / `except ImportError: raise ...` loads torch; a `try:` whose
handler sets `torch = None` does not), else the import itself.

Only statements are walked, never expressions: this is cheap next to the parse.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional, Union, cast

ImportStmt = Union[ast.Import, ast.ImportFrom]
Chain = tuple[ast.stmt, ...]
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_BLOCKS = ("body", "orelse", "finalbody")   # the statement lists of compound statements (with handlers' and cases')


@dataclass(frozen=True)
class Place:
    chain: Chain                  # the compound statements holding the import in its scope, outermost first
    function: Optional[ast.AST]   # the innermost function holding it; None: the module
    never: bool                   # it never runs (under `if TYPE_CHECKING:` or `if False:`)


def runtime_truth(test: ast.expr) -> Optional[bool]:
    """What an `if` test is at run time, when that is known without running anything: TYPE_CHECKING (a name or
    an attribute, `typing.TYPE_CHECKING`) is False, a bool, int or None constant is itself, `not` flips them."""
    if isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or \
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING":
        return False
    if isinstance(test, ast.Constant) and (test.value is None or isinstance(test.value, (bool, int))):
        return bool(test.value)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = runtime_truth(test.operand)
        return None if inner is None else not inner
    return None


def _blocks(stmt: ast.stmt) -> list[tuple[list[ast.stmt], bool]]:
    """[(statement list, never runs)] of a compound statement (the handlers' and match cases' bodies too)."""
    if isinstance(stmt, ast.If):
        value = runtime_truth(stmt.test)
        return [(stmt.body, value is False), (stmt.orelse, value is True)]
    out: list[tuple[list[ast.stmt], bool]] = []
    for name in _BLOCKS:
        block = getattr(stmt, name, None)
        if isinstance(block, list):
            out.append((block, False))
    for holder in getattr(stmt, "handlers", None) or getattr(stmt, "cases", None) or ():
        out.append((holder.body, False))
    return out


def places(tree: ast.Module) -> dict[int, Place]:
    """{id(import statement): its Place} for every import statement in the module."""
    found: dict[int, Place] = {}
    stack: list[tuple[list[ast.stmt], Chain, Optional[ast.AST], bool]] = [(tree.body, (), None, False)]
    while stack:
        block, chain, function, never = stack.pop()
        for stmt in block:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                found[id(stmt)] = Place(chain, function, never)
            elif isinstance(stmt, FUNCTIONS):
                stack.append((stmt.body, (), stmt, never))
            else:
                inner = (*chain, stmt)
                stack.extend((b, inner, function, never or dead) for b, dead in _blocks(stmt) if b)
    return found


def imports_module(stmt: ast.stmt, module: str) -> bool:
    """Is `stmt` an import of `module` or of something in it (`import torch.nn as nn`, `from torch import cuda`)?"""
    if isinstance(stmt, ast.Import):
        return any(a.name.split(".")[0] == module for a in stmt.names)
    return isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and (stmt.module or "").split(".")[0] == module


def _ends_raising(block: list[ast.stmt]) -> bool:
    return bool(block) and isinstance(block[-1], ast.Raise)


def loads(block: list[ast.stmt], module: str) -> bool:
    """Once this block completes normally, has `module` surely been imported (in its scope)?"""
    return any(_stmt_loads(s, module) for s in block)


def _stmt_loads(stmt: ast.stmt, module: str) -> bool:
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return imports_module(stmt, module)
    if isinstance(stmt, ast.If):
        value = runtime_truth(stmt.test)
        if value is not None:
            return loads(stmt.body if value else stmt.orelse, module)
        return loads(stmt.body, module) and loads(stmt.orelse, module)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return loads(stmt.body, module)
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":   # ast.TryStar: Python 3.11+
        try_stmt = cast(ast.Try, stmt)   # TryStar has Try's fields
        return loads(try_stmt.finalbody, module) or loads(try_stmt.body + try_stmt.orelse, module) and all(
            loads(h.body, module) or _ends_raising(h.body) for h in try_stmt.handlers)
    return False


def anchor(stmt: ImportStmt, place: Place, module: str) -> ast.stmt:
    """The statement after which code that needs `module` loaded goes: the outermost statement holding `stmt`
    (in its scope) after which the module is surely loaded, else `stmt` itself."""
    return next((s for s in place.chain if _stmt_loads(s, module)), stmt)


def unconditional(stmt: ImportStmt, place: Place, module: str) -> bool:
    """Does code written after `anchor(...)` run whenever the rest of the scope's body runs (it is in the scope's
    own body, not in a branch, loop, class or try that may not load the module)?"""
    return not place.never and (not place.chain or _stmt_loads(place.chain[0], module))
