"""User rule files: the Ascend JSON schema and torchport's own TOML/JSON format.

Both load into the same places as the built-in rules: qualified names become
ApiMap decisions (so they are alias-aware), bare function/method renames and
argument changes become small Call rules.  Every entry gets a rule id (its own
`id`, else `<file stem>:<n>`) that appears in the reports.  Errors name the
file and line.

Ascend (ms_fmk_transplt) schema:
    {"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": 0, "arg_new": "x"}],
               "FuncNameModifyRule": [{"old_name": "f", "new_name": "g"}],
               "ModuleNameModifyRule": [{"old_name": "m", "new_name": "n", "parent_module": "a.b"}]}}

torchport schema (TOML shown; the same keys work in JSON):
    [[rename]]       old = "apex.amp.initialize"   new = "mypkg.initialize"   note = "..."
    [[unsupported]]  name = "xformers.ops"         tip = "use scaled_dot_product_attention"
    [[keep]]         name = "pynvml"               message = "..."
    [[argument]]     call = "DataLoader"  keyword = "pin_memory_device"  new = '"npu"'   (or index = 0)
    Optional in every entry: id = "MY001", targets = ["npu", "mlu"].

Every value is checked when the file loads (`_OWN`, `_ASCEND`: key -> check from backends), because
names and expressions are pasted into the converted code: names are (dotted) Python names without
keywords, an argument keyword is an identifier, `new`/`arg_new` is one Python expression that stays one
argument (no comment, no bare tuple), texts are one line whose only placeholders are the target's
{title}, {name}, ...  Files are UTF-8 (a BOM is fine) without NaN, huge numbers or deep nesting.
Trigger words are minimised in time linear in the number of rules (`core.words.minimal_words`).
"""
from __future__ import annotations

import ast
import bisect
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Union, cast

from ..backends import (
    NameDecision,
    checked,
    dotted_name,
    expression,
    identifier,
    integer,
    label,
    list_of,
    message,
    optional,
    parse_data,
    read_text,
    text,
)
from ..core.codes import CONVERT, MAPPED, Code
from ..core.errors import UsageError
from ..core.words import minimal_words
from .checkers import Checker, Phase

if TYPE_CHECKING:
    from .context import FileContext

MAX_INDEX = 999  # the highest positional argument index a rule may name

Check = Callable[[Any], object]   # a value check of backends: raises BadValue
TomlLines = dict[tuple[str, int], int]   # (kind, index) -> line of the index-th [[kind]] header

# What each key of a rule must be, per kind (the checks are in backends).  Required keys are listed
# separately: a missing one, or one of the wrong type, is reported as such first.
# (ignore: backends.optional and list_of are not annotated, and backends is not this change's to edit)
_COMMON = {"id": optional(text), "targets": list_of(label)}  # type: ignore[no-untyped-call]
_OWN = {
    "rename": {"old": dotted_name, "new": dotted_name, "note": message},
    "unsupported": {"name": dotted_name, "tip": message},
    "keep": {"name": dotted_name, "message": message},
    "argument": {"call": dotted_name, "keyword": identifier, "index": integer(0, MAX_INDEX), "new": expression},
}
_OWN_REQUIRED = {"rename": ("old", "new"), "unsupported": ("name", "tip"), "keep": ("name", "message"),
                 "argument": ("call", "new")}
_ASCEND = {
    "FuncNameModifyRule": {"old_name": dotted_name, "new_name": dotted_name},
    "ModuleNameModifyRule": {"old_name": dotted_name, "new_name": dotted_name, "parent_module": dotted_name},
    "ArgsModifyRule": {"func_name": dotted_name, "arg_idx": integer(0, MAX_INDEX), "arg_new": expression},
}


class LineDict(dict[str, Any]):
    line = 0


