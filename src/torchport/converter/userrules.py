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
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from ..backends import NameDecision, tomllib
from ..core.errors import UsageError
from .registry import Rule

_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\Z")


class LineDict(dict):
    line = 0


def parse_json_lines(text: str, path: str):
    """json.loads that remembers the line of every object (as LineDict.line)."""
    decoder = json.JSONDecoder()
    ws = re.compile(r"\s*")

    def line_at(i: int) -> int:
        return text.count("\n", 0, i) + 1

    def value(i: int):
        i = ws.match(text, i).end()
        if i >= len(text):
            raise UsageError(f"{path}:{line_at(i)}: unexpected end of JSON")
        c = text[i]
        if c == "{":
            obj = LineDict()
            obj.line = line_at(i)
            i = ws.match(text, i + 1).end()
            if text[i:i + 1] == "}":
                return obj, i + 1
            while True:
                i = ws.match(text, i).end()
                key, i = value(i)
                if not isinstance(key, str):
                    raise UsageError(f"{path}:{line_at(i)}: object keys must be strings")
                i = ws.match(text, i).end()
                if text[i:i + 1] != ":":
                    raise UsageError(f"{path}:{line_at(i)}: expected ':'")
                obj[key], i = value(i + 1)
                i = ws.match(text, i).end()
                if text[i:i + 1] == ",":
                    i += 1
                    continue
                if text[i:i + 1] == "}":
                    return obj, i + 1
                raise UsageError(f"{path}:{line_at(i)}: expected ',' or '}}'")
        if c == "[":
            arr = []
            i = ws.match(text, i + 1).end()
            if text[i:i + 1] == "]":
                return arr, i + 1
            while True:
                item, i = value(i)
                arr.append(item)
                i = ws.match(text, i).end()
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
    if text[ws.match(text, end).end():].strip():
        raise UsageError(f"{path}:{line_at(end)}: unexpected text after the JSON value")
    return result


class UserRules:
    """What one or more rule files add to a run."""

    def __init__(self):
        self.decisions: dict = {}     # qualified name -> NameDecision (with .rule)
        self.rules: dict = {}         # rule id -> Rule (documentation + optional Call check)
        self.paths: list = []

    def call_rules(self) -> list:
        return [r for r in self.rules.values() if r.check is not None]

    def trigger_words(self) -> set:
        words = set()
        for q in self.decisions:
            words.update(p.lower() for p in q.split(".") if len(p) > 2)
        for r in self.rules.values():
            words.update(r.triggers)
        return words


def load_rule_files(paths, target_name: str) -> UserRules:
    out = UserRules()
    for p in paths:
        path = Path(p)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise UsageError(f"cannot read rule file {path}: {e.strerror}") from None
        out.paths.append(str(path))
        if path.suffix == ".toml":
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                raise UsageError(f"{path}: invalid TOML: {e}") from None
            _load_own(out, data, path, target_name, _toml_lines(text))
        else:
            data = parse_json_lines(text, str(path))
            if not isinstance(data, dict):
                raise UsageError(f"{path}:1: a rule file must hold a JSON object")
            if "rules" in data:
                _load_ascend(out, data, path)
            else:
                _load_own(out, data, path, target_name, None)
    return out


def _toml_lines(text: str):
    """(kind, index) -> line of the index-th [[kind]] header."""
    lines = {}
    counts: dict = {}
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"\s*\[\[\s*(\w+)\s*\]\]", line)
        if m:
            kind = m.group(1)
            lines[(kind, counts.get(kind, 0))] = n
            counts[kind] = counts.get(kind, 0) + 1
    return lines


def _where(path, entry, kind, index, toml_lines) -> str:
    if toml_lines is not None:
        return f"{path}:{toml_lines.get((kind, index), 1)}"
    return f"{path}:{getattr(entry, 'line', 1)}"


def _need(entry, keys, where, types=str):
    if not isinstance(entry, dict):
        raise UsageError(f"{where}: each rule must be an object/table")
    for k in keys:
        if k not in entry:
            raise UsageError(f"{where}: missing '{k}'")
        if not isinstance(entry[k], types):
            raise UsageError(f"{where}: '{k}' must be a {getattr(types, '__name__', 'value')}")


def _check_name(value: str, where: str, key: str) -> None:
    if not _NAME.match(value):
        raise UsageError(f"{where}: '{key}' must be a (dotted) Python name, got {value!r}")


def _sections(data: dict, known: set, path: Path, what: str):
    """Check the kinds of a rule file and yield (kind, index, entry) for every rule in it."""
    for kind in data:
        if kind not in known:
            raise UsageError(f"{path}:{getattr(data, 'line', 1)}: unknown {what} '{kind}' "
                             f"(expected {', '.join(sorted(known))})")
    for kind, entries in data.items():
        if not isinstance(entries, list):
            raise UsageError(f"{path}:{getattr(data, 'line', 1)}: '{kind}' must be a list")
        for i, entry in enumerate(entries):
            yield kind, i, entry


