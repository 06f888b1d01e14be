"""Support data with provenance: CUDA API lists, per-target API lists, the CUDA-name catalog.

Everything here is data read from files next to this module; each file says
where it came from and tools/ holds the script that regenerates it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..backends import NameDecision
from ..core.cache import cached_data

HERE = Path(__file__).resolve().parent


def _read(path: Path):
    """A bundled TOML or JSON file's data."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".toml":
        from ..core.tomlfile import tomllib

        return tomllib.loads(text)
    return json.loads(text)


def bundled_data(name: str):
    """The data of a file under kb/ (`cuda_names.toml`, `api/cuda.json`), through the cache."""
    return cached_data(HERE / name, _read)


@dataclass(frozen=True)
class Catalog:
    """kb/cuda_names.toml: categories, aliases, default decisions, notes, AMP adapters."""

    categories: tuple        # ((fnmatch pattern, category), ...) in file order
    aliases: dict            # other spelling -> canonical qualified name
    names: dict              # qualified name -> NameDecision (defaults for all targets)
    notes: dict              # qualified name prefix -> note text
    amp: dict                # torch.cuda.amp qualified name -> {"new", "device", "positional", "note"}
    tips: dict               # category -> tip for unsupported torch.cuda names
    cuda_names: frozenset    # torch.cuda.__all__ (torch 2.13.0)
    cuda_modules: dict       # torch.cuda submodule -> frozenset of names


@cache
def catalog() -> Catalog:
    data = bundled_data("cuda_names.toml")
    names = {}
    for qualname, entry in data.get("names", {}).items():
        (kind, value), = [(k, v) for k, v in entry.items() if k != "note"]
        names[qualname] = NameDecision(kind, value, entry.get("note", ""))
    cuda = bundled_data("api/cuda.json")
    return Catalog(
        categories=tuple(data["category"].items()),
        aliases=dict(data.get("aliases", {})),
        names=names,
        notes=dict(data.get("notes", {})),
        amp={k: dict(v) for k, v in data.get("amp", {}).items()},
        tips=dict(data.get("tips", {})),
        cuda_names=frozenset(cuda["names"]),
        cuda_modules={k: frozenset(v) for k, v in cuda["modules"].items()},
    )


@dataclass(frozen=True)
class CudaDefault:
    """A torch API whose device parameter defaults to "cuda" (kb/cuda_names.toml [cuda_default])."""

    position: int            # its positional index
    keyword: str             # its name
    skip: frozenset          # targets that keep CUDA's default (theirs would break the call)
    note: str = ""           # what CUDA's default does on another device


@cache
def cuda_defaults() -> dict:
    """{qualified name, each spelling: CudaDefault} of kb/cuda_names.toml [cuda_default] (apart from the catalog,
    which reads the API lists too: a rule's trigger words are its names)."""
    out = {}
    for qualname, entry in bundled_data("cuda_names.toml").get("cuda_default", {}).items():
        spec = CudaDefault(int(entry["position"]), str(entry["keyword"]), frozenset(entry.get("skip", ())),
                           str(entry.get("note", "")))
        for name in (qualname, *entry.get("also", ())):
            out[name] = spec
    return out