def parse_json_lines(text: str, path: str) -> Any:
    """json.loads that remembers the line of every object (as LineDict.line)."""
    decoder = json.JSONDecoder()
    ws = re.compile(r"\s*")

    def skip(i: int) -> int:  # past the blanks at i
        return cast("re.Match[str]", ws.match(text, i)).end()   # \s* matches anywhere

    newlines = [i for i, c in enumerate(text) if c == "\n"]

    def line_at(i: int) -> int:  # by bisection: counting again for every object is quadratic
        return bisect.bisect_left(newlines, i) + 1

    def value(i: int) -> tuple[Any, int]:
        i = skip(i)
        if i >= len(text):
            raise UsageError(f"{path}:{line_at(i)}: unexpected end of JSON")
        c = text[i]
        if c == "{":
            obj = LineDict()
            obj.line = line_at(i)
            i = skip(i + 1)
            if text[i:i + 1] == "}":
                return obj, i + 1
            while True:
                i = skip(i)
                key, i = value(i)
                if not isinstance(key, str):
                    raise UsageError(f"{path}:{line_at(i)}: object keys must be strings")
                i = skip(i)
                if text[i:i + 1] != ":":
                    raise UsageError(f"{path}:{line_at(i)}: expected ':'")
                if key in obj:  # json.loads keeps the last: a second "rules" would drop the first silently
                    raise UsageError(f"{path}:{line_at(i)}: key {key!r} appears twice in one object")
                obj[key], i = value(i + 1)
                i = skip(i)
                if text[i:i + 1] == ",":
                    i += 1
                    continue
                if text[i:i + 1] == "}":
                    return obj, i + 1
                raise UsageError(f"{path}:{line_at(i)}: expected ',' or '}}'")
        if c == "[":
            arr: list[object] = []
            i = skip(i + 1)
            if text[i:i + 1] == "]":
                return arr, i + 1
            while True:
                item, i = value(i)
                arr.append(item)
                i = skip(i)
                if text[i:i + 1] == ",":
                    i += 1
                    continue
                if text[i:i + 1] == "]":
                    return arr, i + 1
                raise UsageError(f"{path}:{line_at(i)}: expected ',' or ']'")
        try:
            return decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            raise UsageError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None

    result, end = value(0)
    if text[skip(end):].strip():
        raise UsageError(f"{path}:{line_at(end)}: unexpected text after the JSON value")
    return result


class UserRules:
    """What one or more rule files add to a run."""

    def __init__(self) -> None:
        self.decisions: dict[str, NameDecision] = {}   # qualified name -> NameDecision (with .rule)
        self.codes: dict[str, Code] = {}               # rule id -> Code (what its findings carry)
        self.call_checkers: list[Checker] = []         # Checkers of the rules that look at calls
        self.paths: list[str] = []
        self.renamed: dict[str, tuple[str, str]] = {}  # old name -> (rule id, new name): two different renames are refused

    def checkers(self) -> list[Checker]:
        return list(self.call_checkers)

    def trigger_words(self) -> set[str]:
        """The words a line must hold for a user rule to care about it, minimised."""
        words: set[str] = set()
        for q in self.decisions:
            words.update(p.lower() for p in q.split(".") if len(p) > 2)
        for c in self.call_checkers:
            words.update(c.triggers)
        return set(minimal_words(words))


def load_rule_files(paths: Iterable[Union[str, os.PathLike[str]]], target_name: str) -> UserRules:
    out = UserRules()
    for p in paths:
        path = Path(p)
        content = read_text(path, "rule file")
        out.paths.append(str(path))
        if path.suffix == ".toml":
            data = parse_data(content, path, "toml")
            _load_own(out, data, path, target_name, _toml_lines(content))
        else:
            data = parse_data(content, path, "json", parse_json_lines)
            if not isinstance(data, dict):
                raise UsageError(f"{path}:1: a rule file must hold a JSON object")
            if "rules" in data:
                _load_ascend(out, data, path)
            else:
                _load_own(out, data, path, target_name, None)
    return out


