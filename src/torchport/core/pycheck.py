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
import keyword
import re
import symtable
import tokenize
from collections.abc import Iterable

_WORD = re.compile(r"[A-Za-z_]\w*")
_KEYWORDS = dict.fromkeys(keyword.kwlist, True)
# module attributes every module has
_MODULE_NAMES = frozenset({"__file__", "__name__", "__doc__", "__spec__", "__loader__", "__package__",
                           "__builtins__", "__path__", "__annotations__", "__dict__", "__cached__"})


def _root_names(text: str, after_dot: bool = False) -> set[str]:
    """Identifiers of a snippet that are read as names: not after a dot (`after_dot`: the snippet itself follows
    one, as the `npu` of `torch.cuda` -> `torch.npu`), not a keyword argument's name, outside strings and comments."""
    names: set[str] = set()
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
                  if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT)]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return {m.group() for m in _WORD.finditer(text)}
    for i, tok in enumerate(tokens):
        dotted = tokens[i - 1].string == "." if i else after_dot
        keyword = i + 1 < len(tokens) and tokens[i + 1].string == "="
        if tok.type == tokenize.NAME and not dotted and not keyword and not _KEYWORDS.get(tok.string):
            names.add(tok.string)
    return names


_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+)[ \t]*(?:#.*)?$", re.M)


def _imported(snippet: str) -> set[str]:
    """The names an inserted `import x` line binds (the registration import convert adds): not new reads."""
    return {m.group(1).split(".")[0] for m in _IMPORT.finditer(snippet)} if "import" in snippet else set()


def _unbound_globals(text: str) -> set[str]:
    """Names the module reads as globals (at its top level, or free in a function) without binding them at its top
    level, less builtins; empty when it cannot tell (a syntax error, `from x import *`)."""
    try:
        top = symtable.symtable(text, "<converted>", "exec")
    except (SyntaxError, ValueError, RecursionError):
        return set()
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    if "*" in bound or any(s.get_name() == "*" for s in top.get_symbols()):
        return set()
    read: set[str] = set()
    stack = [top]
    while stack:
        table = stack.pop()
        for s in table.get_symbols():
            if s.is_referenced() and (table is top or s.is_global()):
                read.add(s.get_name())
        stack.extend(table.get_children())
    return read - bound - set(dir(builtins)) - _MODULE_NAMES


def _inside_quotes(text: str, at: int) -> bool:
    """Is offset `at` inside a string on its line (an odd count of one quote character before it)?  A cheap
    reading, not a tokenizer: it only spares the symbol table for an edit of a string's content."""
    line = text[text.rfind("\n", 0, at) + 1:at]
    return any(line.count(q) % 2 == 1 for q in ("'", '"'))


def undefined_after(old_text: str, new_text: str, replaced: Iterable[tuple[int, int, str]]) -> list[str]:
    """The names the edits bring into `new_text` that it reads without defining (sorted; [] when none).
    `replaced`: (start, end, new snippet) of each edit in `old_text`.  An edit of a name the old text did not
    define either (a user rule's `old_func` -> `new_func`) is the project's business, not a break."""
    old_words = set(_WORD.findall(old_text))
    brought: dict[str, set[str]] = {}   # name -> the root names of the text it replaced
    for start, end, new_snippet in replaced:
        if _inside_quotes(old_text, start):   # a string's content ("cuda" -> "npu"): no name
            continue
        old_snippet = old_text[start:end]
        after_dot = old_text[:start].rstrip().endswith(".")
        for name in _root_names(new_snippet, after_dot) - old_words - _imported(new_snippet):
            brought.setdefault(name, set()).update(_root_names(old_snippet))
    if not brought:
        return []
    unbound = _unbound_globals(new_text)
    missing = [name for name in brought if name in unbound]
    if not missing:
        return []
    before = _unbound_globals(old_text)
    return sorted(name for name in missing if not brought[name] & before)
