"""Performance advice per target (analyze's `<target>/advice.csv`): the rules of kb/advice.toml run over one
parsed Python file.  The rules are data, each with its source; this module owns the few matchers they use,
all read from the syntax tree (nothing is imported or run):

    call = [qualified names]     calls of these names, resolved through the file's imports (a table
                                 {name = instead} fills {instead} in the advice).  Options:
        keywords = {kw = state}  every keyword must be in its state (or one of a list of states): "missing",
                                 "present", "nonzero" (present, not a literal 0/False/None), "undivided"
                                 (present, not a literal, not a division, and not assigned from a division in
                                 the file), or a literal value.  A call with *args/**kwargs, or more positional
                                 arguments than max_positional, is not judged.
        file_calls = [names]     only in a file that also calls one of these qualified names
    method = [names]             x.<name>(...) on any receiver; receiver_call = [names]: only on the result of
                                 a call of one of these (x.transpose(1, 2).contiguous(), torch.transpose(...))
    assign = [qualified names]   assignments to these dotted names (a table fills {instead})
    subscript = "comparison"     x[<comparison>] (a mask built in place), read or written
    define = [names]             definitions of functions with these names
    backward = true              the first .backward() call of a file (its training code)
  and, for every matcher:
    inside = "training-loop"     only in the innermost for/while loop around a .backward() call, and not under an
                                 `if` in it; "step": in such a loop (under an `if` too), or in a method named forward
    in_function_with = [[names]] only in a function that calls, from every group, one of the names
                                 ("@" stands for the matrix-multiply operator)
    skip_paths = [globs]         not in files whose path (relative, with /) matches one: host-side data code
                                 (datasets, transforms) that never runs on the device

A rule's scope ("line", "file" or "project") and `unless_mentioned` words are applied by `file_hits` (file)
and `project_rows` (project).

Cost: the words each matcher spells out (`Rule.word_groups`: called, assigned or defined names and their
package, required keywords, receiver calls, `in_function_with` names) are looked up in the text first, so a
file without them is not parsed for advice (most files: the converter's prefilter skips them too); a parsed
file is walked only on the lines holding the wanted rules' anchor words (`Rule.anchors`, import aliases
added).  A new matcher or option must keep both derivations sound; tests/test_advice.py checks them on
every rule's snippets.
"""
from __future__ import annotations

import ast
import bisect
import fnmatch
import re
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from typing import Optional

from ..converter.context import resolve
from ..converter.flow import CHILD_FIELDS, child_fields
from ..core.words import minimal_words, trie_pattern

