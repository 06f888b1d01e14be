"""Code that runs only where a device is there: what a test says about the device, and whether a node is
reached only when it is.

A *device question* is a call of `is_available`, `device_count` or `is_initialized` (of any device's
module: `torch.cuda`, convert's own `torch.npu`, `torch.accelerator`).  A test is read for what it says when
it is true: `torch.cuda.is_available()`, `n > 0 and torch.cuda.device_count() > 1` and `not cpu and
torch.cuda.is_available()` say "a device is there"; `not torch.cuda.is_available()`,
`torch.cuda.device_count() == 0` and `device.type == "cpu"` say "none is".  Anything else says nothing.

A node runs only with a device when, within its function, it is in the branch a test saying "there is one"
takes (`if`, conditional expression, `while`), in the `else` of a test saying "there is none", or after an
early exit on "there is none" in an enclosing block:

    if device.type == "cpu":
        return batch_size
    properties = torch.cuda.get_device_properties(device)    # runs only with a device (yolov5 autobatch)
"""
from __future__ import annotations

import ast
from typing import Optional

QUESTIONS = frozenset({"is_available", "device_count", "is_initialized"})
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _question(node) -> bool:
    """`torch.cuda.is_available()`, `device_count()`: a call of a device question."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "") in QUESTIONS


def _number(node) -> Optional[int]:
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _count_test(op, n: int) -> Optional[bool]:
    """`device_count() <op> n`: True when it says there is a device, False when none, None otherwise."""
    if isinstance(op, ast.Gt) or isinstance(op, ast.GtE) and n >= 1:
        return True if n >= 0 else None
    if isinstance(op, ast.NotEq) and n == 0:
        return True
    if isinstance(op, ast.Eq) and n == 0 or isinstance(op, ast.Lt) and n == 1 or isinstance(op, ast.LtE) and n == 0:
        return False
    return None


def _says_cpu(node) -> Optional[bool]:
    """`device.type == "cpu"`: False (no device); `!= "cpu"`: True; else None."""
    if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
        return None
    left, right = node.left, node.comparators[0]
    if isinstance(left, ast.Constant):
        left, right = right, left
    if isinstance(left, ast.Attribute) and left.attr == "type" and isinstance(right, ast.Constant) \
            and right.value == "cpu":
        return isinstance(node.ops[0], ast.NotEq)
    return None


def device_answer(test) -> Optional[bool]:
    """What `test`, when true, says about a device being there: True, False, or None (nothing)."""
    if _question(test):
        return True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = device_answer(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        answers = [device_answer(v) for v in test.values]
        if isinstance(test.op, ast.And):   # all of them hold: one that says something is enough
            known = {a for a in answers if a is not None}
            return known.pop() if len(known) == 1 else None
        return answers[0] if all(a == answers[0] for a in answers) else None   # or: each must say it
    if isinstance(test, ast.Compare):
        if len(test.ops) == 1 and _question(test.left) and _number(test.comparators[0]) is not None:
            return _count_test(test.ops[0], _number(test.comparators[0]))  # type: ignore[arg-type]
        return _says_cpu(test)
    return None


def runs_only_with_device(parents: dict, node) -> bool:
    """Is `node` reached, within its function, only when a device is there (see the module's docstring)?"""
    child, parent = node, parents.get(id(node))
    while parent is not None:
        if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and child is not parent.test:
            answer = device_answer(parent.test)
            in_body = child is parent.body or (isinstance(parent.body, list) and child in parent.body)
            if answer is True and in_body or answer is False and not in_body and not isinstance(parent, ast.While):
                return True
        if isinstance(child, ast.stmt):
            for block in _blocks(parent):
                if child in block and _exits_without_device(block[:block.index(child)]):
                    return True
        if isinstance(parent, _FUNCTIONS):
            return False
        child, parent = parent, parents.get(id(parent))
    return False


def _blocks(node) -> list:
    """The statement lists of `node` (body, orelse, finalbody, handlers' bodies are their own nodes)."""
    return [getattr(node, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(node, f, None), list)]


def _exits_without_device(before: list) -> bool:
    """Does one of these statements leave the block when there is no device (`if device.type == "cpu":
    return ...`, `if not torch.cuda.is_available(): raise ...`)?"""
    return any(isinstance(s, ast.If) and not s.orelse and s.body and _exit(s.body[-1])
               and device_answer(s.test) is False for s in before)


def _exit(stmt) -> bool:
    """return, raise, continue, break, or a call of sys.exit / exit / quit / os._exit."""
    if isinstance(stmt, _EXITS):
        return True
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    f = call.func if isinstance(call, ast.Call) else None
    return (f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "") in \
        ("exit", "quit", "_exit")
