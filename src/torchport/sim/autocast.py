"""The simulated device's autocast: the vendor's own op lists, registered on AutocastPrivateUse1 at install.

The lists are data (kb/sim/autocast/<target>.json, extracted from the vendor's autocast registration by
tools/extract_autocast.py, PyTorch's AT_FORALL_* macros expanded from the torch the vendor builds against):
per op its policy, as PyTorch names them (lower_precision_fp, fp32, fp32_set_opt_dtype, fp32_append_dtype,
promote, banned).  The C++ extension applies them (csrc/simdevice.cpp, set_autocast); an op a list does not
name falls through and runs in the dtypes it is given, as on the vendor's device.  Ops of a list that this
torch lacks are skipped and counted.
"""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "kb" / "sim" / "autocast"
# the order of CastPolicy in csrc/simdevice.cpp
POLICIES = ("lower_precision_fp", "fp32", "fp32_set_opt_dtype", "fp32_append_dtype", "promote", "banned")


@cache
def load(target: str) -> dict:
    """The target's autocast data (kb/sim/autocast/<target>.json)."""
    data = json.loads((DATA / f"{target}.json").read_text(encoding="utf-8"))
    for entry in data["ops"]:
        if entry["policy"] not in POLICIES:
            raise ValueError(f"{target}.json: {entry['op']}: unknown autocast policy {entry['policy']!r}")
    return data


def policies(target: str) -> dict:
    """{op: policy} of the target's list."""
    return {e["op"]: e["policy"] for e in load(target)["ops"]}


def dtype_overload(op: str) -> str:
    """The overload fp32_append_dtype calls for `op` ("norm.Scalar" -> "norm.ScalarOpt_dtype"): the same
    arguments by name with a ScalarType `dtype` after them; "" when this torch has none."""
    import torch

    name, _, overload = op.partition(".")
    packet = getattr(torch.ops.aten, name, None)
    if packet is None or (overload or "default") not in packet.overloads():
        return ""
    wanted = [a.name for a in getattr(packet, overload or "default")._schema.arguments] + ["dtype"]
    for other in packet.overloads():
        if [a.name for a in getattr(packet, other)._schema.arguments] == wanted:
            return f"{name}.{other}"
    return ""


def register(ext, target: str) -> dict:
    """Register the target's policies with the extension; what was registered and what was skipped."""
    data = load(target)
    rules = [(e["op"], POLICIES.index(e["policy"]),
              dtype_overload(e["op"]) if e["policy"] == "fp32_append_dtype" else "") for e in data["ops"]]
    skipped = ext.set_autocast(rules, data["banned_message"])
    return {"source": f"{data['vendor']['repo']}@{data['vendor']['commit'][:12]} {data['vendor']['path']}",
            "torch_lists": data["torch"]["version"] if data["torch"] else None,
            "registered": len(rules) - len(skipped), "skipped": sorted(skipped)}


__all__ = ["load", "policies", "register", "dtype_overload", "DATA", "POLICIES"]
