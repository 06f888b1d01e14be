"""Names a rewrite leaves undefined: the check every Python file torchport writes goes through, beside compiling.

A rewrite that compiles can still break a program: a rename that crosses a scope (`CUDA_HOME` -> `MUSA_HOME`
inside a function whose parameter is `CUDA_HOME`, where no `MUSA_HOME` is bound) fails with NameError when it
runs.  `undefined_after` looks at the names an edit brings in (an identifier of its new text, outside strings,
that the old text never spelled) and reports those the new text reads as globals without binding them.
Cheap where nothing new is named: the symbol table is built only then.
"""
from __future__ import annotations

import builtins
import io
import re
import symtable
import tokenize

_WORD = re.compile(r"[A-Za-z_]\w*")
# module attributes every module has
_MODULE_NAMES = frozenset({"__file__", "__name__", "__doc__", "__spec__", "__loader__", "__package__",
                           "__builtins__", "__path__", "__annotations__", "__dict__", "__cached__"})


def _root_names(text: str) -> set:
    """Identifiers of a snippet that start a name (not after a dot), outside strings and comments."""
    names: set = set()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return {m.group() for m in _WORD.finditer(text)}
    previous = None
    for tok in tokens:
        if tok.type == tokenize.NAME and not (previous is not None and previous.string == "."):
            names.add(tok.string)
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT):
            previous = tok
    return names


def _unbound_globals(text: str) -> set:
    """Names the module reads as globals (at its top level, or free in a function) without binding them at its top
    level, less builtins; empty when it cannot tell (a syntax error, `from x import *`)."""
    try:
        top = symtable.symtable(text, "<converted>", "exec")
    except (SyntaxError, ValueError, RecursionError):
        return set()
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    if "*" in bound or any(s.get_name() == "*" for s in top.get_symbols()):
        return set()
    read: set = set()
    stack = [top]
    while stack:
        table = stack.pop()
        for s in table.get_symbols():
            if s.is_referenced() and (table is top or s.is_global()):
                read.add(s.get_name())
        stack.extend(table.get_children())
    return read - bound - set(dir(builtins)) - _MODULE_NAMES


def undefined_after(old_text: str, new_text: str, replaced) -> list:
    """The names the edits bring into `new_text` that it reads without defining (sorted; [] when none).
    `replaced`: (old snippet, new snippet) of each edit.  An edit of a name the old text did not define either
    (a user rule's `old_func` -> `new_func`) is the project's business, not a break."""
    old_words = set(_WORD.findall(old_text))
    brought: dict = {}   # name -> the root names of the text it replaced
    for old_snippet, new_snippet in replaced:
        for name in _root_names(new_snippet) - old_words:
            brought.setdefault(name, set()).update(_root_names(old_snippet))
    if not brought:
        return []
    unbound = _unbound_globals(new_text)
    missing = [name for name in brought if name in unbound]
    if not missing:
        return []
    before = _unbound_globals(old_text)
    return sorted(name for name in missing if not brought[name] & before)
