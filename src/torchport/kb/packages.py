"""kb/packages.toml: CUDA-only and CUDA-first third-party packages and what each target offers instead.

Read by `convert` (imports of these packages are reported with the advice) and
by `analyze` (imports and declared dependencies are matched against it).
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent


_SEPARATORS = re.compile(r"[-_.]+")


def _norm(name: str) -> str:
    return _SEPARATORS.sub("-", name).lower()


@dataclass(frozen=True)
class Package:
    name: str
    imports: tuple
    pypi: tuple
    kind: str                 # cuda-only | cuda-first
    what: str
    instead: str
    sources: tuple
    targets: dict = field(default_factory=dict)   # target -> {"instead": ..., "source": ...}
    pypi_patterns: tuple = ()                     # fnmatch patterns of more distribution names
    flag_imports: bool = True                     # False: the import name is shared with a CPU build
    markers: tuple = ()                           # strings in code that select the package's CUDA path
    cuda_path: bool = False                       # a branch that uses it is CUDA's (convert keeps its question)

    def advice(self, target: str) -> tuple:
        """(text, whether the target has a known alternative)."""
        alt = self.targets.get(target)
        if alt:
            return f"{self.name} is {self.kind} ({self.what}); on {target}: {alt['instead']}", True
        return f"{self.name} is {self.kind} ({self.what}); {self.instead}", bool(self.instead)


class Packages:
    def __init__(self, packages: list):
        self.packages = packages
        self._imports = {i: p for p in packages if p.flag_imports for i in p.imports}
        self._dists = {_norm(d): p for p in packages for d in p.pypi}
        self._patterns = [(_norm(pat), p) for p in packages for pat in p.pypi_patterns]

    def by_import(self, module: str) -> Optional[Package]:
        """The package a module belongs to: 'apex.amp' -> apex, 'nvidia.dali.fn' -> nvidia-dali."""
        parts = module.split(".")
        for i in range(len(parts), 0, -1):
            pkg = self._imports.get(".".join(parts[:i]))
            if pkg is not None:
                return pkg
        return None

    def by_distribution(self, name: str) -> Optional[Package]:
        name = _norm(name)
        found = self._dists.get(name)
        if found is None:
            found = next((p for pat, p in self._patterns if fnmatch.fnmatchcase(name, pat)), None)
        return found

    def by_marker(self, text: str) -> Optional[Package]:
        """The package whose CUDA path a string selects ("CUDAExecutionProvider" -> onnxruntime-gpu)."""
        return next((p for p in self.packages if text in p.markers), None)

    @property
    def import_names(self) -> list:
        return sorted(self._imports)


@cache
def packages() -> Packages:
    from . import bundled_data

    data = bundled_data("packages.toml")
    out = []
    for name, entry in data.get("packages", {}).items():
        out.append(Package(
            name=name, imports=tuple(entry.get("imports", ())), pypi=tuple(entry.get("pypi", ())),
            kind=entry.get("kind", "cuda-first"), what=entry.get("what", ""), instead=entry.get("instead", ""),
            sources=tuple(entry.get("sources", ())),
            targets={t: dict(v) for t, v in entry.get("targets", {}).items()},
            pypi_patterns=tuple(entry.get("pypi_patterns", ())), flag_imports=entry.get("flag_imports", True),
            markers=tuple(entry.get("markers", ())),
            cuda_path=entry.get("cuda_path", entry.get("kind") == "cuda-only")))
    return Packages(out)
