"""The Python pipeline for one file: prefilter, parse, find imports, walk, rewrite.

Speed comes from not looking: a file without any trigger word is not parsed,
and the walk skips every statement and expression whose lines hold no trigger
word (nor a name imported from a CUDA-specific module).  Rules see only the
nodes that can matter to them.
"""
from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Optional, TypeVar, Union, cast

from ..core import codes, suppress
from ..core import edits as edit_ops
from ..core.codes import Code
from ..core.edits import Edit
from ..core.finding import ERROR, FAILED, Finding
from ..core.words import minimal_words, trie_pattern
from ..kb.apimap import ApiMap
from .checkers import Checker, Phase
from .context import Binding, FileContext, ImportStmt, Located
from .flow import CHILD_FIELDS, child_fields
from .project import Facts
from .reach import Place, imports_module, places, unconditional

_IMPORT_WORD = re.compile(r"import\b")
# Imports a conversion adds for its own changes: with every change suppressed, nothing needs them.
DEPENDENT_IMPORTS = frozenset({codes.TP001.id, codes.TP002.id})
_IMPORT_LINE = re.compile(r"[ \t]*(?:from|import)[ \t]+(\w+)")  # on a lowercased line: the module's first name
_NEWLINES = re.compile(r"\r\n|\r|\n")
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
Node = TypeVar("Node", bound=ast.AST)
Scope = Optional[tuple[int, int]]   # (first, last) line of the enclosing function; None: module level
Chain = tuple[ast.Name, list[str]]            # a plain name chain `a.b.c`: (Name a, ["b", "c"])
Step = tuple[ast.AST, Optional[ast.AST], Optional[Chain]]   # walk_plan's (node, parent, chain)
Bindings = tuple[dict[str, list[Binding]], Optional[ImportStmt]]   # SourceFile.bindings()
Dispatch = dict[Union[type[ast.AST], Phase], list[Checker]]   # ast class or phase -> the checkers it runs


def touches(lines: list[int], node: ast.AST) -> bool:
    """Does the node span one of the (sorted) relevant lines?  Nodes without lines always do."""
    lineno = getattr(node, "lineno", None)
    if lineno is None:
        return True
    decorators = getattr(node, "decorator_list", None)
    if decorators:  # a def's lineno is the `def` line; its decorators come before it
        lineno = min(lineno, decorators[0].lineno)
    i = bisect.bisect_left(lines, lineno)
    # a node with a line has an end line
    return i < len(lines) and lines[i] <= cast(int, cast(Located, node).end_lineno)


def lower_text(source: str) -> str:
    """source.lower() with the same length (a few characters, like İ, lower to two)."""
    lowered = source.lower()
    if len(lowered) != len(source):
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in source)
    return lowered


def _parent_map(tree: ast.AST, by_type: Optional[dict[type[ast.AST], list[Any]]] = None) -> dict[int, ast.AST]:
    """{id(child): parent} for every node under `tree` but the shared context and operator singletons (which
    have no one parent), without `iter_child_nodes`' generators: this is the hottest walk of a conversion.
    Given `by_type`, it also fills {ast class: [nodes]} in the same walk."""
    parents: dict[int, ast.AST] = {}
    stack = [tree]
    pop, push, node_type, fields = stack.pop, stack.append, ast.AST, CHILD_FIELDS.get
    collect = by_type.setdefault if by_type is not None else None
    while stack:
        node = pop()
        if collect is not None:
            collect(node.__class__, []).append(node)
        for name in fields(node.__class__) or child_fields(node.__class__):
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, node_type):
                        parents[id(item)] = node
                        push(item)
            elif isinstance(value, node_type):
                parents[id(value)] = node
                push(value)
    return parents


