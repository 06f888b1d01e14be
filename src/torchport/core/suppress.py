"""Which findings a run keeps: `# torchport: ignore[...]` comments and rule selection (`--select/--ignore`,
`[tool.torchport]` select/ignore/per-file-ignores).

- A comment `# torchport: ignore[TP201, TP206]` suppresses the findings with those codes on its line; a bare
  `# torchport: ignore` suppresses every code there.  On the first line of a statement that runs over several
  lines (a call split over lines; a compound statement's header, not its body) it covers the whole statement.
  Comments are read with tokenize, so the words inside a string are not a comment.  Shell scripts: a `#`
  comment at the end of the line, that line only.
- `Selection`: codes and prefixes (`TP2`) to select and to ignore, and per-file ignores (glob -> codes).  The
  longest matching prefix decides between select and ignore (a tie ignores), as `TP2` selected with `TP206`
  ignored keeps every TP2xx but TP206.
- TP000 (a file torchport could not read, parse, convert or write) is never suppressed.

A suppressed change is not made: the converter leaves that text as the user wrote it (converter/python.py).
"""
from __future__ import annotations

import ast
import difflib
import fnmatch
import functools
import io
import os
import re
import tokenize
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Callable, Optional, Protocol, Union, cast

from . import codes
from .edits import Edit
from .finding import ADVICE, CHANGES, Finding

# `torchport: ignore` and an optional [codes] list, anywhere in a comment (`# torchport: ignore[TP201]`)
_DIRECTIVE = re.compile(r"#.*?\btorchport:\s*ignore(?P<junk>[^\s\[\]]\S*)?(?:\s*\[(?P<codes>[^\]]*)\]|(?P<open>\s*\[))?",
                        re.IGNORECASE)
MALFORMED = "a `# torchport: ignore[` whose list is never closed with `]`: it suppresses nothing"
# `ignore(TP201)`, `ignore-next-line`, `ignore:`: no form torchport knows, so nothing is suppressed (it was read as a
# bare `ignore`, which suppresses every code on the line)
MALFORMED_FORM = "a `# torchport: ignore` written another way ({form}): the forms are `ignore` and `ignore[TP201,...]`; " \
    "it suppresses nothing"
EMPTY = "an empty `# torchport: ignore[]` list suppresses nothing (`ignore` alone suppresses every code on the line)"
_WORD = re.compile("torchport", re.IGNORECASE)
ALL = None   # a bare `# torchport: ignore`: every code on the line
NEVER = codes.TP000.id
COMMENT_NOTE = "in a `# torchport: ignore[...]` comment"   # the note an unknown code there gets (TP000, advice)
Codes = Optional[frozenset[str]]   # the codes one comment suppresses; ALL (None): every code
Table = dict[int, Codes]           # {line: the codes suppressed there}

_MATCH_CASE = getattr(ast, "match_case", ())  # a `case` block (Python 3.10+; none on 3.9)


class FileState(Protocol):
    """What `take` reads and changes of a converter's file context (converter/context.py FileContext)."""

    path: str
    source: str
    line_starts: list[int]
    edits: list[Edit]
    findings: list[Finding]


def known_prefix(word: str) -> bool:
    """Is `word` a code of the catalogue or a prefix of one (`TP2`, `TP20`), or a renamed code's old id?"""
    return word in codes.REDIRECTS or any(c.startswith(word) for c in codes.CODES)


def did_you_mean(word: str) -> str:
    """` (did you mean TP501?)`: of the codes and families (`TP5`), the one sharing the longest start with
    `word`, then the most alike; empty when none is alike."""
    choices = sorted(codes.CODES) + sorted({c[:3] for c in codes.CODES})

    def score(c: str) -> tuple[int, float]:
        return len(os.path.commonprefix([c, word])), difflib.SequenceMatcher(None, word, c).ratio()

    best = max(choices, key=score)
    return f" (did you mean {best}?)" if score(best)[1] >= 0.6 else ""


def parse_codes(items: Union[str, Iterable[object]], where: str, selecting: bool = True) -> tuple[str, ...]:
    """Codes or prefixes, from a comma-separated string or a list of strings, upper-cased and checked against
    the catalogue (a renamed code's old id read as its new one); ValueError naming `where` and the closest code
    for an unknown one, and for a removed code asked for (`selecting`; leaving one out is harmless)."""
    words = items.split(",") if isinstance(items, str) else list(items)
    out: list[str] = []
    for w in words:
        if not isinstance(w, str):
            raise ValueError(f"{where}: not a code: {w!r}")
        w = codes.resolve(w.strip().upper())
        if not w:
            continue
        if not known_prefix(w):
            raise ValueError(f"{where}: unknown code '{w}'{did_you_mean(w)}")
        if selecting and w in codes.removed():
            raise ValueError(f"{where}: {w} was removed: {codes.CODES[w].note}")
        out.append(w)
    return tuple(out)


