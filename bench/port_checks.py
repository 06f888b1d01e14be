"""What must hold after `torchport port-ext`, checked from the two trees on disk.

Used by bench/corpus.py on real projects and by the tests on the bundled example.  The checks
read files and re-lex them; apart from the lexer and the mapping tables they share nothing with
the porter (own include resolution, own longest-match explanation of each changed identifier).

  token_problems    the token streams of input and output have the same length and kinds; comments,
                    strings, numbers and punctuation are identical; each changed identifier is the old
                    one with mapping keys (whole identifiers, longest first) replaced by their values,
                    and no identifier the mapping covers is left unchanged; a mapped method (`is_cuda`)
                    is renamed only in a call `R.is_cuda(` / `R->is_cuda(` whose receiver does not end in a
                    call returning a class without the new method (`x.type()`) and is not `this`, and such
                    a call left unchanged was reported (TP955) at its line; each changed include path is a
                    mapped header or a renamed project file
  include_problems  every quoted include that resolved to a project file in the input resolves, in the
                    output, to that file under its new name
  rename_problems   every .cu/.cuh (outside ignored subtrees) was written with the target's suffix
  check_tree        all of these, plus: files that are not C/C++/CUDA or build files are byte-identical,
                    ported setup.py files parse
"""
from __future__ import annotations

import ast
import posixpath
import re
from pathlib import Path

from torchport.porting.lexer import include_path, tokens

SOURCES = (".cu", ".cuh", ".cpp", ".cc", ".c", ".h", ".hpp", ".cxx", ".inl", ".mu", ".muh", ".hip")
_WORD = re.compile(r"\w")


def decode(data: bytes) -> str:
    for enc in ("utf-8", "gbk", "latin-1"):
        try:
            return data.decode(enc)
        except UnicodeDecodeError:
            continue
    return ""


def read(path: Path) -> str:
    return decode(path.read_bytes())


class Explainer:
    """Rewrites an identifier token with the mapping, independently of the porter's regex."""

    def __init__(self, identifiers: dict, dispatch_key: str = ""):
        self.ids = identifiers
        self.dispatch_key = dispatch_key
        self.by_first: dict = {}
        for key in sorted(identifiers, key=len, reverse=True):
            self.by_first.setdefault(key[0], []).append(key)

    def rewrite(self, token: str) -> str:
        out, i = [], 0
        while i < len(token):
            if i == 0 or not _WORD.match(token[i - 1]):
                for key in self.by_first.get(token[i], ()):
                    end = i + len(key)
                    if token.startswith(key, i) and (end == len(token) or not _WORD.match(token[end])):
                        out.append(self.ids[key])
                        i = end
                        break
                else:
                    out.append(token[i])
                    i += 1
            else:
                out.append(token[i])
                i += 1
        return "".join(out)

    def explains(self, old: str, new: str) -> bool:
        return self.rewrite(old) == new or (old == "CUDA" and new == self.dispatch_key)


def member_call(toks: list, i: int) -> str:
    """For the identifier toks[i] called as a method (`R.name(` / `R->name(`): what its receiver R ends in, as
    `.f()` (a call of method f), `this`, or `` (anything else); None when toks[i] is not called that way."""
    if i + 1 >= len(toks) or toks[i + 1].text != "(":
        return None
    if i >= 1 and toks[i - 1].text == ".":
        j = i - 2
    elif i >= 2 and toks[i - 1].text == ">" and toks[i - 2].text == "-":
        j = i - 3
    else:
        return None
    if j >= 0 and toks[j].text == "this":
        return "this"
    if j < 0 or toks[j].text != ")":
        return ""
    depth = 0
    while j >= 0:  # back to the matching "("
        depth += {")": 1, "(": -1}.get(toks[j].text, 0)
        if depth == 0:
            break
        j -= 1
    if j >= 2 and toks[j - 1].kind == "ident" and (toks[j - 2].text == "." or toks[j - 2].text == ">"):
        return f".{toks[j - 1].text}()"
    return ""


def method_problem(rel: str, line: int, toks: list, i: int, new: str, methods: dict, receivers: dict,
                   reported) -> str:
    """A problem with the mapped method toks[i] (input) written as `new` (output), or ''."""
    name, spec = toks[i].text, methods[toks[i].text]
    receiver = member_call(toks, i)
    if new == name:
        if receiver is not None and (rel, line, name) not in reported:
            return f"{rel}:{line}: mapped method call left unchanged and not reported: {name!r}"
        return ""
    if new != spec["new"] or receiver is None:
        return f"{rel}:{line}: identifier changed without a mapping: {name!r} -> {new!r}"
    returned = receivers.get("returns", {}).get(receiver[1:-2], receivers.get("default")) if receiver else None
    if receiver == "this" or (returned and returned not in spec["valid"]):
        return f"{rel}:{line}: {name} -> {new} on a receiver ending in {receiver} ({returned or 'own class'}), " \
               f"which has no {new}()"
    return ""


