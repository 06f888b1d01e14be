"""Code that runs only where a device is there: what a test's value says about the device, and whether a
node is reached only when it is.

A *device question* is a call of `is_available`, `device_count` or `is_initialized` (of any device's
module: `torch.cuda`, convert's own `torch.npu`, `torch.accelerator`), `x.is_cuda`, or a `hasattr` probe of a
name only a CUDA build has (`hasattr(torch._C, "_cuda_clearCublasWorkspaces")`); a *device comparison* compares with
"cuda"/"cuda:N" (`device.type == "cuda"`, `"cuda" in str(device)`, `str(d).startswith("cuda")`) or "cpu"
(`device.type == "cpu"`).  not/and/or combine them: `not cpu and torch.cuda.is_available()` true, and
`not torch.cuda.is_available() or not flash` false, each mean a device is there.

A node runs only with a device when, within its function, it is in the branch that a test's value meaning
"a device is there" takes (`if`, conditional expression, `while`; an `else` for a test false; the operands
after such a test in `and`, or after its negation in `or`), after an early
exit taken when there is none, or in a test function skipped without one (`@pytest.mark.skipif(not
torch.cuda.is_available())`, `@unittest.skipUnless(...)`, on the function, its class, or `pytestmark`):

    if device.type == "cpu":
        return batch_size
    properties = torch.cuda.get_device_properties(device)    # runs only with a device (yolov5 autobatch)

Code after an import of a package that works only with CUDA (`imported_before`: `import tensorrt as
trt` in the function, or `import cupy` at the top of the module) belongs to that package's path: it
is not a normal path on another target, whatever its own lines do; the package is the item to decide.

A test may name a variable that holds such a value (`bf16 = device == "cuda" and ok`, then `if bf16:`;
`args.cuda = not args.no_cuda and torch.cuda.is_available()`, then `if args.cuda:` in another function;
`HAS_GPU = torch.cuda.is_available()`, then `@pytest.mark.skipif(not HAS_GPU, ...)`): the value read is the
plain assignment that reaches the test (flow.reaching_value), and when none can be told, nothing is assumed.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Callable, Optional

from .flow import Function, Parents, reaching_value, statement_lists

QUESTIONS = frozenset({"is_available", "device_count", "is_initialized"})
# a name only a CUDA build of PyTorch has: probed with hasattr, it asks whether CUDA is there
CUDA_BUILD_NAME = re.compile(r"(?i)cuda|cudnn|nccl")
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_FOLLOW = 8          # the most variables one test is followed through (`a = b`, `b = c`, ...)
Lookup = Callable[[ast.AST], Optional[ast.expr]]


def cuda_build_probe(node: ast.AST) -> bool:
    """`hasattr(torch._C, "_cuda_clearCublasWorkspaces")`: a probe of a binding only a CUDA build of PyTorch has
    (of torch's C module; `hasattr(torch.cuda, "nccl")` asks about an API, which every build has)."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "hasattr" \
        and len(node.args) == 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str) \
        and isinstance(node.args[0], ast.Attribute) and node.args[0].attr == "_C" \
        and CUDA_BUILD_NAME.search(node.args[1].value) is not None


def _question(node: ast.AST) -> bool:
    """`torch.cuda.is_available()`, `device_count()`: a call of a device question."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "") in QUESTIONS


def _number(node: ast.AST) -> Optional[int]:
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _count_test(op: ast.cmpop, n: int) -> Optional[bool]:
    """`device_count() <op> n`: True when its being true means a device is there, False when its being false
    does, None otherwise."""
    if isinstance(op, ast.Gt) and n >= 0 or isinstance(op, ast.GtE) and n >= 1 or \
            isinstance(op, ast.NotEq) and n == 0 or isinstance(op, ast.Eq) and n >= 1:
        return True
    if isinstance(op, ast.Eq) and n == 0 or isinstance(op, ast.Lt) and n >= 1 or isinstance(op, ast.LtE) and n >= 0:
        return False
    return None


def _device_string(node: ast.AST) -> Optional[bool]:
    """A constant compared with a device: "cuda"/"cuda:N" -> True (a device), "cpu" -> False, else None."""
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return None
    if node.value == "cuda" or node.value.startswith("cuda:"):
        return True
    return False if node.value == "cpu" else None


def _base(test: ast.AST) -> Optional[bool]:
    """What a test that is not not/and/or says: True (when it is true, a device is there), False (when it is
    false, one is: `device.type == "cpu"`, `device_count() < 2`), None (nothing)."""
    if _question(test):
        return True
    if isinstance(test, ast.Attribute) and test.attr == "is_cuda":
        return True                                            # image.is_cuda
    if cuda_build_probe(test):
        return True                                            # hasattr(torch._C, "_cuda_clearCublasWorkspaces")
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "startswith" \
            and len(test.args) == 1 and _device_string(test.args[0]):
        return True                                            # str(device).startswith("cuda")
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    if _question(left) and _number(right) is not None:
        return _count_test(op, _number(right))  # type: ignore[arg-type]
    if isinstance(op, (ast.In, ast.NotIn)):               # "cuda" in str(device)
        said = _device_string(left)
        return None if not said else isinstance(op, ast.In)
    if isinstance(op, (ast.Eq, ast.NotEq)):               # device.type == "cpu", device != "cuda"
        said = _device_string(right) if _device_string(left) is None else _device_string(left)
        return None if said is None else said == isinstance(op, ast.Eq)
    return None


def implies_device(test: ast.AST, truth: bool, lookup: Optional[Lookup] = None, _depth: int = 0) -> bool:
    """Does `test` evaluating to `truth` mean a device is there?  `torch.cuda.is_available()` true,
    `not cpu and torch.cuda.is_available()` true, `device.type == "cpu"` false, `not available or not flash`
    false: yes.  `lookup` gives the value a variable read in the test holds (flow.reaching_value)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return implies_device(test.operand, not truth, lookup, _depth)
    if isinstance(test, ast.BoolOp):
        each = [implies_device(v, truth, lookup, _depth) for v in test.values]
        # `a and b` true, or `a or b` false: every operand has that value, so one that tells is enough
        return any(each) if isinstance(test.op, ast.And) == truth else all(each)
    if isinstance(test, (ast.Name, ast.Attribute)) and lookup is not None and _depth < _FOLLOW \
            and not (isinstance(test, ast.Attribute) and test.attr == "is_cuda"):
        value = lookup(test)
        return value is not None and implies_device(value, truth, lookup, _depth + 1)
    said = _base(test)
    return said is not None and said == truth


def runs_only_with_device(parents: Parents, node: ast.AST) -> bool:
    """Is `node` reached, within its function, only when a device is there (see the module's docstring)?"""
    def lookup(read: ast.AST) -> Optional[ast.expr]:
        return reaching_value(parents, read)

    child, parent = node, parents.get(id(node))
    while parent is not None:
        if isinstance(parent, ast.BoolOp) and child is not parent.values[0]:
            # `a and b`: b runs only where a is true; `a or b`: only where a is false
            before = parent.values[:next(i for i, v in enumerate(parent.values) if v is child)]
            if any(implies_device(v, isinstance(parent.op, ast.And), lookup) for v in before):
                return True
        if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and child is not parent.test:
            in_body = child is parent.body or (isinstance(parent.body, list) and child in parent.body)
            if in_body and implies_device(parent.test, True, lookup) or \
                    not in_body and not isinstance(parent, ast.While) and implies_device(parent.test, False, lookup):
                return True
        if isinstance(child, ast.stmt):
            for block in statement_lists(parent):
                if child in block and _exits_without_device(block[:block.index(child)], lookup):
                    return True
        if isinstance(parent, _FUNCTIONS):
            if _skipped_without_device(parent, parents, lookup):
                return True
            while parent is not None:     # a module of tests skipped without a device (`pytestmark`)
                child, parent = parent, parents.get(id(parent))
            return isinstance(child, ast.Module) and _module_skipped_without_device(child, lookup)
        child, parent = parent, parents.get(id(parent))
    return False


SKIPS = {"skipif": False, "skipIf": False, "skipUnless": True}   # the test's value that lets the code run


def _skip_condition(decorator: ast.AST, lookup: Lookup) -> bool:
    """`@pytest.mark.skipif(not torch.cuda.is_available(), ...)`, `@unittest.skipUnless(torch.cuda...)`:
    a skip that lets the function run only with a device."""
    if not isinstance(decorator, ast.Call) or not isinstance(decorator.func, (ast.Attribute, ast.Name)):
        return False
    name = decorator.func.attr if isinstance(decorator.func, ast.Attribute) else decorator.func.id
    if name not in SKIPS:
        return False
    test = decorator.args[0] if decorator.args else next((k.value for k in decorator.keywords
                                                          if k.arg == "condition"), None)
    return test is not None and implies_device(test, SKIPS[name], lookup)


def _skipped_without_device(function: Function, parents: Parents, lookup: Lookup) -> bool:
    """Does a skip decorator of the function (or of its class) let it run only with a device?"""
    if isinstance(function, ast.Lambda):
        return False
    owner = parents.get(id(function))
    decorators = list(function.decorator_list) + (owner.decorator_list if isinstance(owner, ast.ClassDef) else [])
    return any(_skip_condition(d, lookup) for d in decorators)


def _module_skipped_without_device(module: ast.AST, lookup: Lookup) -> bool:
    """`pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), ...)` (or a list of marks holding it)."""
    if not isinstance(module, ast.Module):
        return False
    for stmt in module.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets):
            marks = stmt.value.elts if isinstance(stmt.value, (ast.List, ast.Tuple)) else [stmt.value]
            if any(_skip_condition(m, lookup) for m in marks):
                return True
    return False


