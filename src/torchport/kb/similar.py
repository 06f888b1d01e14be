"""kb/similar.toml: what `convert --similar` swaps an unsupported API for, and what changes with the swap.

Ascend's migration tool has -sim/--similar: some unsupported APIs are replaced by APIs of a similar function, at
a possible cost in accuracy or performance.  Each entry here names the CUDA-side API, the targets it applies to,
the similar API, what is not the same, and its source.  kb/apimap.py answers with it; converter/rules/api.py
makes the swap (TP123).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from . import bundled_data


@dataclass(frozen=True)
class Similar:
    name: str            # canonical CUDA-side name
    targets: tuple       # bundled targets that lack it
    new: str             # the similar API (a target name, or a CUDA-side name the API map maps)
    change: str          # what is not the same
    source: str
    max_args: int = -1   # >= 0: only calls with at most this many positional arguments and no keywords


@cache
def similar_apis() -> tuple:
    """Every entry of kb/similar.toml, in file order."""
    return tuple(Similar(e["name"], tuple(e["targets"]), e["new"], " ".join(e["change"].split()),
                         " ".join(e["source"].split()), e.get("max_args", -1))
                 for e in bundled_data("similar.toml").get("similar", ()))


def similar_for(target: str) -> dict:
    """name -> Similar for the entries that apply to `target`."""
    return {s.name: s for s in similar_apis() if target in s.targets}