def _toml_lines(text: str) -> TomlLines:
    """(kind, index) -> line of the index-th [[kind]] header."""
    lines: TomlLines = {}
    counts: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"\s*\[\[\s*(\w+)\s*\]\]", line)
        if m:
            kind = m.group(1)
            lines[(kind, counts.get(kind, 0))] = n
            counts[kind] = counts.get(kind, 0) + 1
    return lines


def _where(path: Path, entry: Any, kind: str, index: int, toml_lines: Optional[TomlLines]) -> str:
    if toml_lines is not None:
        return f"{path}:{toml_lines.get((kind, index), 1)}"
    return f"{path}:{getattr(entry, 'line', 1)}"


def _need(entry: Any, keys: Iterable[str], where: str, types: type[Any] = str) -> None:
    if not isinstance(entry, dict):
        raise UsageError(f"{where}: each rule must be an object/table")
    for k in keys:
        if k not in entry:
            raise UsageError(f"{where}: missing '{k}'")
        if not isinstance(entry[k], types):
            raise UsageError(f"{where}: '{k}' must be a {getattr(types, '__name__', 'value')}")


def _check(entry: dict[str, Any], spec: dict[str, Check], where: str, kind: str) -> None:
    """Every key of `spec` the entry has passes its check (the error names `kind.key`)."""
    for key, check in spec.items():
        if key in entry:
            checked(where, (kind, key), check, entry[key])


def _sections(data: dict[str, Any], known: set[str], path: Path, what: str) -> Iterator[tuple[str, int, Any]]:
    """Check the kinds of a rule file and yield (kind, index, entry) for every rule in it."""
    for kind in data:
        if kind not in known:
            raise UsageError(f"{path}:{getattr(data, 'line', 1)}: unknown {what} {kind!r} "
                             f"(expected {', '.join(sorted(known))})")
    for kind, entries in data.items():
        if not isinstance(entries, list):
            raise UsageError(f"{path}:{getattr(data, 'line', 1)}: '{kind}' must be a list")
        for i, entry in enumerate(entries):
            yield kind, i, entry


def _load_ascend(out: UserRules, data: dict[str, Any], path: Path) -> None:
    rules = data["rules"]
    if not isinstance(rules, dict):
        raise UsageError(f"{path}:{getattr(data, 'line', 1)}: 'rules' must be an object")
    for kind, i, entry in _sections(rules, set(_ASCEND), path, "rule kind"):
        where = f"{path}:{getattr(entry, 'line', 1)}"
        rid = f"{path.stem}:{kind}:{i + 1}"
        spec = _ASCEND[kind]
        _need(entry, [k for k in spec if k != "arg_idx"], where)
        if kind == "ArgsModifyRule":
            _need(entry, ("arg_idx",), where, int)
        _check(entry, spec, where, kind)
        if kind == "FuncNameModifyRule":
            _add_rename(out, rid, entry["old_name"], entry["new_name"], "", path)
        elif kind == "ModuleNameModifyRule":
            parent = entry["parent_module"]
            _add_rename(out, rid, f"{parent}.{entry['old_name']}", f"{parent}.{entry['new_name']}", "", path)
        else:
            _add_argument(out, rid, entry["func_name"], entry["arg_idx"], None, entry["arg_new"], path)