MATCHERS = ("call", "method", "assign", "subscript", "define", "backward")
OPTIONS = {"call": {"keywords", "max_positional", "file_calls"}, "method": {"receiver_call"}}
COMMON_OPTIONS = {"inside", "in_function_with", "skip_paths"}
SCOPES = ("line", "file", "project")
STATES = ("missing", "present", "nonzero", "undivided")
INSIDE = ("training-loop", "step")
COLUMNS = ("File", "Line", "Rule", "Advice", "Source")
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@dataclass(frozen=True)
class Rule:
    id: str
    targets: tuple
    kind: str                 # one of MATCHERS
    match: dict
    advice: str
    source: str
    scope: str = "line"
    unless_mentioned: tuple = ()
    positive: str = ""
    negative: str = ""

    def applies_to(self, target: str) -> bool:
        return "all" in self.targets or target in self.targets

    @cached_property
    def names(self) -> dict:
        """{matched name: instead} of a call/assign/method/define matcher ({} for the others)."""
        value = self.match.get(self.kind)
        if isinstance(value, dict):
            return dict(value)
        return {n: "" for n in value} if isinstance(value, list) else {}

    @cached_property
    def word_groups(self) -> tuple:
        """Groups of words read from the matcher: a file must hold a word of every group for the rule to possibly
        match, so a file without them is not parsed for it.  Each is a name the matched code must spell out:
        the last part of a called, assigned or defined name (an import spells it if the call does not), a
        keyword the matcher needs present, a receiver's call, a name of every `in_function_with` group."""
        match = self.match
        if self.kind == "subscript":
            groups: list = [("[",)]
        elif self.kind == "backward":
            groups = [(".backward",)]
        else:
            groups = [_last_parts(self.names)]
        if self.kind in ("call", "assign"):  # resolved through an import of the name's package
            groups.append(tuple(sorted({n.split(".", 1)[0] for n in self.names})))
        for keyword, states in match.get("keywords", {}).items():
            if "missing" not in (states if isinstance(states, list) else [states]):
                groups.append((keyword,))  # `keyword=` is written, or the call is not judged
        for option in ("file_calls", "receiver_call"):
            if match.get(option):
                groups.append(_last_parts(match[option]))
        groups += [tuple(sorted(group)) for group in match.get("in_function_with", ())]
        inside = match.get("inside")
        if inside:
            groups.append((".backward",) if inside == "training-loop" else (".backward", "def forward"))
        return tuple(groups)

    @cached_property
    def anchors(self) -> frozenset:
        """Words on the lines of every node the rule looks at (the walk skips the other lines): the matched name
        (a call's or assignment's import alias is added per file), `[`, `backward` for the step loop, `/` for
        the divisions an "undivided" keyword is checked against."""
        match, words = self.match, set(self.word_groups[0])
        if self.kind == "backward" or match.get("inside"):
            words.add("backward")
        words.update(_last_parts(match.get("file_calls", ())))
        states = [s for v in match.get("keywords", {}).values() for s in (v if isinstance(v, list) else [v])]
        if "undivided" in states:
            words.add("/")
        return frozenset(words)

    @cached_property
    def qualified(self) -> frozenset:
        """The qualified names a call or assignment resolves to (file_calls too): an import alias of one is an
        anchor."""
        if self.kind not in ("call", "assign"):
            return frozenset()
        return frozenset(self.names) | frozenset(self.match.get("file_calls", ()))

    def text(self, name: str) -> str:
        return self.advice.replace("{name}", name).replace("{instead}", self.names.get(name, ""))


def _last_parts(names) -> tuple:
    return tuple(sorted({n.rsplit(".", 1)[-1] for n in names}))


@dataclass(frozen=True)
class Hit:
    """One match in one file: the rule, the line, the matched name (for the advice text)."""

    rule: str
    line: int
    name: str = ""


def _check(entry: dict, known_targets) -> Rule:
    rid = entry.get("id", "")
    kinds = [k for k in MATCHERS if k in entry.get("match", {})]
    if not rid or len(kinds) != 1:
        raise ValueError(f"kb/advice.toml: rule {rid or '?'} needs an id and exactly one matcher of {MATCHERS}")
    kind, match = kinds[0], dict(entry["match"])
    unknown = set(match) - {kind} - OPTIONS.get(kind, set()) - COMMON_OPTIONS
    targets = tuple(entry.get("targets", ()))
    bad_targets = [t for t in targets if t != "all" and t not in known_targets]
    states = [s for v in match.get("keywords", {}).values() for s in (v if isinstance(v, list) else [v])]
    checks = [
        unknown and f"unknown options {sorted(unknown)}",
        not targets and "no targets",
        bad_targets and f"unknown targets {bad_targets}",
        not entry.get("advice") and "no advice",
        not entry.get("source") and "no source",
        entry.get("scope", "line") not in SCOPES and f"scope not one of {SCOPES}",
        match.get("inside", "training-loop") not in INSIDE and f"inside not one of {INSIDE}",
        any(isinstance(s, str) and s not in STATES for s in states) and f"keyword states not in {STATES}",
    ]
    problems = [str(p) for p in checks if p]
    if problems:
        raise ValueError(f"kb/advice.toml: rule {rid}: " + "; ".join(problems))
    return Rule(rid, targets, kind, match, entry["advice"], entry["source"], entry.get("scope", "line"),
                tuple(entry.get("unless_mentioned", ())), entry.get("positive", ""), entry.get("negative", ""))


@cache
def rules() -> tuple:
    """Every rule of kb/advice.toml, checked (a bad rule is a torchport bug: ValueError)."""
    from ..backends import available_targets
    from ..kb import bundled_data

    found = tuple(_check(e, set(available_targets())) for e in bundled_data("advice.toml").get("rule", ()))
    ids = [r.id for r in found]
    if len(ids) != len(set(ids)):
        raise ValueError("kb/advice.toml: rule ids repeat")
    return found


