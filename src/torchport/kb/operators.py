"""Operator support: which aten ops a target implements, for which torch version, and `ops check`.

Data (folder kb/ops/): kb/ops/<target>.json (vendor op lists, one entry per vendor release, made
by tools/extract_ops.py) and kb/ops/aten.json (every aten op of torch 2.13 with
its dispatch keys and whether it is composite, i.e. needs no backend kernel).
Built-in backends (cpu, mps, xpu) are read from aten.json's dispatch keys when
they have no list of their own.  kb/op_kernels.toml (curated, a source per entry) adds what no
list states: ops a built-in backend always runs on the CPU (MPS), and kernels torch picks on the
recording device (mkldnn_rnn_layer for lstm on the CPU), which are checked as the op the model called.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Optional

from ..core.errors import UsageError
from ..core.jsonfile import Fields, as_count, as_text, json_kind, read_json, short
from ..core.tomlfile import tomllib

HERE = Path(__file__).resolve().parent / "ops"
BUNDLED_NAME = re.compile(r"[A-Za-z0-9_-]+")   # kb/ops/<name>.json

SUPPORTED = "supported"        # the target has a kernel for this overload
COMPOSITE = "composite"        # no backend kernel needed (decomposes or is device-generic)
FALLBACK = "cpu-fallback"      # not implemented: runs on the CPU (slow, copies)
MISSING = "missing"            # not implemented: fails
CPU_ONLY = "recorded-on-cpu"   # only the CPU has a kernel: torch may have picked it there for another op
UNKNOWN = "unknown"            # no data for this target / not an aten op
WORST = (MISSING, CPU_ONLY, FALLBACK, UNKNOWN, COMPOSITE, SUPPORTED)   # worst first


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


def base_version(v) -> str:
    """'2.13.0+cpu' -> '2.13.0'."""
    return str(v).split("+")[0].strip()


def _version_key(v: str) -> tuple:
    out = []
    for part in str(v).split("+")[0].split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out + [0] * (4 - len(out)))   # 2.13 sorts as 2.13.0


@cache
def aten() -> dict:
    return json.loads((HERE / "aten.json").read_text(encoding="utf-8"))


@cache
def vendor(name: str) -> Optional[dict]:
    path = HERE / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


@cache
def kernels() -> dict:
    """kb/op_kernels.toml: always_cpu (by dispatch key), picked (kernel -> ops it serves), uses."""
    return tomllib.loads((HERE.parent / "op_kernels.toml").read_text(encoding="utf-8"))


def same_version(a, b) -> bool:
    """2.13 == 2.13.0 == 2.13.0+cpu."""
    return _version_key(a) == _version_key(b)


def _aten_note(torch_version: Optional[str]) -> str:
    a = aten()["torch_version"]
    if torch_version and not same_version(torch_version, a):
        return f"dispatch keys and composite ops are torch {a}'s, not torch {base_version(torch_version)}'s"
    return ""


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
    cpu_ops: frozenset = frozenset()   # ops the target always runs on the CPU (registered to its fallback)
    key: str = ""                      # its dispatch key (MPS, XPU; PrivateUse1 for out-of-tree vendors)
    covers: tuple = ()                 # ((recorded op, always-CPU op that decomposes into it), ...)


def op_list(target, torch_version: Optional[str] = None) -> Optional[OpList]:
    """The op list for a Target (its `ops` data or its dispatch key in aten.json), nearest to torch_version.
    `note` says when the data is for another torch than torch_version."""
    if target.ops and not BUNDLED_NAME.fullmatch(target.ops):  # a target file's `ops` could name ../../x
        raise UsageError(f"{getattr(target, 'path', '') or 'target ' + target.name}: 'ops' must name an op list "
                         f"in kb/ops/ (such as 'npu'), not {short(target.ops)}")
    wanted = base_version(torch_version) if torch_version else ""
    data = vendor(target.ops) if target.ops else None
    if data and data.get("versions"):
        versions = sorted(data["versions"], key=lambda v: _version_key(v["torch_version"]))
        chosen, notes = versions[-1], []
        if wanted:
            older = [v for v in versions if _version_key(v["torch_version"]) <= _version_key(wanted)]
            chosen = older[-1] if older else versions[0]
            if not same_version(chosen["torch_version"], wanted):
                notes.append(f"no {target.name} op list for torch {wanted}; using {data.get('target', target.name)} "
                             f"{chosen['vendor_version']} (torch {chosen['torch_version']})")
        notes.append(_aten_note(torch_version))
        dense = frozenset(chosen["ops"]) - frozenset(chosen.get("key_limited", ()))  # quantized/sparse-only
        return OpList(target.name, dense, data.get("fallback"), chosen.get("source", ""),
                      chosen.get("vendor_version", ""), chosen.get("torch_version", ""),
                      "; ".join(n for n in notes if n), frozenset(chosen.get("cpu_fallback_ops", ())) - dense,
                      target.dispatch_key or "PrivateUse1")
    if target.dispatch_key:
        a, key = aten(), target.dispatch_key
        ops = frozenset(name for name, info in a["ops"].items() if key in info.get("dispatch", ()))
        always = kernels().get("always_cpu", {}).get(key, {})
        notes = [_aten_note(torch_version)]
        if always and not same_version(always["torch_version"], a["torch_version"]):
            notes.append(f"the {key} always-CPU list is torch {always['torch_version']}'s")
        return OpList(target.name, ops, "error", a.get("source", ""), "", a["torch_version"],
                      "; ".join(n for n in notes if n), frozenset(always.get("ops", ())) - ops, key,
                      tuple(sorted(always.get("covers", {}).items())))
    return None


@dataclass(frozen=True)
class OpStatus:
    op: str
    status: str
    detail: str = ""
    asked: str = ""      # for a kernel torch picked on the recording device: the op(s) the model called

    def _replace_op(self, op: str, why: str) -> OpStatus:
        return OpStatus(op, self.status, "; ".join(x for x in (why, self.detail) if x), self.asked)


@lru_cache(maxsize=8)
def _overloads(names: frozenset) -> dict:
    """Op base name -> its overloads in `names`, sorted (one pass: classifying many ops stays linear)."""
    out: dict = {}
    for name in sorted(names):
        out.setdefault(name.split(".")[0], []).append(name)
    return out


@cache
def _aten_overloads() -> dict:
    return _overloads(frozenset(aten()["ops"]))


def _cpu_only(info: dict) -> bool:
    """Kernels for CPU keys only (CPU, MkldnnCPU, QuantizedCPU...; Meta aside), none composite."""
    keys = [k for k in info.get("dispatch", ()) if "Meta" not in k]
    return bool(keys) and not info.get("composite") and all("CPU" in k for k in keys)


def _worst(statuses: list) -> OpStatus:
    return min(statuses, key=lambda st: WORST.index(st.status))


def _picked(name: str, entry: dict, ops: OpList) -> OpStatus:
    """A kernel torch picked on the recording device: the status of the op(s) the model called."""
    found = []
    for asked in entry["for"]:
        uses = kernels().get("uses", {}).get(asked, {}).get(ops.key)
        if asked in ops.ops or not uses:
            st = classify(asked, ops)
            found.append(OpStatus(asked, st.status, f"{asked}: {st.status}" + (f", {st.detail}" if st.detail else "")))
        else:
            parts = [classify(k, ops) for k in uses]
            found.append(OpStatus(asked, _worst(parts).status, f"{asked} runs "
                                  + ", ".join(f"{p.op} ({p.status})" for p in parts) + f" on {ops.target}"))
    asked = " / ".join(entry["for"])
    return OpStatus(name, _worst(found).status, f"the kernel torch picks on the {entry['device'].upper()} for "
                    f"{asked}; " + "; ".join(st.detail for st in found), asked)


def classify(op: str, ops: Optional[OpList]) -> OpStatus:
    name = normalize_op(op)
    if ops is None:
        return OpStatus(name, UNKNOWN, "no operator data for this target")
    if name in ops.ops:
        return OpStatus(name, SUPPORTED)
    if name in ops.cpu_ops:
        return OpStatus(name, FALLBACK, f"{ops.target} always runs it on the CPU (registered to its CPU fallback)")
    picked = kernels().get("picked", {}).get(name)
    if picked:
        return _picked(name, picked, ops)
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
    notes = [f"other overloads supported: {', '.join(others[:4])}" if others else ""]
    notes += [f"called through {whole}, it runs on the CPU ({ops.target} registers {whole} to its CPU fallback)"
              for part, whole in ops.covers if part == name]
    has_cpu = info is None or any("CPU" in k for k in info.get("dispatch", ()))
    if info is not None and _cpu_only(info):
        notes.insert(0, "only the CPU has a kernel for it: torch may have picked it on the CPU for an op the "
                        "model called (record on the target to tell)")
        return OpStatus(name, FALLBACK if ops.fallback == "cpu" else CPU_ONLY, "; ".join(n for n in notes if n))
    if ops.fallback == "cpu" and has_cpu:
        return OpStatus(name, FALLBACK, "; ".join(n for n in notes if n))
    if ops.fallback == "cpu":
        notes.insert(0, "no CPU kernel either: the CPU fallback cannot run it")
    return OpStatus(name, MISSING, "; ".join(n for n in notes if n))


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
    rows: list = []
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


def load_via(path) -> dict:
    """{op: {composite op: calls}}: what `ops record` saw composite ops' kernels call ("via" of each op)."""
    data = read_json(path, what="ops file")
    if not (isinstance(data, dict) and isinstance(data.get("ops"), list)):
        return {}
    out = {}
    for i, item in enumerate(data["ops"]):
        parents = item.get("via") if isinstance(item, dict) else None
        if isinstance(parents, dict):
            at = f"{path}: ops[{i}]: via"
            out[as_text(item.get("op"), f"{path}: ops[{i}]: op")] = {
                as_text(k, at): as_count(v, f"{at}: {short(k)}") for k, v in parents.items()}
    return out


