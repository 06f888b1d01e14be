"""Operator support: which aten ops a target implements, for which torch version, and `ops check`.

Data (folder kb/ops/): kb/ops/<target>.json (vendor op lists, one entry per vendor release, made
by tools/extract_ops.py) and kb/ops/aten.json (every aten op of torch 2.13 with
its dispatch keys and whether it is composite, i.e. needs no backend kernel).
Built-in backends (cpu, mps, xpu) are read from aten.json's dispatch keys when
they have no list of their own.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

from ..core.errors import UsageError
from ..core.jsonfile import Fields, as_count, as_text, json_kind, read_json, short

HERE = Path(__file__).resolve().parent / "ops"
BUNDLED_NAME = re.compile(r"[A-Za-z0-9_-]+")   # kb/ops/<name>.json

SUPPORTED = "supported"        # the target has a kernel for this overload
COMPOSITE = "composite"        # no backend kernel needed (decomposes or is device-generic)
FALLBACK = "cpu-fallback"      # not implemented: runs on the CPU (slow, copies)
MISSING = "missing"            # not implemented: fails
UNKNOWN = "unknown"            # no data for this target / not an aten op


def normalize_op(name: str) -> str:
    """'aten::add.Tensor' / 'add.Tensor(Tensor self, ...) -> Tensor' / 'add.default' -> 'add.Tensor' / 'add'."""
    name = name.strip()
    if "::" in name:
        ns, name = name.split("::", 1)
        if ns != "aten":
            return f"{ns}::{name.split('(')[0].strip()}"
    name = name.split("(")[0].strip()
    if name.endswith(".default"):
        name = name[: -len(".default")]
    return name


def _version_key(v: str) -> tuple:
    out = []
    for part in str(v).split("+")[0].split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


@lru_cache(maxsize=None)
def aten() -> dict:
    return json.loads((HERE / "aten.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def vendor(name: str) -> Optional[dict]:
    path = HERE / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


@dataclass(frozen=True)
class OpList:
    """The ops one target implements, as known for one torch version."""

    target: str
    ops: frozenset
    fallback: Optional[str]         # "cpu", "error" or None (unknown)
    source: str
    vendor_version: str = ""
    torch_version: str = ""
    note: str = ""


def op_list(target, torch_version: Optional[str] = None) -> Optional[OpList]:
    """The op list for a Target (its `ops` data or its dispatch key in aten.json), nearest to torch_version."""
    if target.ops and not BUNDLED_NAME.fullmatch(target.ops):  # a target file's `ops` could name ../../x
        raise UsageError(f"{getattr(target, 'path', '') or 'target ' + target.name}: 'ops' must name an op list "
                         f"in kb/ops/ (such as 'npu'), not {short(target.ops)}")
    data = vendor(target.ops) if target.ops else None
    if data and data.get("versions"):
        versions = sorted(data["versions"], key=lambda v: _version_key(v["torch_version"]))
        chosen, note = versions[-1], ""
        if torch_version:
            older = [v for v in versions if _version_key(v["torch_version"]) <= _version_key(torch_version)]
            chosen = older[-1] if older else versions[0]
            if chosen["torch_version"].split("+")[0] != torch_version:
                note = (f"no {target.name} op list for torch {torch_version}; "
                        f"using {data.get('target', target.name)} {chosen['vendor_version']} (torch {chosen['torch_version']})")
        dense = frozenset(chosen["ops"]) - frozenset(chosen.get("key_limited", ()))  # quantized/sparse-only
        return OpList(target.name, dense, data.get("fallback"), chosen.get("source", ""),
                      chosen.get("vendor_version", ""), chosen.get("torch_version", ""), note)
    if target.dispatch_key:
        a = aten()
        ops = frozenset(name for name, info in a["ops"].items() if target.dispatch_key in info.get("dispatch", ()))
        note = ""
        if torch_version and torch_version != a["torch_version"]:
            note = f"dispatch keys are from torch {a['torch_version']}"
        return OpList(target.name, ops, "error", a.get("source", ""), "", a["torch_version"], note)
    return None


@dataclass(frozen=True)
class OpStatus:
    op: str
    status: str
    detail: str = ""

    def _replace_op(self, op: str, why: str) -> "OpStatus":
        return OpStatus(op, self.status, "; ".join(x for x in (why, self.detail) if x))


@lru_cache(maxsize=8)
def _overloads(names: frozenset) -> dict:
    """Op base name -> its overloads in `names`, sorted (one pass: classifying many ops stays linear)."""
    out: dict = {}
    for name in sorted(names):
        out.setdefault(name.split(".")[0], []).append(name)
    return out


@lru_cache(maxsize=None)
def _aten_overloads() -> dict:
    return _overloads(frozenset(aten()["ops"]))


def classify(op: str, ops: Optional[OpList]) -> OpStatus:
    name = normalize_op(op)
    if ops is None:
        return OpStatus(name, UNKNOWN, "no operator data for this target")
    if name in ops.ops:
        return OpStatus(name, SUPPORTED)
    info = aten()["ops"].get(name)
    if info is None and "::" in name:
        return OpStatus(name, UNKNOWN, "not an aten op: supported only if its library registers the target")
    if info is None and name.split(".")[0] not in _aten_overloads():
        return OpStatus(name, UNKNOWN, f"not an aten op in torch {aten()['torch_version']}")
    if info is not None and info.get("composite"):
        delegate = info.get("delegate")
        if delegate and delegate not in ops.ops:  # built by calling an out= op, which needs a kernel
            return classify(delegate, ops)._replace_op(name, f"computed by {delegate}")
        return OpStatus(name, COMPOSITE, f"Composite{info['composite'].capitalize()} in torch: no backend kernel needed")
    base = name.split(".")[0]
    others = _overloads(ops.ops).get(base, [])
    detail = f"other overloads supported: {', '.join(others[:4])}" if others else ""
    if ops.fallback == "cpu":
        return OpStatus(name, FALLBACK, detail)
    return OpStatus(name, MISSING, detail)


def load_ops_file(path) -> list:
    """[(op, count, modules)] from an ops JSON file: a list of names, {op: count}, or {"ops": [{op, count, modules}]}
    (what `torchport ops record` writes).  Counts are whole numbers; anything else is a UsageError naming
    the file and the place."""
    data, where, key = read_json(path, what="ops file"), f"{path}", ""
    if isinstance(data, dict) and "ops" in data:
        data, where, key = data["ops"], f"{path}: ops", "ops"
    if isinstance(data, dict):
        return [(as_text(op, f"{where}: an op name"), as_count(n, f"{where}: the count of {short(op)}"), [])
                for op, n in data.items()]
    if not isinstance(data, list):
        raise UsageError(f"{where}: expected a list of ops, an {{op: count}} object, or {{\"ops\": [...]}}, "
                         f"not {json_kind(data)}")
    rows = []
    for i, item in enumerate(data):
        at = f"{path}: {key}[{i}]"
        if isinstance(item, str):
            rows.append((as_text(item, at), 1, []))
        elif isinstance(item, dict):
            f = Fields(item, at)
            rows.append((f.text("op") if "op" in item else f.text("name"), f.count("count", 1), f.texts("modules", [])))
        else:
            raise UsageError(f"{at}: each op must be a name or an object with 'op', not {json_kind(item)}")
    return rows


def check(rows: list, target, torch_version: Optional[str] = None) -> tuple:
    """(OpList or None, [(OpStatus, count, modules)]) for recorded ops on a target."""
    ops = op_list(target, torch_version)
    merged: dict = {}
    for op, count, modules in rows:
        key = normalize_op(op)
        c, m = merged.get(key, (0, []))
        merged[key] = (c + count, m + [x for x in modules if x not in m])
    return ops, [(classify(op, ops), count, modules) for op, (count, modules) in sorted(merged.items())]