def rules_for(targets) -> tuple:
    return tuple(r for r in rules() if any(r.applies_to(t) for t in targets))


def mentions(text: str, chosen=None) -> frozenset:
    """The `unless_mentioned` words of the rules that `text` holds (any file kind: scripts, configs too)."""
    return frozenset(w for r in (chosen if chosen is not None else rules()) for w in r.unless_mentioned if w in text)


# ------------------------------------------------------------------ the tree
def _bindings(src) -> dict:
    return src.bindings()[0]


def qualname(node, bindings: dict) -> Optional[str]:
    """The dotted name an expression refers to through the file's imports (`nn.Conv2d` -> torch.nn.Conv2d)."""
    return resolve(bindings, node)


def _last_name(func) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _walk_lines(tree, lines: list) -> tuple:
    """({ast class: [nodes]}, {id(node): parent}) over the nodes that span one of the sorted `lines`: every node
    a matcher looks for sits on a line holding its rule's anchor word, and so do all the nodes around it."""
    by_type: dict = {}
    parents: dict = {}
    stack = [tree]
    pop, push, node_type, fields, after = stack.pop, stack.append, ast.AST, CHILD_FIELDS.get, bisect.bisect_left
    collect, last = by_type.setdefault, len(lines)
    while stack:
        node = pop()
        collect(node.__class__, []).append(node)
        for name in fields(node.__class__) or child_fields(node.__class__):
            value = getattr(node, name, None)
            for item in value if isinstance(value, list) else (value,):
                if not isinstance(item, node_type):
                    continue
                start = getattr(item, "lineno", None)
                if start is not None:  # converter.python.touches, inlined: this is the walk's hot loop
                    if getattr(item, "decorator_list", None):
                        start = _first_line(item)
                    i = after(lines, start)
                    if i == last or lines[i] > (getattr(item, "end_lineno", None) or start):
                        continue
                parents[id(item)] = node
                push(item)
    return by_type, parents


def _first_line(node) -> int:
    """The first line of a decorated definition: its first decorator's."""
    return min(node.lineno, node.decorator_list[0].lineno)