def _load_ascend(out: UserRules, data: dict, path: Path) -> None:
    rules = data["rules"]
    if not isinstance(rules, dict):
        raise UsageError(f"{path}:{getattr(data, 'line', 1)}: 'rules' must be an object")
    known = {"ArgsModifyRule", "FuncNameModifyRule", "ModuleNameModifyRule"}
    for kind, i, entry in _sections(rules, known, path, "rule kind"):
        where = f"{path}:{getattr(entry, 'line', 1)}"
        rid = f"{path.stem}:{kind}:{i + 1}"
        if kind == "FuncNameModifyRule":
            _need(entry, ("old_name", "new_name"), where)
            _check_name(entry["old_name"], where, "old_name")
            _check_name(entry["new_name"], where, "new_name")
            _add_rename(out, rid, entry["old_name"], entry["new_name"], "", path)
        elif kind == "ModuleNameModifyRule":
            _need(entry, ("old_name", "new_name", "parent_module"), where)
            for key in ("old_name", "new_name", "parent_module"):
                _check_name(entry[key], where, key)
            parent = entry["parent_module"]
            _add_rename(out, rid, f"{parent}.{entry['old_name']}", f"{parent}.{entry['new_name']}", "", path)
        else:
            _need(entry, ("func_name", "arg_new"), where)
            _need(entry, ("arg_idx",), where, int)
            _check_name(entry["func_name"], where, "func_name")
            _add_argument(out, rid, entry["func_name"], entry["arg_idx"], None, entry["arg_new"], path, where)


def _load_own(out: UserRules, data: dict, path: Path, target_name: str, toml_lines) -> None:
    known = {"rename", "unsupported", "keep", "argument"}
    for kind, i, entry in _sections(data, known, path, "section"):
        where = _where(path, entry, kind, i, toml_lines)
        if not isinstance(entry, dict):
            raise UsageError(f"{where}: each rule must be a table")
        targets = entry.get("targets")
        if targets is not None and (not isinstance(targets, list) or not all(isinstance(t, str) for t in targets)):
            raise UsageError(f"{where}: 'targets' must be a list of target names")
        if targets is not None and target_name not in targets:
            continue
        rid = str(entry.get("id") or f"{path.stem}:{kind}:{i + 1}")
        if kind == "rename":
            _need(entry, ("old", "new"), where)
            _check_name(entry["old"], where, "old")
            _check_name(entry["new"], where, "new")
            _add_rename(out, rid, entry["old"], entry["new"], str(entry.get("note", "")), path)
        elif kind in ("unsupported", "keep"):
            text_key = "tip" if kind == "unsupported" else "message"
            _need(entry, ("name", text_key), where)
            _check_name(entry["name"], where, "name")
            out.decisions[entry["name"]] = _decision(kind, entry[text_key], "", rid)
            out.rules[rid] = Rule(rid, f"{kind} {entry['name']}", "user-rule", entry[text_key], source=str(path))
        else:
            _need(entry, ("call", "new"), where)
            _check_name(entry["call"], where, "call")
            if ("index" in entry) == ("keyword" in entry):
                raise UsageError(f"{where}: give exactly one of 'index' or 'keyword'")
            if "index" in entry and not isinstance(entry["index"], int):
                raise UsageError(f"{where}: 'index' must be an integer")
            _add_argument(out, rid, entry["call"], entry.get("index"), entry.get("keyword"), entry["new"], path, where)


def _decision(kind: str, value: str, note: str, rid: str) -> NameDecision:
    return NameDecision(kind, value, note, rid)


def _add_rename(out: UserRules, rid: str, old: str, new: str, note: str, path: Path) -> None:
    doc = f"{old} -> {new}" + (f"\n\n{note}" if note else "")
    if "." in old:
        out.decisions[old] = _decision("new", new, note, rid)
        out.rules[rid] = Rule(rid, f"rename {old}", "user-rule", doc, source=str(path))
        return

    def check(node, ctx, old=old, new=new):
        func = node.func
        if isinstance(func, ast.Name) and func.id == old and ctx.lookup(func.id, func.lineno) is None:
            ctx.replace(func, new, ctx.user_rule(rid))
        elif isinstance(func, ast.Attribute) and func.attr == old and ctx.qualname(func.value) is None:
            start = ctx.span(func)[1] - len(old)
            ctx.replace((start, start + len(old)), new.rsplit(".", 1)[-1], ctx.user_rule(rid))

    out.rules[rid] = Rule(rid, f"rename {old}()", "user-rule", doc, nodes=(ast.Call,),
                          triggers=(old.lower(),), check=check, source=str(path))


def _add_argument(out, rid, func_name, index, keyword, new, path, where) -> None:
    try:
        ast.parse(new, mode="eval")
    except SyntaxError:
        raise UsageError(f"{where}: the new argument {new!r} is not a Python expression") from None
    last = func_name.rsplit(".", 1)[-1]

    def check(node, ctx):
        func = node.func
        q = ctx.qualname(func)
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if not (q == func_name or ("." not in func_name and name == func_name)):
            return
        r = ctx.user_rule(rid)
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
    out.rules[rid] = Rule(rid, what, "user-rule", what, nodes=(ast.Call,), triggers=(last.lower(),),
                          check=check, source=str(path))
