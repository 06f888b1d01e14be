"""The rule registry: every conversion rule is a small documented unit with an id.

A rule names the syntax it inspects (`nodes`: ast node classes; or "ref" for
references to imported names, or "shell" for launch scripts), the words that
must appear on a line for it to care (`triggers`, used to skip files and
subtrees cheaply), and a check function.  Its docstring is its documentation:
first line = summary, then "what and why"; `example` is a before/after pair for
the npu target, checked by the test suite.  `torchport rules` and
docs/rules.md are generated from this registry.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    category: str
    doc: str
    example: tuple = ()              # (before, after) for the npu target
    nodes: tuple = ()                # ast classes the check receives
    triggers: tuple = ()             # lowercase words; a line without any is never shown to the rule
    check: Optional[Callable] = None
    source: str = "builtin"          # or the user rule file it came from
    extra: dict = field(default_factory=dict)

    @property
    def summary(self) -> str:
        return self.doc.strip().splitlines()[0] if self.doc.strip() else self.name


RULES: dict = {}


def rule(id: str, name: str, category: str, example=(), nodes=(), triggers=()):
    """Register the decorated function as a rule; its docstring documents it."""
    def wrap(fn):
        if id in RULES:
            raise ValueError(f"duplicate rule id {id}")
        fn.rule = RULES[id] = Rule(id, name, category, fn.__doc__ or "", tuple(example), tuple(nodes),
                                   tuple(t.lower() for t in triggers), fn)
        return fn
    return wrap


def describe(id: str, name: str, category: str, doc: str, example=(), triggers=()):
    """Register a rule that is carried out by a shared mechanism (no check of its own)."""
    RULES[id] = Rule(id, name, category, doc, tuple(example), (), tuple(t.lower() for t in triggers))


def conversion_rules() -> dict:
    """The registry with the rules convert carries out (all a conversion needs; cheaper to load)."""
    from . import config, multicard, rules, shell  # noqa: F401  (registers the conversion rules)

    return RULES


def builtin_rules() -> dict:
    """Every rule: conversion, what only analyze looks for, and what port-ext does."""
    from ..analyze import deps, native  # noqa: F401
    from ..porting import api, buildglue, engine  # noqa: F401

    return conversion_rules()