class _Tree:
    """What the matchers ask of one file, computed once and only when asked: the nodes of each kind, where a node
    sits (its function, its step loop), what functions call, what the file divides."""

    TYPES = {"call": (ast.Call,), "method": (ast.Call,), "backward": (ast.Call,), "subscript": (ast.Subscript,),
             "assign": (ast.Assign, ast.AugAssign, ast.AnnAssign), "define": (ast.FunctionDef, ast.AsyncFunctionDef)}

    def __init__(self, src, lines: Optional[list] = None):
        self.src = src
        self.tree = src.tree
        self.bindings = _bindings(src)
        if lines is None:  # the whole tree, maps shared with the converter
            self.by_type = src.nodes_by_type()    # ast class -> its nodes (first: the same walk maps the parents)
            self.parents = src.parents()          # id(node) -> its parent
        else:  # only the statements and expressions on `lines` (and the nodes around them)
            self.by_type, self.parents = _walk_lines(self.tree, lines)
        self._training: Optional[set] = None
        self._sorted: dict = {}
        self._called: dict = {}
        self._file_calls: Optional[set] = None
        self._division_targets: Optional[set] = None

    def nodes(self, kind: str) -> list:
        """The nodes a matcher looks at, in source order."""
        if kind not in self._sorted:
            self._sorted[kind] = sorted((n for t in self.TYPES[kind] for n in self.by_type.get(t, ())),
                                        key=lambda n: (n.lineno, n.col_offset))
        return self._sorted[kind]

    def place(self, node) -> tuple:
        """(enclosing function or None, in a step loop, under an `if` branch inside that loop)."""
        parents, training = self.parents, self.training_loops()
        loop, cond, child = None, False, node
        up = parents.get(id(node))
        while up is not None and not isinstance(up, FUNCTIONS):
            if loop is None:
                if isinstance(up, (ast.For, ast.AsyncFor, ast.While)):
                    loop = up
                elif isinstance(up, ast.If) and child is not up.test:
                    cond = True
            child, up = up, parents.get(id(up))
        return up, loop is not None and id(loop) in training, cond

    def training_loops(self) -> set:
        """ids of the innermost for/while loops around a .backward() call (in the same function): the step loop,
        not the epoch loop around it nor an evaluation loop beside it."""
        if self._training is None:
            parents, out = self.parents, set()
            for node in self.by_type.get(ast.Call, ()):
                if isinstance(node.func, ast.Attribute) and node.func.attr == "backward":
                    up = parents.get(id(node))
                    while up is not None and not isinstance(up, FUNCTIONS):
                        if isinstance(up, (ast.For, ast.AsyncFor, ast.While)):
                            out.add(id(up))
                            break
                        up = parents.get(id(up))
            self._training = out
        return self._training

    def called(self, func) -> set:
        """Last names of what a function (or the module) calls, and "@" when it multiplies matrices."""
        key = id(func)
        if key not in self._called:
            names = set()
            for node in ast.walk(func if func is not None else self.tree):
                if isinstance(node, ast.Call):
                    names.add(_last_name(node.func))
                elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                    names.add("@")
            self._called[key] = names
        return self._called[key]

    def file_calls(self) -> set:
        if self._file_calls is None:
            self._file_calls = {q for node in self.by_type.get(ast.Call, ())
                                for q in [qualname(node.func, self.bindings)] if q}
        return self._file_calls

    def division_targets(self) -> set:
        """Source text of every name or attribute the file assigns from an expression with a division."""
        if self._division_targets is None:
            out: set = set()
            for node in self.nodes("assign"):
                if node.value is not None:
                    divided = isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Div, ast.FloorDiv)) \
                        or _has_division(node.value)
                    if divided:
                        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                        out.update(ast.unparse(t) for t in targets)
            self._division_targets = out
        return self._division_targets

    def has_main_guard(self) -> bool:
        return any(isinstance(s, ast.If) and isinstance(s.test, ast.Compare) and
                   isinstance(s.test.left, ast.Name) and s.test.left.id == "__name__" for s in self.tree.body)


def _has_division(expr) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Div, ast.FloorDiv)) for n in ast.walk(expr))


_MISSING = object()   # the keyword is not given
_UNKNOWN = object()   # cannot tell (*args, **kwargs, too many positional arguments)


def _keyword(call: ast.Call, name: str, max_positional):
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args) or \
            (max_positional is not None and len(call.args) > max_positional):
        return _UNKNOWN
    return _MISSING


def _in_state(value, state, tree: _Tree) -> bool:
    if value is _UNKNOWN:
        return False
    if state == "missing":
        return value is _MISSING
    if value is _MISSING:
        return False
    literal = isinstance(value, ast.Constant)
    if state == "present":
        return True
    if state == "nonzero":
        return not (literal and value.value in (0, False, None))
    if state == "undivided":
        return not literal and not _has_division(value) and ast.unparse(value) not in tree.division_targets()
    return literal and type(value.value) is type(state) and value.value == state


def _keywords_hold(call: ast.Call, match: dict, tree: _Tree) -> bool:
    for name, wanted in match.get("keywords", {}).items():
        value = _keyword(call, name, match.get("max_positional"))
        if not any(_in_state(value, s, tree) for s in (wanted if isinstance(wanted, list) else [wanted])):
            return False
    return True


def _where_ok(rule: Rule, node, tree: _Tree) -> bool:
    inside = rule.match.get("inside")
    groups = rule.match.get("in_function_with")
    if not inside and not groups:
        return True
    func, loop, cond = tree.place(node)
    if inside == "training-loop" and (not loop or cond):
        return False  # outside the step loop, or under an `if` in it (logging every N steps is the advice)
    if inside == "step" and not (loop or (isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef))
                                          and func.name == "forward")):
        return False
    if groups:
        called = tree.called(func)
        return all(called & set(group) for group in groups)
    return True