@dataclass(frozen=True)
class Selection:
    """The codes a run reports (and, for changes, makes).  Empty `select`: every code."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file: tuple[tuple[str, tuple[str, ...]], ...] = ()    # ((glob, (codes...)), ...)
    prefix: str = ""        # per-file globs are relative to the project: prepended to a finding's path...
    strip: str = ""         # ...or taken off its front (the project is a folder below the paths' base)
    preview: bool = False   # report the codes in preview too (--preview): without it they are not even found

    def __bool__(self) -> bool:
        return bool(self.select or self.ignore or self.per_file)

    def allows(self, rule: str, rel: str = "") -> bool:
        if rule == NEVER:
            return True
        best, keep = -1, not self.select   # no select: every code (a user rule's own id too)
        for w in self.select:
            if rule.startswith(w) and len(w) > best:
                best, keep = len(w), True
        for w in self.ignore:
            if rule.startswith(w) and len(w) >= best:
                best, keep = len(w), False
        if not keep:
            return False
        if self.per_file:
            path = f"{self.prefix}/{rel}" if self.prefix else rel
            if self.strip and path.startswith(self.strip + "/"):
                path = path[len(self.strip) + 1:]
            if any(rule.startswith(w) for w in ignored_here(self.per_file, path)):
                return False
        return True


@functools.lru_cache(maxsize=4096)
def ignored_here(per_file: tuple[tuple[str, tuple[str, ...]], ...], path: str) -> tuple[str, ...]:
    """The codes per-file-ignores ignore in `path` (a glob with a `/` matches the path, one without its name):
    worked out once per file, however many findings it has (4,000 globs on 600 files took 99 s per finding)."""
    name = path.rsplit("/", 1)[-1]
    return tuple(sorted({w for glob, ignored in per_file if fnmatch.fnmatchcase(path if "/" in glob else name, glob)
                         for w in ignored}))


# ------------------------------------------------------------------ comments
def _codes_of(text: Optional[str], line: int, warn: list[tuple[int, str]], known: Collection[str] = ()) -> Codes:
    """The codes of one directive (ALL for a bare one); unknown codes (neither the catalogue's nor in `known`,
    the ids of user rules) go to `warn` as (line, message)."""
    if text is None:
        return ALL
    if text == MALFORMED or text.startswith(MALFORMED_FORM.split("{", 1)[0]):
        warn.append((line, text))
        return frozenset()
    if not text.strip(" ,"):
        warn.append((line, EMPTY))
        return frozenset()
    found: set[str] = set()
    for word in text.split(","):
        word = word.strip().upper()
        if not word:
            continue
        if word in codes.REDIRECTS:
            warn.append((line, f"'{word}' {COMMENT_NOTE} is {codes.REDIRECTS[word]} now (renamed): it still "
                               "suppresses it; write the new code"))
            found.add(codes.REDIRECTS[word])
        elif word in codes.removed() and word not in known:
            warn.append((line, f"{word} {COMMENT_NOTE} was removed ({codes.CODES[word].note}); it suppresses "
                               "nothing"))
        elif known_prefix(word) or word in known:
            found.add(word)
        else:
            warn.append((line, f"unknown code '{word}' {COMMENT_NOTE}{did_you_mean(word)}; it suppresses nothing"))
    return frozenset(found)


def _listed(m: re.Match[str]) -> Optional[str]:
    """A directive's code list: the text in its brackets, None for a bare one, MALFORMED for an unclosed `[`,
    MALFORMED_FORM for any other spelling."""
    if m.group("junk"):
        return MALFORMED_FORM.format(form=f"`ignore{m.group('junk')[:30]}`")
    return MALFORMED if m.group("open") is not None else m.group("codes")


def _merge(table: Table, line: int, value: Codes) -> None:
    if value is ALL or line in table and table[line] is ALL:
        table[line] = ALL
    else:  # neither is ALL (the test above)
        table[line] = cast("frozenset[str]", table.get(line, frozenset())) | value


def python_comments(source: str, tree: Optional[ast.AST] = None,
                    known: Collection[str] = ()) -> tuple[Table, list[tuple[int, str]]]:
    """({line: codes or ALL}, [(line, warning)]) of a Python source's suppression comments; with the parse
    tree, a comment on a statement's first line covers all of the statement's lines (a compound statement:
    its header)."""
    if not _WORD.search(source):
        return {}, []
    table: Table = {}
    warn: list[tuple[int, str]] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                m = _DIRECTIVE.match(tok.string)
                if m:
                    line = tok.start[0]
                    _merge(table, line, _codes_of(_listed(m), line, warn, known))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # the file does not parse: it is reported as such
    if table and tree is not None:
        for node in ast.walk(tree):
            if not isinstance(node, ast.stmt):
                continue
            first = node.lineno
            if first not in table:
                continue
            inner = [c.lineno if isinstance(c, ast.stmt) else c.pattern.lineno for c in ast.iter_child_nodes(node)
                     if isinstance(c, ast.stmt) or isinstance(c, _MATCH_CASE)]
            last = min(inner) - 1 if inner else node.end_lineno or first   # a compound statement: its header
            for line in range(first + 1, max(first, last) + 1):
                _merge(table, line, table[first])
    return table, warn


def shell_comments(source: str,
                   code_spans: Callable[[str], list[tuple[int, int]]]) -> tuple[Table, list[tuple[int, str]]]:
    """python_comments for a shell script: `code_spans(line)` (converter/shell.py) tells code from comment."""
    if not _WORD.search(source):
        return {}, []
    table: Table = {}
    warn: list[tuple[int, str]] = []
    for n, line in enumerate(source.splitlines(), 1):
        end = code_spans(line)[-1][1]
        m = _DIRECTIVE.match(line[end:])
        if m:
            _merge(table, n, _codes_of(_listed(m), n, warn))
    return table, warn


def suppressed_by(table: Table, rule: str, line: int) -> bool:
    """Does a comment in `table` suppress `rule` on `line`?"""
    if rule == NEVER or line not in table:
        return False
    found = table[line]
    return found is ALL or any(rule.upper().startswith(w) for w in found)


def partition(edits: list[Edit], findings: list[Finding], keep: Callable[[Finding], bool], source: str,
              line_starts: list[int]) -> tuple[list[Edit], list[Finding], list[Finding]]:
    """(edits to make, findings to report, findings suppressed): `keep(finding)` says whether a finding stays.
    A suppressed change takes its edits with it: the edit that carries it, and the unreported edits inside the
    text it names (a change reported once for several edits)."""
    gone = [f for f in findings if not keep(f)]
    if not gone:
        return edits, findings, []
    spans: list[tuple[int, int]] = []
    for f in gone:
        if f.action in CHANGES and 0 < f.line <= len(line_starts):
            start = line_starts[f.line - 1] + f.col
            end = start + len(f.old) if f.old and source.startswith(f.old, start) else \
                line_starts[f.end_line] if f.end_line < len(line_starts) else len(source)
            spans.append((start, end))
    gone_ids = {id(f) for f in gone}
    kept = [e for e in edits if not (e.finding is not None and id(e.finding) in gone_ids
                                     or e.finding is None and any(s <= e.start and e.end <= t for s, t in spans))]
    return kept, [f for f in findings if id(f) not in gone_ids], gone


def take(ctx: FileState, table: Table, warnings: list[tuple[int, str]], selection: Selection,
         suppressed: Optional[list[Finding]]) -> None:
    """Take the suppressed findings, and the edits of suppressed changes, out of a converter's file context
    (its `edits`, `findings`, `source`, `line_starts`, `path`), appending them to `suppressed` when given; an
    unknown code in a comment becomes a note (TP000, advice) at its line."""
    preview_off = codes.in_preview() if not selection.preview else frozenset()
    if preview_off:   # not asked for: taken out as if they had never been found (not counted as suppressed)
        kept, _found, gone = partition(ctx.edits, [e.finding for e in ctx.edits if e.finding is not None]
                                       + ctx.findings, lambda f: f.rule not in preview_off, ctx.source,
                                       ctx.line_starts)
        ids = {id(f) for f in gone}
        ctx.edits, ctx.findings = kept, [f for f in ctx.findings if id(f) not in ids]
    if not table and not warnings and not selection:
        return
    for line, message in warnings:
        ctx.findings.append(Finding(ctx.path, line, line, NEVER, "input", ADVICE, message=message))

    def keep(f: Finding) -> bool:
        return selection.allows(f.rule, f.file) and not suppressed_by(table, f.rule, f.line)

    found = [e.finding for e in ctx.edits if e.finding is not None] + ctx.findings
    kept, _found, gone = partition(ctx.edits, found, keep, ctx.source, ctx.line_starts)
    if gone:
        ids = {id(f) for f in gone}
        ctx.edits = kept
        ctx.findings = [f for f in ctx.findings if id(f) not in ids]
        if suppressed is not None:
            suppressed += gone