def _exits_without_device(before: Sequence[ast.stmt], lookup: Lookup) -> bool:
    """Does one of these statements leave the block when there is no device (`if device.type == "cpu":
    return ...`, `if not torch.cuda.is_available(): raise ...`)?"""
    return any(isinstance(s, ast.If) and not s.orelse and s.body and exits(s.body[-1])
               and implies_device(s.test, False, lookup) for s in before)


def _imported(stmt: ast.AST) -> list[str]:
    """The modules an import statement imports ('a.b' for `import a.b` and `from a.b import c`)."""
    if isinstance(stmt, ast.Import):
        return [a.name for a in stmt.names]
    if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
        return [stmt.module]
    return []


def _sure_import(stmt: ast.AST, which: Callable[[str], str]) -> str:
    """What `which` names for a module `stmt` imports for sure: an import, or a `try:` importing it whose
    every handler imports it again or leaves (ultralytics: `except ImportError: check_tensorrt(); import
    tensorrt as trt`)."""
    found = next((w for m in _imported(stmt) for w in [which(m)] if w), "")
    if found or not isinstance(stmt, ast.Try):
        return found
    for inner in stmt.body:
        found = _sure_import(inner, which)
        if found and all(h.body and (exits(h.body[-1]) or any(_sure_import(x, which) == found for x in h.body))
                         for h in stmt.handlers):
            return found
    return ""


def imported_before(parents: Parents, node: ast.AST, which: Callable[[str], str]) -> str:
    """What `which` (module name -> a package's name, or '') names for a module imported for sure before
    `node` runs: in a statement before it in its function's blocks, or at the top level of its module.
    '' when there is none."""
    child, parent = node, parents.get(id(node))
    in_function = True
    while parent is not None:
        if isinstance(child, ast.stmt) and (in_function or isinstance(parent, ast.Module)):
            for block in statement_lists(parent):
                if child in block:
                    found = next((w for s in block[:block.index(child)] for w in [_sure_import(s, which)] if w), "")
                    if found:
                        return found
        if isinstance(parent, _FUNCTIONS):
            in_function = False       # the enclosing blocks run when the function is defined, not called
        child, parent = parent, parents.get(id(parent))
    return ""


def exits(stmt: ast.AST) -> bool:
    """return, raise, continue, break, or a call of sys.exit / exit / quit / os._exit."""
    if isinstance(stmt, _EXITS):
        return True
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    f = call.func if isinstance(call, ast.Call) else None
    return (f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "") in \
        ("exit", "quit", "_exit")
