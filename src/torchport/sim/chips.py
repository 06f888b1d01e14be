"""The simulated device's vendor facts (kb/sim/chips.toml): which chip it presents and the rules the vendor's
package applies to it: property fields, capability, bf16 support, autocast dtypes, visible devices, allocator sizes.

Plain data and small functions; no torch here (the CLI checks `--chip` before starting anything).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, cast

from ..core.errors import UsageError

CHIPS = Path(__file__).resolve().parent.parent / "kb" / "sim" / "chips.toml"
_DATA: Optional[dict] = None


def _data() -> dict:
    global _DATA
    if _DATA is None:
        from ..core.tomlfile import tomllib

        _DATA = tomllib.loads(CHIPS.read_text(encoding="utf-8"))
    return _DATA


@dataclass(frozen=True)
class Device:
    """A target's simulated device: the chip it presents and the vendor's rules (one table of chips.toml)."""

    target: str
    chip: dict
    rules: dict

    @property
    def name(self) -> str:
        return self.chip["name"]

    @property
    def total_memory(self) -> int:
        return int(self.chip["total_memory_gib"]) << 30

    @property
    def capability(self) -> tuple:
        return int(self.chip.get("major", 0)), int(self.chip.get("minor", 0))

    def property_values(self) -> dict:
        """get_device_properties' fields, as the vendor's binding fills them (None where it leaves one unset)."""
        values: dict[str, Any] = {}
        for name in self.rules["properties"]:
            if name == "total_memory":
                values[name] = self.total_memory
            elif name == "multi_processor_count" and name not in self.chip:
                values[name] = _multi_processors(self.chip)
            else:
                values[name] = self.chip.get(name)
        return values

    def bf16_supported(self, including_emulation: bool = True) -> bool:
        """is_bf16_supported() by the vendor's rule for this chip."""
        rule = self.rules["bf16"]
        key = rule["key"]
        have = tuple(self.capability) if key == "capability" else self.chip.get(key, 0)
        want = tuple(rule["at_least"]) if key == "capability" else rule["at_least"]
        if have >= want:
            return True
        return bool(rule.get("emulation")) and including_emulation

    def amp_dtypes(self) -> list:
        """get_amp_supported_dtype(): the dtype names, bfloat16 left out where the vendor gates it on support."""
        rule = self.rules["amp_dtypes"]
        return [d for d in rule["dtypes"]
                if d != "bfloat16" or not rule.get("bfloat16_when_supported") or self.bf16_supported()]

    def double_as_float(self) -> str:
        """The vendor's warning when its device holds 64-bit floating data as 32-bit, or '' when it keeps float64."""
        rule = self.rules.get("double_as_float")
        return rule["warning"] if rule else ""

    def allocator(self) -> tuple:
        """The caching allocator's sizes, in the order the extension's configure_allocator takes them."""
        a = self.rules["allocator"]
        return (a["pad"], a["min_block"], a["small_size"], a["small_segment"], a["min_large_alloc"],
                a["large_segment"], a["round_large"])


def _multi_processors(chip: dict):
    if "cluster_count" in chip and "core_num_per_cluster" in chip:   # torch_mlu device.cpp:138-140
        return chip["cluster_count"] * chip["core_num_per_cluster"]
    if "vector_core_num" in chip:   # torch_npu Module.cpp:239-248
        return chip["vector_core_num"] or chip.get("cube_core_num")
    return None


def vendor_rules(target: str) -> dict:
    """The vendor's rules for `target` (its chips.toml table less the chips); {} for a target with none."""
    return {k: v for k, v in _data().get(target, {}).items() if k != "chip"}


def chip_names(target: str) -> list:
    return [c["name"] for c in _data().get(target, {}).get("chip", [])]


def device(target: str, chip: Optional[str] = None) -> Device:
    """The simulated device of `target`: the chip named `chip`, or the target's default."""
    table = _data().get(target)
    if table is None:
        raise UsageError(f"no simulated chips for '{target}' in {CHIPS.name}")
    wanted = chip or table["default"]
    for c in table["chip"]:
        if c["name"].lower() == wanted.lower():
            return Device(target, c, {k: v for k, v in table.items() if k != "chip"})
    raise UsageError(f"unknown {target} chip '{wanted}' (simulated chips: {', '.join(chip_names(target))})")


def visible_count(target: str, devices: int, environ=None) -> int:
    """How many of the `devices` simulated devices a process sees under the target's visible-devices variable,
    by the vendor's own parsing (kb/sim/chips.toml [<target>] visible)."""
    environ = os.environ if environ is None else environ
    rule = _data()[target]["visible"]
    value = next((environ[v] for v in rule["env"] if v in environ), None)
    if value is None:
        return devices
    ids = _ascend_ids(value) if rule["rule"] == "ascend" else _cnrt_ids(value)
    if ids is None:
        return 0
    for i, x in enumerate(ids):
        if x >= devices:   # the list stops at the first device that is not there
            return i
    return len(ids)


def _ascend_ids(value: str):
    """torch_npu's _parse_visible_devices and _device_count_ascend_hal: ascending ids, or None (no device)."""
    prefix = cast(re.Match, re.match(r"[0-9,]*", value)).group(0)   # the pattern matches "" too: always a match
    ids = []
    for elem in prefix.split(",") if prefix else []:
        if not elem:
            break
        ids.append(int(elem))
    if any(b <= a for a, b in zip(ids, ids[1:])):
        return None
    return ids


def _cnrt_ids(value: str):
    """torch_mlu's _parse_visible_devices (cnrt's rule, as CUDA's): ids up to the first non-number, or None
    when an id repeats.  UUID lists are not modelled (they name no simulated device: none is visible)."""
    ids = []
    for elem in value.split(","):
        elem = elem.strip()
        if not elem.isdigit():
            break
        if int(elem) in ids:
            return None
        ids.append(int(elem))
    return ids


__all__ = ["Device", "device", "chip_names", "visible_count", "CHIPS"]
