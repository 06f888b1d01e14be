"""Per-file state shared by the Python rules: source positions, imports, edits, findings.

Rules never touch text directly: they call `replace`, `insert` or `report`,
which record an Edit (character offsets into the original text) and the
Finding that explains it, with line numbers of the original file.
"""
from __future__ import annotations

import ast
import bisect
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, Union, cast

from ..core import edits as edit_ops
from ..core.edits import Edit
from ..core.finding import ADVICE, INSERT, MODIFY, Finding
from ..kb.apimap import ApiMap, Resolution

if TYPE_CHECKING:
    from ..core.codes import Code
    from .reach import Place


class Located(Protocol):
    """An ast node with a place in the source (an expression, statement, keyword, argument, alias...)."""

    @property
    def lineno(self) -> int: ...
    @property
    def col_offset(self) -> int: ...
    @property
    def end_lineno(self) -> Optional[int]: ...
    @property
    def end_col_offset(self) -> Optional[int]: ...


Span = tuple[int, int]   # (start, end) character offsets into the source
ImportStmt = Union[ast.Import, ast.ImportFrom]

_NEWLINES = re.compile(r"\r\n|\r|\n")
_LINE_REST = re.compile(r"[^\r\n]*")
_LEADING = 1 << 40   # subtracted from a leading insertion's order (FileContext.insert)


@dataclass
class Binding:
    """A local name bound by import statements (the same import may repeat, e.g. in several functions)."""

    local: str
    qualname: str
    kind: str                    # "package" (import torch / import torch as th), "module" (import a.b as x), "from"
    stmt: ImportStmt             # the first import statement that binds it
    scope: Optional[tuple[int, int]] = None  # (first, last) line of the function holding the import; None: module
    # [(python.Ref, Resolution)]: Any, as python.py imports this module (tests/test_layers.py: no cycles)
    uses: list[tuple[Any, Resolution]] = field(default_factory=list)
    stmts: list[ImportStmt] = field(default_factory=list)  # every import statement that binds it (same scope)
    ambiguous: bool = False      # also bound to something else in the same scope: left to the user
    converted: bool = False      # every use rewritten by a rule of its own (apex.amp): nothing to report
    # bound only by imports that never run (`if TYPE_CHECKING:`): a name for type checkers, which the code convert
    # writes must not use (reach.py); the uses the file has of it are still converted like any other
    typing_only: bool = False

    def fresh(self) -> Binding:
        """A copy with its own list of uses (the template is shared by every target's walk)."""
        return Binding(self.local, self.qualname, self.kind, self.stmt, self.scope, [], self.stmts, self.ambiguous,
                       typing_only=self.typing_only)

    def visible_at(self, line: int) -> bool:
        return self.scope is None or self.scope[0] <= line <= self.scope[1]

    def __post_init__(self) -> None:
        self.stmts = self.stmts or [self.stmt]


def visible_binding(bindings: dict[str, list[Binding]], local: str, line: int) -> Optional[Binding]:
    """The import binding of `local` visible at `line` in {local: [Binding]} (the innermost function's wins)."""
    best = None
    for b in bindings.get(local, ()):
        if b.visible_at(line) and (best is None or (b.scope or (0, 0))[0] > (best.scope or (0, 0))[0]):
            best = b
    return best