class SourceFile:
    """One Python source and what several targets' converters can share about it (all computed lazily):
    the lowercased text, the parse tree, line offsets, import statements, relevant lines."""

    def __init__(self, path: str, source: str):
        self.path = path
        self.source = source
        self.lowered = lower_text(source)
        self._tree: Optional[ast.Module] = None
        self._line_starts: Optional[list[int]] = None
        self._imports: Optional[list[tuple[Union[ast.Import, ast.ImportFrom], Scope]]] = None
        self._bindings: Optional[Bindings] = None
        self._places: Optional[dict[int, Place]] = None
        self._parents: Optional[dict[int, ast.AST]] = None
        self._by_type: Optional[dict[type[ast.AST], list[Any]]] = None
        self._relevant: dict[Any, list[Any]] = {}   # ("plan", lines) -> walk_plan; a pattern or ("relevant", ...) -> lines

    @property
    def tree(self) -> ast.Module:
        if self._tree is None:
            self._tree = ast.parse(self.source, filename=self.path)
        return self._tree

    @property
    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in _NEWLINES.finditer(self.source)]
        return self._line_starts

    def statement_spans(self) -> list[tuple[int, int]]:
        """(start, end) offsets of the module's top-level statements in whole lines, decorators included:
        each compiles on its own exactly when it compiles in the module."""
        starts, size = self.line_starts, len(self.source)
        spans: list[tuple[int, int]] = []
        for stmt in self.tree.body:
            first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
            end = stmt.end_lineno or stmt.lineno
            spans.append((starts[first - 1], starts[end] if end < len(starts) else size))
        return spans

    def import_nodes(self) -> list[tuple[Union[ast.Import, ast.ImportFrom], Scope]]:
        """[(Import/ImportFrom node, scope)] in source order."""
        if self._imports is None:
            starts, text = self.line_starts, self.source
            # a plain literal search is fast; the word boundary before it is checked by hand
            lines = sorted({bisect.bisect_right(starts, m.start()) for m in _IMPORT_WORD.finditer(text)
                            if m.start() == 0 or not (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_")})
            found = PythonConverter._nodes(self.tree, lines, (ast.Import, ast.ImportFrom))
            # _nodes yields only nodes of the classes asked for (the type variable takes their common base)
            self._imports = sorted(cast("Iterator[tuple[Union[ast.Import, ast.ImportFrom], Scope]]", found),
                                   key=lambda pair: (pair[0].lineno, pair[0].col_offset))
        return self._imports

    def bindings(self) -> Bindings:
        """({local name: [Binding]}, first torch import that runs) from the file's imports; copy before use."""
        if self._bindings is None:
            self._bindings = collect_bindings(self.import_nodes(), self.places())
        return self._bindings

    def places(self) -> dict[int, Place]:
        """{id(import statement): where it runs} (reach.py)."""
        if self._places is None:
            self._places = places(self.tree)
        return self._places

    def parents(self) -> dict[int, ast.AST]:
        """{id(node): parent node} over the whole tree (built on first use: data flow needs it), with
        nodes_by_type in the same walk."""
        if self._parents is None:
            self._by_type = {}
            self._parents = _parent_map(self.tree, self._by_type)
        return self._parents

    def nodes_by_type(self) -> dict[type[ast.AST], list[Any]]:
        """{ast class: [nodes]} over the whole tree (analyze's advice asks for it), built with the parent map."""
        if self._by_type is None:
            self.parents()
        return self._by_type  # type: ignore[return-value]  # set with the parents

    def walk_plan(self, lines: list[int]) -> list[Step]:
        key = ("plan", tuple(lines))
        if key not in self._relevant:
            self._relevant[key] = walk_plan(self.tree, lines)
        return self._relevant[key]

    def lines_matching(self, regex: re.Pattern[str]) -> list[int]:
        """Sorted line numbers where `regex` matches the lowercased text (cached per pattern)."""
        key = regex.pattern
        if key not in self._relevant:
            starts = self.line_starts
            self._relevant[key] = sorted({bisect.bisect_right(starts, m.start()) for m in regex.finditer(self.lowered)})
        return self._relevant[key]


@dataclass
class Ref:
    """A use of an imported name: `th.cuda.synchronize`, `autocast`, `amp.GradScaler`."""

    node: ast.expr           # the outermost node of the name chain (an Attribute or a Name)
    binding: Binding
    parts: list[str]         # attribute names after the bound name
    qualname: str
    parent: Optional[ast.AST]


@dataclass(frozen=True)
class FileRole:
    """What the project makes of one file: its launch script (`launch`; `device_env`: convert -s, the
    variable its device index comes from), an entry script that imports the run-time mapping (`shim`,
    --runtime-shim), and what the other files say about it (`facts`: project.py)."""

    launch: bool = False
    device_env: str = ""
    shim: bool = False
    facts: Facts = Facts()


class PythonConverter:
    """Runs the checkers over Python sources for one target."""

    user_codes: dict[str, Code] = {}  # id -> Code, for findings made by user rule files
    selection = suppress.Selection()  # --select/--ignore, [tool.torchport]: the codes this run reports

    def __init__(self, api: ApiMap, rules: list[Checker], import_words: Iterable[str] = ()) -> None:
        self.api = api
        # names that matter only when imported (CUDA-only packages): a file is parsed for them only
        # when one follows `import`/`from` at the start of a line; the reference checker then runs
        self.import_words = frozenset(w.lower() for w in import_words)
        self.rules = rules
        self.words = minimal_words({w for r in rules for w in r.needs})   # a file holds one: parsed
        self.trigger = re.compile(trie_pattern(minimal_words({w for r in self.rules for w in r.triggers})))
        self._dispatch: dict[tuple[int, ...], Dispatch] = {}   # the checkers that run on a file (by their indexes) -> their dispatch table

    def wants(self, lowered: str) -> bool:
        return any(w in lowered for w in self.words) or self.imports_cuda_package(lowered)

    def imports_cuda_package(self, lowered: str) -> bool:
        """Does a line start with `import <word>` or `from <word>` (<word> a CUDA-only package)?  Looked for
        from each `import`: a literal search is much faster than a line-anchored pattern over the text."""
        if not self.import_words:
            return False
        at = lowered.find("import")
        while at != -1:
            found = _IMPORT_LINE.match(lowered, lowered.rfind("\n", 0, at) + 1)
            if found is not None and found.group(1) in self.import_words:
                return True
            at = lowered.find("import", at + 6)
        return False

    def dispatch_for(self, lowered: str) -> Dispatch:
        """{ast class or Phase: [checkers]} of the checkers whose needs the file holds (and the reference
        checkers wherever a CUDA-only package is imported)."""
        imports: list[bool] = []

        def runs(r: Checker) -> bool:
            if not r.needs or any(w in lowered for w in r.needs):
                return True
            if r.phase is Phase.REFERENCE:
                if not imports:
                    imports.append(self.imports_cuda_package(lowered))
                return imports[0]
            return False

        active = tuple(i for i, r in enumerate(self.rules) if runs(r))
        table = self._dispatch.get(active)
        if table is None:
            table = self._dispatch[active] = {}
            for i in active:
                r = self.rules[i]
                for kind in (r.nodes if r.phase is Phase.NODE else (r.phase,)):
                    table.setdefault(kind, []).append(r)
        return table

    def convert(self, path: str, source: str, newline: str = "\n", role: FileRole = FileRole(),
                src: Optional[SourceFile] = None, wanted: bool = False, suppressed: Optional[list[Finding]] = None
                ) -> tuple[str, list[Edit], list[Finding]]:
        """Return (new_source, kept_edits, findings); raises SyntaxError on unparsable input.

        `role` is what the project makes of the file (FileRole).  `src` may be passed in when
        several targets look at one file: what it computes is shared (the rules never change the
        tree); `wanted` says the caller already found trigger words in it.  Findings that
        `# torchport: ignore` comments or `self.selection` suppress are not reported and their
        changes not made; they are appended to `suppressed` when it is given (core/suppress.py)."""
        src = src if src is not None else SourceFile(path, source)
        register = path in role.facts.device_users
        if not (role.launch or role.shim or register or wanted or self.wants(src.lowered)):
            return source, [], []
        tree = src.tree
        ctx = FileContext(path, source, self.api, newline, src.line_starts)
        ctx.launch = role.launch
        ctx.shim = role.shim
        ctx.device_names, ctx.device_params = role.facts.names_of(path), role.facts.params_of(path)
        ctx.needs_register = register   # it uses a name another file binds to the target's device
        ctx.device_env = role.device_env
        ctx.tree, ctx.parents, ctx.nodes_by_type = tree, src.parents, src.nodes_by_type
        ctx.user_codes = self.user_codes
        dispatch = self.dispatch_for(src.lowered)
        self._collect_imports(ctx, src)
        lines = self._relevant_lines(ctx, src)
        self._walk(ctx, src, lines, dispatch)
        for r in dispatch.get(Phase.FILE, ()):
            r.check(tree, ctx)
        before = list(ctx.edits)
        table, warnings = suppress.python_comments(src.source, src.tree, {c.upper() for c in self.user_codes})
        suppress.take(ctx, table, warnings, self.selection, suppressed)
        kept_ids = {id(e) for e in ctx.edits}
        taken = [e.finding for e in before if id(e) not in kept_ids and e.finding is not None]
        if taken and all(suppress.suppressed_by(table, f.rule, f.line) for f in taken) and ctx.edits \
                and not (ctx.launch or ctx.needs_register or ctx.shim) and \
                all(e.finding is not None and e.finding.rule in DEPENDENT_IMPORTS for e in ctx.edits):
            ctx.edits = []   # the changes a `# torchport: ignore` took wanted these imports: they go with them
        new_source, kept, dropped = edit_ops.apply(source, ctx.edits)
        findings = [e.finding for e in kept if e.finding is not None] + ctx.findings
        findings += [conflict_finding(ctx, e, kept) for e in edit_ops.conflicts(kept, dropped)]
        findings.sort(key=lambda f: (f.line, f.col, f.rule))
        return new_source, kept, findings

    # ------------------------------------------------------------ imports
    def _collect_imports(self, ctx: FileContext, src: SourceFile) -> None:
        templates, ctx.first_torch_import = src.bindings()
        ctx.places = src.places()
        ctx.bindings = {local: [b.fresh() for b in group] for local, group in templates.items()}

    def _relevant_lines(self, ctx: FileContext, src: SourceFile) -> list[int]:
        """Lines holding a trigger word, or a name imported from a CUDA-specific module
        (the same for every target: cached in the SourceFile)."""
        key = ("relevant", self.trigger.pattern)
        if key not in src._relevant:
            words = sorted({b.local.lower() for b in ctx.all_bindings()
                            if b.kind != "package" and self.trigger.search(b.qualname.lower())
                            or self.api.resolve(b.qualname)})  # `import bitsandbytes as bnb`: bnb
            lines = src.lines_matching(self.trigger)
            if words:
                extra = src.lines_matching(re.compile(r"\b(?:" + trie_pattern(words) + r")\b"))
                lines = sorted(set(lines) | set(extra))
            src._relevant[key] = lines
        return src._relevant[key]

    # ------------------------------------------------------------ walking
    @staticmethod
    def _nodes(tree: ast.AST, lines: list[int], types: tuple[type[Node], ...]) -> Iterator[tuple[Node, Scope]]:
        """Yield (node, scope) of the given types whose lines include a relevant line; scope is the
        (first, last) line of the innermost enclosing function, or None at module level."""
        stack: list[tuple[ast.AST, Scope]] = [(tree, None)]
        while stack:
            node, scope = stack.pop()
            if not touches(lines, node):
                continue
            if isinstance(node, types):
                yield node, scope
            if isinstance(node, FUNCTIONS):
                scope = (node.lineno, cast(int, node.end_lineno))   # a parsed node has its end
            stack.extend((child, scope) for child in ast.iter_child_nodes(node))

    def _walk(self, ctx: FileContext, src: SourceFile, lines: list[int], dispatch: Dispatch) -> None:
        refs = dispatch.get(Phase.REFERENCE, ())
        for node, parent, chain in src.walk_plan(lines):
            ctx.parent = parent
            for r in dispatch.get(type(node), ()):
                r.check(node, ctx)
            if chain is not None:
                root, parts = chain
                binding = ctx.lookup(root.id, root.lineno)
                if binding is not None:
                    # a chain is found only at an Attribute or a Name (walk_plan)
                    ref = Ref(cast(ast.expr, node), binding, parts, ".".join([binding.qualname, *parts]), parent)
                    for r in refs:
                        r.check(ref, ctx)


def conflict_finding(ctx: FileContext, edit: Edit, kept: list[Edit]) -> Finding:
    """Two rules rewrote overlapping text: a torchport bug, the file fails (see converter/run.py)."""
    line = ctx.line_of(edit.start)
    other = next((k for k in kept if k.start < edit.end and edit.start < max(k.end, k.start + 1)), None)
    kept_text = f"{ctx.source[other.start:other.end]!r} -> {other.text!r}" if other is not None else "another edit"
    return Finding(ctx.path, line, line, codes.TP000.id, FAILED, ERROR,
                   ctx.source[edit.start:edit.end], edit.text,
                   f"two rewrites overlap: kept {kept_text}, dropped this one (a torchport bug; please report it)")


def collect_bindings(found: Iterable[tuple[Union[ast.Import, ast.ImportFrom], Scope]],
                     where: Optional[dict[int, Place]] = None) -> Bindings:
    """({local: [Binding, one per scope]}, the torch import code convert writes goes after) of the import nodes.

    An import that never runs (`if TYPE_CHECKING:`) binds a name for type checkers only: its Binding says so
    (typing_only), and it is never the torch import.  That one is the first module-level torch import that runs
    unconditionally (reach.unconditional), else the first at module level that runs at all (in a `try:` or a
    branch), else the first in a function."""
    bindings: dict[str, list[Binding]] = {}
    where = where or {}
    nowhere = Place((), None, False)
    candidates: list[tuple[ImportStmt, Scope]] = []

    def bind(local: str, qualname: str, kind: str, node: ImportStmt, scope: Scope, never: bool) -> None:
        group = bindings.setdefault(local, [])
        old = next((b for b in group if b.scope == scope), None)
        if old is None:
            group.append(Binding(local, qualname, kind, node, scope, typing_only=never))
            return
        old.stmts.append(node)
        old.typing_only = old.typing_only and never
        if (old.qualname, old.kind) != (qualname, kind):
            old.ambiguous = True

    for node, scope in found:
        never = where.get(id(node), nowhere).never
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    kind = "package" if "." not in alias.name else "module"
                    bind(alias.asname, alias.name, kind, node, scope, never)
                else:
                    top = alias.name.split(".")[0]
                    bind(top, top, "package", node, scope, never)
        elif node.level == 0 and node.module:
            for alias in node.names:
                if alias.name == "*":
                    continue
                local = alias.asname or alias.name
                bind(local, f"{node.module}.{alias.name}", "from", node, scope, never)
        if not never and imports_module(node, "torch"):
            candidates.append((node, scope))
    module_level = [n for n, scope in candidates if scope is None]
    first = next((n for n in module_level if unconditional(n, where.get(id(n), nowhere), "torch")), None)
    if first is None:
        first = module_level[0] if module_level else candidates[0][0] if candidates else None
    return bindings, first


def walk_plan(tree: ast.Module, lines: list[int]) -> list[Step]:
    """The nodes a walk visits, in order: [(node, parent, chain)].  Subtrees without a relevant line
    are skipped; a plain name chain (`a.b.c`) is one step whose `chain` is (root Name, [b, c]) and
    whose inner nodes are not visited.  The same for every target, so it is computed once per file."""
    plan: list[Step] = []
    stack: list[tuple[ast.AST, Optional[ast.AST]]] = [(tree, None)]
    while stack:
        node, parent = stack.pop()
        if not touches(lines, node):
            continue
        if isinstance(node, (ast.Attribute, ast.Name)):
            root: ast.expr = node
            parts: list[str] = []
            while isinstance(root, ast.Attribute):
                parts.append(root.attr)
                root = root.value
            if isinstance(root, ast.Name):
                chain = (root, parts[::-1]) if isinstance(root.ctx, ast.Load) else None
                plan.append((node, parent, chain))
                continue  # a plain name chain holds nothing else to look at
            plan.append((node, parent, None))
            stack.append((root, node))
            continue
        plan.append((node, parent, None))
        stack.extend((child, node) for child in ast.iter_child_nodes(node))
    return plan