def token_problems(rel: str, old: str, new: str, explainer: Explainer, headers: dict, renamed,  # noqa: PLR0913
                   methods: dict = None, receivers: dict = None, reported=frozenset()) -> list:
    """`renamed(path)`: the include path a renamed project header gets (None when not one).  `methods`,
    `receivers`: the map's method mappings and receiver classes; `reported`: (file, line, name) of TP955."""
    a, b = list(tokens(old)), list(tokens(new))
    if len(a) != len(b):
        return [f"{rel}: {len(a)} tokens in, {len(b)} out"]
    problems = []
    for i, (x, y) in enumerate(zip(a, b)):
        if methods and x.kind == "ident" and x.text in methods:
            problem = method_problem(rel, old.count("\n", 0, x.start) + 1, a, i, y.text, methods, receivers or {},
                                     reported)
            problems += [problem] if problem else []
            continue
        if x.text == y.text:
            if x.kind == "ident" and explainer.rewrite(x.text) != x.text:
                line = old.count("\n", 0, x.start) + 1
                problems.append(f"{rel}:{line}: mapped identifier left unchanged: {x.text!r}")
            continue
        line = old.count("\n", 0, x.start) + 1
        if x.kind != y.kind:
            problems.append(f"{rel}:{line}: token kind changed: {x.text!r} -> {y.text!r}")
        elif x.kind == "ident":
            if not explainer.explains(x.text, y.text):
                problems.append(f"{rel}:{line}: identifier changed without a mapping: {x.text!r} -> {y.text!r}")
        elif x.kind == "include":
            p, q = include_path(x.text), include_path(y.text)
            ok = p and q and x.text.replace(p[0], q[0], 1) == y.text and (
                q[0] == renamed(p[0]) or header_mapped(p[0], q[0], headers))
            if not ok:
                problems.append(f"{rel}:{line}: include changed without a mapping: {x.text!r} -> {y.text!r}")
        else:
            problems.append(f"{rel}:{line}: {x.kind} changed: {x.text!r} -> {y.text!r}")
    return problems


def header_mapped(old: str, new: str, headers: dict) -> bool:
    """The header table explains old -> new: the whole path, a directory prefix, or the file name."""
    if headers.get(old) == new or any(old.startswith(k + "/") and new == v + old[len(k):] for k, v in headers.items()):
        return True
    head, _, name = old.rpartition("/")
    return bool(head) and name in headers and new == f"{head}/{headers[name]}"


def quoted_includes(text: str) -> list:
    out = []
    for t in tokens(text):
        if t.kind == "include":
            found = include_path(t.text)
            if found and found[1] == '"':
                out.append((text.count("\n", 0, t.start) + 1, found[0]))
    return out


def resolve(files: set, by_tail: dict, including: str, path: str):
    here = posixpath.normpath(posixpath.join(posixpath.dirname(including), path))
    if here in files:
        return here
    hits = by_tail.get(posixpath.normpath(path).lstrip("./"))
    return min(hits) if hits else None


def _index(rels):
    files, by_tail = set(rels), {}
    for rel in rels:
        parts = rel.split("/")
        for i in range(len(parts)):
            by_tail.setdefault("/".join(parts[i:]), []).append(rel)
    return files, by_tail


def include_problems(src: Path, out: Path, written: dict) -> tuple:
    """(checked, problems).  `written`: input rel -> output rel for every file."""
    before, after = _index(written), _index(files_of(out))  # the output as it is on disk
    checked, problems = 0, []
    for rel, out_rel in written.items():
        if not rel.endswith(SOURCES):
            continue
        old = quoted_includes(read(src / rel))
        if not old:
            continue
        new = quoted_includes(read(out / out_rel)) if (out / out_rel).is_file() else []
        for (line, p), (_, q) in zip(old, new):
            target = resolve(*before, rel, p)
            if target is None:
                continue
            checked += 1
            got = resolve(*after, out_rel, q)
            if got != written[target]:
                problems.append(f"{out_rel}:{line}: #include \"{q}\" resolves to {got}, expected {written[target]}")
    return checked, problems


def rename_problems(written: dict, suffixes: dict, ignored) -> list:
    problems = []
    for rel, out_rel in written.items():
        if ignored(rel):
            if out_rel != rel:
                problems.append(f"{rel}: in an ignored subtree but written as {out_rel}")
            continue
        for old, new in suffixes.items():
            if rel.endswith(old) and out_rel != rel[: -len(old)] + new:
                problems.append(f"{rel}: written as {out_rel}, expected the {new} suffix")
    return problems


def files_of(root: Path) -> list:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def check_tree(src: Path, out: Path, result, pmap, ignored) -> tuple:
    """All of the above for one port-ext run in write mode: (stats, problems)."""
    written = {r.path: r.output for r in result.files if r.status not in ("skipped", "error")}
    problems = [f"{o}: missing from the output" for o in written.values() if not (out / o).is_file()]
    problems += rename_problems(written, pmap.suffixes, ignored)
    explainer = Explainer(pmap.identifiers, pmap.dispatch_key)

    def renamed(path):
        for old, new in pmap.suffixes.items():
            if path.endswith(old):
                return path[: -len(old)] + new
        return None

    reported = {(f.file, f.line, f.old) for f in result.findings if f.rule == "TP955"}
    tokens_checked = 0
    for rel, out_rel in written.items():
        if not (out / out_rel).is_file():
            continue
        a, b = (src / rel).read_bytes(), (out / out_rel).read_bytes()
        if rel.endswith(SOURCES) and not ignored(rel):
            old, new = read(src / rel), read(out / out_rel)
            tokens_checked += 1
            problems += token_problems(rel, old, new, explainer, pmap.headers, renamed, pmap.methods, pmap.receivers,
                                       reported)
        elif a != b and rel.endswith(".py") and b"cpp_extension" in a:
            try:
                ast.parse(b)
            except SyntaxError as e:
                problems.append(f"{out_rel}:{e.lineno}: ported build file does not parse: {e.msg}")
        elif a != b and not (rel.endswith(".cmake") or rel.endswith("CMakeLists.txt")):
            problems.append(f"{rel}: changed, but it is neither a source nor a build file")
    checked, include_errors = include_problems(src, out, written)
    return {"sources_token_checked": tokens_checked, "includes_checked": checked}, problems + include_errors