def _load_own(out: UserRules, data: dict[str, Any], path: Path, target_name: str, toml_lines: Optional[TomlLines]
              ) -> None:
    for kind, i, entry in _sections(data, set(_OWN), path, "section"):
        where = _where(path, entry, kind, i, toml_lines)
        if not isinstance(entry, dict):
            raise UsageError(f"{where}: each rule must be a table")
        _need(entry, _OWN_REQUIRED[kind], where)
        _check(entry, {**_COMMON, **_OWN[kind]}, where, kind)  # every rule, whichever target it is for
        if kind == "argument" and ("index" in entry) == ("keyword" in entry):
            raise UsageError(f"{where}: give exactly one of 'index' or 'keyword'")
        targets = entry.get("targets")
        if targets is not None and target_name not in targets:
            continue
        rid = entry.get("id") or f"{path.stem}:{kind}:{i + 1}"
        if kind == "rename":
            _add_rename(out, rid, entry["old"], entry["new"], entry.get("note", ""), path)
        elif kind in ("unsupported", "keep"):
            text_key = "tip" if kind == "unsupported" else "message"
            out.decisions[entry["name"]] = _decision(kind, entry[text_key], "", rid)
            out.codes[rid] = user_code(rid, f"{kind} {entry['name']}", entry[text_key])
        else:
            _add_argument(out, rid, entry["call"], entry.get("index"), entry.get("keyword"), entry["new"], path)


def user_code(rid: str, name: str, doc: str) -> Code:
    """The code a user rule's findings carry (its own id; not part of the built-in catalogue)."""
    what, _, why = doc.partition("\n")
    return Code(rid, name, "user-rule", CONVERT, MAPPED, what.strip(), why.strip())


def _decision(kind: str, value: str, note: str, rid: str) -> NameDecision:
    return NameDecision(kind, value, note, rid)


def _add_rename(out: UserRules, rid: str, old: str, new: str, note: str, path: Path) -> None:
    doc = f"{old} -> {new}" + (f"\n\n{note}" if note else "")
    earlier = out.renamed.get(old)
    if earlier is not None and earlier[1] != new:  # which one would win is not the user's decision to guess
        raise UsageError(f"{path}: rule {rid} renames {old} to {new}, but rule {earlier[0]} renames it to "
                         f"{earlier[1]}; keep one")
    out.renamed[old] = (rid, new)
    if "." in old:
        out.decisions[old] = _decision("new", new, note, rid)
        out.codes[rid] = user_code(rid, f"rename {old}", doc)
        return

    def check(node: ast.Call, ctx: FileContext, old: str = old, new: str = new) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == old and ctx.lookup(func.id, func.lineno) is None:
            ctx.replace(func, new, ctx.user_code(rid))
        elif isinstance(func, ast.Attribute) and func.attr == old and ctx.qualname(func.value) is None:
            start = ctx.span(func)[1] - len(old)
            ctx.replace((start, start + len(old)), new.rsplit(".", 1)[-1], ctx.user_code(rid))

    out.codes[rid] = user_code(rid, f"rename {old}()", doc)
    out.call_checkers.append(Checker(f"{path.name}:{rid}", (out.codes[rid],), Phase.NODE, check, (ast.Call,),
                                     (old.lower(),)))


def _add_argument(out: UserRules, rid: str, func_name: str, index: Optional[int], keyword: Optional[str], new: str,
                  path: Path) -> None:
    last = func_name.rsplit(".", 1)[-1]

    def check(node: ast.Call, ctx: FileContext) -> None:
        func = node.func
        q = ctx.qualname(func)
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if not (q == func_name or ("." not in func_name and name == func_name)):
            return
        r = ctx.user_code(rid)
        if keyword is not None:
            kw = next((k for k in node.keywords if k.arg == keyword), None)
            if kw is not None:
                ctx.replace(kw.value, new, r)
            else:
                ctx.add_argument(node, f"{keyword}={new}", r)
        elif index is not None and index < len(node.args) and not isinstance(node.args[index], ast.Starred):
            ctx.replace(node.args[index], new, r)
        else:
            ctx.report(node, r, message=f"argument {index} not present; rule not applied")

    what = f"argument {keyword or index} of {func_name} -> {new}"
    out.codes[rid] = user_code(rid, what, what)
    out.call_checkers.append(Checker(f"{path.name}:{rid}", (out.codes[rid],), Phase.NODE, check, (ast.Call,),
                                     (last.lower(),)))