def resolve(bindings: dict[str, list[Binding]], node: Optional[ast.AST]) -> Optional[str]:
    """The dotted name a plain Name/Attribute chain refers to through the imports in `bindings`
    (`nn.Conv2d` -> torch.nn.Conv2d), or None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    binding = visible_binding(bindings, node.id, node.lineno)
    return ".".join([binding.qualname, *reversed(parts)]) if binding is not None else None


class FileContext:
    def __init__(self, path: str, source: str, api: ApiMap, newline: str = "\n",
                 line_starts: Optional[list[int]] = None):
        self.path = path
        self.source = source
        self.api = api
        self.target = api.target
        self.newline = newline
        self.line_starts = line_starts or [0] + [m.end() for m in _NEWLINES.finditer(source)]
        self.ascii = source.isascii()
        self.bindings: dict[str, list[Binding]] = {}   # local name -> [Binding], one per scope
        self.edits: list[Edit] = []
        self._by_start: list[tuple[int, int, Edit]] = []   # sorted: edits in a span without a scan
        self.findings: list[Finding] = []     # findings without an edit
        self.parent: Optional[ast.AST] = None  # set by the walker before each check
        self.tree: Optional[ast.Module] = None
        self.parents: Callable[[], dict[int, ast.AST]] = dict  # () -> {id(node): parent}, for the data-flow rules
        # () -> {ast class: [its nodes]} (each list holds its key's class: Any), built with the parents
        self.nodes_by_type: Callable[[], dict[type[ast.AST], list[Any]]] = dict
        self.needs_imports: set[str] = set()      # top-level packages a rewrite named but the file lacks
        self.needs_register = False
        self.register_at_module = False          # module-level code convert wrote names the device (apex's scaler)
        self.first_torch_import: Optional[ImportStmt] = None   # the one that runs first (python.collect_bindings)
        self.places: dict[int, Place] = {}         # id(import statement) -> where it runs (reach.py)
        self.handled: set[int] = set()           # ids of nodes a rule already rewrote (or decided to leave)
        self.target_imports: list[ast.stmt] = []   # import statements rewritten to the target
        self.launch = False                      # the launch script always gets the registration import
        self.shim = False                        # --runtime-shim, in an entry script: the run-time mapping
        self.device_names: frozenset[str] = frozenset()   # module-level names other files use as devices (project.py)
        self.device_params: dict[str, tuple[int, str]] = {}   # callee as written here -> (position, keyword): another file's
        self.device_env = ""                     # convert -s: the launch script takes its device from this variable
        self.user_codes: dict[str, Code] = {}    # id -> Code of a user rule file
        self.memo: dict[str, Any] = {}           # what a rule works out once per file (rules/methods.py)
        self._order = 0

    # ------------------------------------------------------------ positions
    def offset(self, lineno: int, col: int) -> int:
        start = self.line_starts[lineno - 1]
        if self.ascii:
            return start + col
        end = self.line_starts[lineno] if lineno < len(self.line_starts) else len(self.source)
        line = self.source[start:end]
        if line.isascii():
            return start + col
        return start + len(line.encode("utf-8")[:col].decode("utf-8", "replace"))

    def span(self, node: Located) -> Span:
        # a parsed node has its end (Python 3.8+); None only in nodes made by hand, which never come here
        return (self.offset(node.lineno, node.col_offset),
                self.offset(cast(int, node.end_lineno), cast(int, node.end_col_offset)))

    def text(self, node: Located) -> str:
        start, end = self.span(node)
        return self.source[start:end]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset)

    def user_code(self, rule_id: str) -> Code:
        return self.user_codes[rule_id]

    # ------------------------------------------------------------ names
    def all_bindings(self) -> Iterator[Binding]:
        for group in self.bindings.values():
            yield from group

    def runtime_bindings(self) -> Iterator[Binding]:
        """The bindings an import that runs makes: the names code convert writes may use (not TYPE_CHECKING's)."""
        return (b for b in self.all_bindings() if not b.typing_only)

    def lookup(self, local: str, line: int) -> Optional[Binding]:
        """The import binding of `local` visible at `line` (the innermost function's import wins)."""
        return visible_binding(self.bindings, local, line)

    def qualname(self, node: Optional[ast.AST]) -> Optional[str]:
        """Dotted name an expression refers to through the file's imports, if it is a plain chain."""
        return resolve(self.bindings, node)

    def torch_name(self, at: Optional[int] = None) -> str:
        """The file's name for the torch package in code written at line `at`: a module-level import's, else one
        in the function holding `at` (`at` None: code that may be anywhere, the module level too, so a module-level
        import's only); asks for `import torch` when there is none.  A name bound only under TYPE_CHECKING is not
        one: it is unbound when the code runs."""
        b = self.torch_binding(at)
        if b is not None:
            return b.local
        self.needs_imports.add("torch")
        return "torch"

    def torch_binding(self, at: Optional[int] = None) -> Optional[Binding]:
        """The runtime `import torch` (any alias) code written at line `at` can use (see torch_name), or None."""
        return next((b for b in sorted(self.runtime_bindings(), key=lambda b: b.scope is not None)
                     if b.kind == "package" and b.qualname == "torch"
                     and (b.scope is None or at is not None and b.visible_at(at))), None)

    def _module_bindings(self) -> dict[str, Binding]:
        """Module-level import bindings by the name they import (the first of equals), built once per file."""
        key = (id(self.bindings), len(self.bindings))  # bindings are set once per file, before the walk
        if getattr(self, "_spell_key", None) != key:
            self._spell_index: dict[str, Binding] = {}
            for b in self.runtime_bindings():
                if b.scope is None:
                    self._spell_index.setdefault(b.qualname, b)
            self._spell_key = key
        return self._spell_index

    def spell(self, qualname: str, at: Optional[int] = None) -> str:
        """Source text naming `qualname` with the file's own import aliases (module-level ones that run; for torch
        itself also one in the function holding line `at`, see torch_name)."""
        by_name = self._module_bindings()
        parts = qualname.split(".")
        best = next((by_name[p] for p in (".".join(parts[:n]) for n in range(len(parts), 0, -1)) if p in by_name),
                    None)  # the longest imported prefix
        if best is not None:
            return best.local + qualname[len(best.qualname):]
        root = qualname.split(".", 1)[0]
        if root == "torch":
            return self.torch_name(at) + qualname[len("torch"):]
        if root == self.target.register:
            self.needs_register = True
        else:
            self.needs_imports.add(root)
        return qualname

    # ------------------------------------------------------------ call anchors (token-aware)
    def _code(self, start: int, end: int) -> Iterator[tuple[int, str]]:
        """(offset, character) of the code in source[start:end]: blanks, line continuations and comments
        skipped.  Used only where no string can occur (between a callee and its parenthesis, after a call's
        last argument), so a `(` or `,` in a comment is never taken for code."""
        s, i = self.source, start
        while i < end:
            c = s[i]
            if c == "#":
                m = cast("re.Match[str]", _LINE_REST.match(s, i))   # [^\r\n]* matches anywhere
                i = m.end()
            elif c in " \t\f\r\n\\":
                i += 1
            else:
                yield i, c
                i += 1

    def call_open(self, call: ast.Call) -> int:
        """Offset just after the `(` that opens a call's arguments."""
        for i, c in self._code(self.span(call.func)[1], self.span(call)[1]):
            if c == "(":
                return i + 1
        raise ValueError(f"{self.path}:{call.lineno}: no parenthesis after the callee")

    def _bare_generator(self, call: ast.Call) -> bool:
        """`f(x for x in y)`: the generator's parentheses are the call's; another argument needs its own."""
        return (len(call.args) == 1 and not call.keywords and isinstance(call.args[0], ast.GeneratorExp)
                and self.span(call.args[0])[1] == self.span(call)[1])

    def arguments_end(self, call: ast.Call) -> int:
        """Where a new last argument goes: after the last argument and any parentheses around it, before a
        trailing comma or comment; just after the `(` when there are no arguments."""
        nodes: list[Union[ast.expr, ast.keyword]] = [*call.args, *call.keywords]
        if not nodes:
            return self.call_open(call)
        last = max(nodes, key=lambda n: (n.end_lineno, n.end_col_offset))
        pos = self.span(last)[1]
        for i, c in self._code(pos, self.span(call)[1] - 1):
            if c != ")":
                break
            pos = i + 1
        return pos

    def add_argument(self, call: ast.Call, text: str, rule: Code, message: str = "", category: Optional[str] = None,
                     shown: Optional[str] = None, quiet: bool = False, first: bool = False) -> None:
        """Add one argument (`x`, `key=value`) to a call, last or `first`, with the comma it needs."""
        shown = shown if shown is not None else text
        has_args = bool(call.args or call.keywords)
        if self._bare_generator(call):
            start, end = self.span(call.args[0])
            self.insert(start + 1, f"{text}, (" if first else "(", rule, message, category, shown, quiet)
            self.insert(end - 1, ")" if first else f"), {text}", rule, quiet=True)
        elif first:
            at = self.call_open(call)
            sep = ("," if self.source[at:at + 1] in ("\r", "\n") else ", ") if has_args else ""
            self.insert(at, text + sep, rule, message, category, shown, quiet)
        else:
            self.insert(self.arguments_end(call), (", " if has_args else "") + text, rule, message, category,
                        shown, quiet)

    # ------------------------------------------------------------ output
    def _finding(self, start: int, end: int, rule: Code, action: str, old: str, new: str,
                 message: str, category: Optional[str]) -> Finding:
        line = self.line_of(start)
        end_line = self.line_of(max(start, end - 1)) if end > start else line
        return Finding(self.path, line, end_line, rule.id, category or rule.category, action,
                       old, new, message, start - self.line_starts[line - 1])

    def replace(self, span: Union[Located, Span], new: str, rule: Code, message: str = "",
                category: Optional[str] = None, shown: Optional[tuple[str, str]] = None, quiet: bool = False) -> None:
        """Replace text; `shown` = (old, new) to report instead of the bare edited text;
        `quiet` edits are part of a change that another finding reports."""
        start, end = span if isinstance(span, tuple) else self.span(span)
        old = self.source[start:end]
        if old == new:
            return
        shown_old, shown_new = shown or (old, new)
        new = self._keeping_comments(old, new, end)
        finding = None if quiet else self._finding(start, end, rule, MODIFY, shown_old, shown_new, message, category)
        self._add(Edit(start, end, new, finding, self._order + 1))

    def _keeping_comments(self, old: str, new: str, end: int) -> str:
        """`new`, followed by the comments of the replaced text that it lacks, each on its own line (a
        replaced span with a comment runs over lines, so it is inside brackets, where that is allowed)."""
        if "#" not in old or "\n" not in old:
            return new
        try:
            comments = [t.string for t in tokenize.generate_tokens(io.StringIO(old).readline)
                        if t.type == tokenize.COMMENT]
        except (tokenize.TokenError, SyntaxError):
            return new
        lost = [c for c in comments if c not in new]
        if not lost:
            return new
        line_start = self.line_starts[self.line_of(end) - 1]
        indent = self.source[line_start:end][:len(self.source[line_start:end]) - len(self.source[line_start:end].lstrip())]
        return new + "".join(f"  {c}{self.newline}{indent}" for c in lost)

    def _add(self, edit: Edit) -> None:
        self._order = max(self._order, edit.order)
        self.edits.append(edit)
        bisect.insort(self._by_start, (edit.start, edit.order, edit))

    def edits_within(self, start: int, end: int) -> list[Edit]:
        """The edits made so far that lie inside source[start:end], in the order they were made."""
        i = bisect.bisect_left(self._by_start, (start,))
        inside = []
        while i < len(self._by_start) and self._by_start[i][0] <= end:
            if self._by_start[i][2].end <= end:
                inside.append(self._by_start[i][2])
            i += 1
        return sorted(inside, key=lambda e: e.order)

    def drop_edits_within(self, start: int, end: int) -> None:
        """Take back the edits inside source[start:end] (a rule that decides the span stays as it is)."""
        dropped = {id(e) for e in self.edits_within(start, end)}
        self.edits = [e for e in self.edits if id(e) not in dropped]
        self._by_start = [t for t in self._by_start if id(t[2]) not in dropped]

    def preview(self, start: int, end: int) -> str:
        """The text of source[start:end] with the edits made so far that lie inside it."""
        inside = self.edits_within(start, end)
        new, _, _ = edit_ops.apply(self.source[start:end],
                                   [Edit(e.start - start, e.end - start, e.text, None, e.order) for e in inside])
        return new

    def note_change(self, span: Union[Located, Span], rule: Code, message: str = "", category: Optional[str] = None) -> None:
        """Report the edits made inside a node (or span) as one change, old text -> new text."""
        start, end = span if isinstance(span, tuple) else self.span(span)
        self.findings.append(self._finding(start, end, rule, MODIFY, self.source[start:end],
                                           self.preview(start, end), message, category))

    def insert(self, pos: int, text: str, rule: Code, message: str = "", category: Optional[str] = None,  # noqa: PLR0913
               shown: Optional[str] = None, quiet: bool = False, anchor: Optional[int] = None,
               leading: bool = False) -> None:
        """Insert text; `quiet` edits belong to a change already reported by another edit;
        `anchor` is the offset the finding points at (default: the insertion point).  A `leading` insertion (an
        import the file's new code needs) goes before the other insertions at the same offset, whenever made."""
        at = pos if anchor is None else anchor
        finding = None if quiet else self._finding(
            at, at, rule, INSERT, "", shown if shown is not None else text.strip(), message, category)
        order = self._order + 1
        if leading:
            self._order = order   # counted: the next edit's order is another
            order -= _LEADING
        self._add(Edit(pos, pos, text, finding, order))

    def report(self, node: Located, rule: Code, action: str = ADVICE, message: str = "",
               category: Optional[str] = None, old: Optional[str] = None, reasons: tuple[str, ...] = ()) -> None:
        start, end = self.span(node)
        self.report_span(start, end, rule, action, message, category, old, reasons)

    def report_span(self, start: int, end: int, rule: Code, action: str = ADVICE, message: str = "",
                    category: Optional[str] = None, old: Optional[str] = None, reasons: tuple[str, ...] = ()) -> None:
        text = self.source[start:end] if old is None else old
        if "\n" in text:
            text = text.split("\n", 1)[0].rstrip() + " ..."
        if len(text) > 200:
            text = text[:197] + "..."
        self.findings.append(replace(self._finding(start, end, rule, action, text, "", message, category),
                                     reasons=reasons) if reasons else
                             self._finding(start, end, rule, action, text, "", message, category))
