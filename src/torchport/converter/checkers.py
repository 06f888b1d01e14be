"""Checkers: the small units that find (and rewrite) what the codes in `core.codes` name.

A checker declares the codes it emits and the phase it runs in; the phase fixes
its calling convention:

- `Phase.NODE`: `check(node, ctx)` for each ast node of the classes in `nodes`
  on a relevant line (one holding a trigger word);
- `Phase.REFERENCE`: `check(ref, ctx)` for each use of an imported name;
- `Phase.FILE`: `check(tree, ctx)` once per file, after the walk;
- `Phase.SHELL`: `check(text, start, ctx)` for each line of a shell script;
- `Phase.CONFIG`: `check(rel, text, target)` over YAML/JSON/INI settings files;
- `Phase.DISTRIBUTED`: `check(script, layout)`, in order, for `convert --distributed`
  (see `converter.multicard`).

`triggers` are lowercase words a line must hold for the checker to care about
it.  `needs` (by default the triggers) are words the file must hold for the
checker to run on it at all: a file holding no checker's needs is copied, not
parsed, and a checker whose needs a file lacks is not called there.  The decorator only
attaches the Checker to its function: nothing is registered globally.
`converter.rules.builtin_checkers()` is the one place that assembles them.
"""
from __future__ import annotations

import ast
import enum
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, TypeVar

from ..core.codes import Code

_F = TypeVar("_F", bound=Callable[..., Any])


class Phase(enum.Enum):
    NODE = "node"
    REFERENCE = "reference"
    FILE = "file"
    SHELL = "shell"
    CONFIG = "config"
    DISTRIBUTED = "distributed"


@dataclass(frozen=True)
class Checker:
    name: str
    codes: tuple[Code, ...]       # the codes (core.codes.Code, or a user rule's Code) it may emit
    phase: Phase
    check: Callable[..., Any]     # its calling convention is its phase's (above)
    nodes: tuple[type[ast.AST], ...] = ()   # Phase.NODE: the ast classes it receives
    triggers: tuple[str, ...] = ()  # lowercase words: the lines it looks at hold one
    needs: tuple[str, ...] = ()   # lowercase words: the files it runs on hold one (default: the triggers)

    def __post_init__(self) -> None:
        if not self.needs:
            object.__setattr__(self, "needs", self.triggers)


def checker(*codes: Code, phase: Phase = Phase.NODE, nodes: tuple[type[ast.AST], ...] = (),
            triggers: tuple[str, ...] = (), needs: tuple[str, ...] = ()) -> Callable[[_F], _F]:
    """Make the decorated function a Checker (kept as its `.checker` attribute); `needs` defaults to
    `triggers`."""
    if phase is Phase.NODE and not nodes:
        raise ValueError("a node checker needs the ast classes it receives")

    def wrap(fn: _F) -> _F:
        fn.checker = Checker(fn.__name__.replace("_", "-"), tuple(codes), phase, fn,  # type: ignore[attr-defined]
                             tuple(nodes), tuple(t.lower() for t in triggers),
                             tuple(t.lower() for t in needs))
        return fn
    return wrap


def found_in(*modules: ModuleType) -> list[Checker]:
    """The checkers defined in these modules, in definition order."""
    return [obj.checker for m in modules for obj in vars(m).values()
            if callable(obj) and isinstance(getattr(obj, "checker", None), Checker)]