def recorded_torch(path) -> Optional[str]:
    """The torch version an ops file was recorded with (its "torch" field, as `ops record` writes it), or None."""
    data = read_json(path, what="ops file")
    version = data.get("torch") if isinstance(data, dict) and "ops" in data else None
    if version is None:
        return None
    version = as_text(version, f"{path}: torch")
    if not re.fullmatch(r"\d+(\.\d+)*([a-z0-9.+-]*)", version.strip()):
        raise UsageError(f"{path}: torch must be a version such as 2.13.0, not {short(version)}")
    return version.strip()


def check(rows: list, target, torch_version: Optional[str] = None, via: Optional[dict] = None) -> tuple:
    """(OpList or None, [(OpStatus, count, modules)]) for recorded ops on a target.  `via` ({op: {composite op:
    calls}}, `ops record`'s "via"): the ops a composite op's kernel called.  They are needed on the target only
    through a composite it has no kernel for; such a composite takes the worst verdict of what it calls (its
    kernel needs theirs), and a call made only through ops the target runs itself is left out."""
    ops = op_list(target, torch_version)
    merged: dict = {}
    for op, count, modules in rows:
        key = normalize_op(op)
        c, m = merged.get(key, (0, []))
        merged[key] = (c + count, m + [x for x in modules if x not in m])
    status = {op: classify(op, ops) for op in merged}
    calls: dict = {}    # op -> {composite op: calls}, normalized
    for op, parents in (via or {}).items():
        for parent, n in parents.items():
            calls.setdefault(normalize_op(op), {})[normalize_op(parent)] = n
    for _ in range(8):   # composites calling composites: settle from the kernels up (8 levels is plenty)
        changed = False
        for parent in [op for op, st in status.items() if st.status == COMPOSITE]:
            children = [c for c, ps in calls.items() if parent in ps and c in status and c != parent]
            if not children:
                continue
            worst = _worst([status[c] for c in children])
            if worst.status != COMPOSITE:
                status[parent] = OpStatus(parent, worst.status, "its kernel calls " + ", ".join(
                    f"{c} ({status[c].status})" for c in sorted(children)))
                changed = True
        if not changed:
            break
    results = []
    for op, (count, modules) in sorted(merged.items()):
        through = calls.get(op, {})
        needed = count - sum(n for parent, n in through.items() if status.get(parent, COMPOSITE_STATUS).status
                             != COMPOSITE)
        if through and needed <= 0:
            continue   # called only inside ops the target runs (or lacks) as a whole
        results.append((status[op], needed if through else count, modules))
    return ops, results


COMPOSITE_STATUS = OpStatus("", COMPOSITE)