def _matches(rule: Rule, node, tree: _Tree) -> Optional[str]:
    """The matched name when `node` is what the rule's matcher looks for, else None."""
    kind, names = rule.kind, rule.names
    if kind == "call" and isinstance(node, ast.Call):
        q = qualname(node.func, tree.bindings)
        if q in names and _keywords_hold(node, rule.match, tree) and \
                (not rule.match.get("file_calls") or tree.file_calls() & set(rule.match["file_calls"])):
            return q
    elif kind == "method" and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in names:
            wanted = rule.match.get("receiver_call")
            receiver = node.func.value
            if not wanted or (isinstance(receiver, ast.Call) and _last_name(receiver.func) in wanted):
                return node.func.attr
    elif kind == "assign" and isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            q = qualname(target, tree.bindings)
            if q in names:
                return q
    elif kind == "subscript" and isinstance(node, ast.Subscript):
        index = node.slice
        if isinstance(index, ast.Compare) or (isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.Invert)
                                              and isinstance(index.operand, ast.Compare)):
            return ast.unparse(node)
    elif kind == "define" and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if node.name in names:
            return node.name
    elif kind == "backward" and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "backward":
            return "backward"
    return None


def _anchor_lines(src, wanted) -> list:
    """The sorted lines holding an anchor word of the wanted rules, or an import alias of a name they resolve."""
    words = set().union(*(r.anchors for r in wanted))
    qualified = set().union(*(r.qualified for r in wanted))
    if qualified:
        words.update(local for local, bound in _bindings(src).items() if any(b.qualname in qualified for b in bound))
    return src.lines_matching(_anchor_pattern(frozenset(w.lower() for w in words)))  # in the lowercased text


@lru_cache(maxsize=256)  # one per set of wanted rules and import aliases
def _anchor_pattern(words: frozenset) -> re.Pattern:
    return re.compile(trie_pattern(minimal_words(words)))


def file_hits(src, chosen) -> tuple:
    """(hits, whether the file has a `__main__` guard) for the rules `chosen` over one parsed SourceFile
    (SyntaxError/ValueError propagate: the caller reports unparsable files)."""
    text, path = src.source, src.path.replace("\\", "/")
    wanted = [r for r in chosen if all(any(w in text for w in group) for group in r.word_groups)
              and not any(fnmatch.fnmatchcase(path, g) for g in r.match.get("skip_paths", ()))
              and not (r.scope != "project" and any(w in text for w in r.unless_mentioned))]
    if not wanted:
        return [], False
    tree = _Tree(src, _anchor_lines(src, wanted))
    hits = []
    for rule in wanted:
        once = rule.scope in ("file", "project") or rule.kind == "backward"
        lines = set()
        for node in tree.nodes(rule.kind):
            name = _matches(rule, node, tree)
            if name is not None and node.lineno not in lines and _where_ok(rule, node, tree):
                hits.append(Hit(rule.id, node.lineno, name))
                lines.add(node.lineno)  # one row per rule and line
                if once:
                    break
    hits.sort(key=lambda h: (h.line, h.rule))
    return hits, tree.has_main_guard()


def project_rows(files, target: str) -> list:
    """advice.csv's rows for one target: [(file, line, rule id, advice, source)] from every scanned file's
    `advice` hits, `entry` flag and `mentions`.  A project-scope rule gives one row, in a file with a
    `__main__` guard when there is one, and none when any file mentions one of its `unless_mentioned` words."""
    by_id = {r.id: r for r in rules() if r.applies_to(target)}
    mentioned = set().union(*(getattr(s, "mentions", frozenset()) for s in files)) if files else set()
    rows: list = []
    project: dict = {}
    for s in files:
        for h in getattr(s, "advice", ()):
            rule = by_id.get(h.rule)
            if rule is None:
                continue
            if rule.scope == "project":
                if any(w in mentioned for w in rule.unless_mentioned):
                    continue
                best = project.get(rule.id)
                if best is None or (getattr(s, "entry", False) and not best[0]):
                    project[rule.id] = (getattr(s, "entry", False), s.path, h)
                continue
            rows.append((s.path, h.line, rule.id, rule.text(h.name), rule.source))
    for rid, (_entry, path, h) in project.items():
        rows.append((path, h.line, rid, by_id[rid].text(h.name), by_id[rid].source))
    return sorted(rows, key=lambda r: (r[0], r[1], r[2]))
