"""What a target does with one CUDA-specific qualified name.

`ApiMap.resolve("torch.cuda.amp.autocast")` answers, from data only (the
target file, its API list and kb/cuda_names.toml): rewrite to another name,
rewrite and adapt the call (AMP), leave and report as unsupported, or leave and
advise.  Rules never hard-code API names; they ask this map.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Optional

from ..backends import NameDecision, Target
from . import catalog
from .packages import packages
from .similar import similar_for

MAP = "map"                  # rewrite to `new`
ADAPT = "adapt"              # rewrite to `new` and adapt the call (insert the device)
UNSUPPORTED = "unsupported"  # no counterpart: leave it, report with a tip
KEEP = "keep"                # leave it, report advice
SAME = "same"                # leave it, silently: the name means the same on the target


@dataclass(frozen=True)
class Resolution:
    kind: str
    qualname: str            # the canonical original name
    category: str
    new: str = ""
    message: str = ""
    adapter: Optional[dict] = None
    rule: str = ""           # user rule id, when a user rule decided

    @property
    def rewrites(self) -> bool:
        return self.kind in (MAP, ADAPT)


def package_decisions(target_name: str) -> dict:
    """'keep' decisions for the import names of kb/packages.toml, with the target's alternative."""
    out = {}
    for pkg in packages().packages:
        text = pkg.advice(target_name)[0].replace("{", "{{").replace("}", "}}")
        for name in pkg.imports:
            out[name] = NameDecision("keep", text)
    return out


def _prefixes(qualname: str):
    """'a.b.c' -> 'a.b.c', 'a.b', 'a' (longest first)."""
    parts = qualname.split(".")
    for i in range(len(parts), 0, -1):
        yield ".".join(parts[:i])


class ApiMap:
    def __init__(self, target: Target, extra_decisions: Optional[dict] = None, own_packages=(),
                 similar: bool = False):
        self.target = target
        self.similar = similar_for(target.name) if similar else {}  # convert --similar (kb/similar.toml)
        self.catalog = cat = catalog()
        self.package_decisions = {k: v for k, v in package_decisions(target.name).items()
                                  if k.split(".")[0] not in own_packages}
        self.decisions = {**self.package_decisions, **cat.names, **target.names, **(extra_decisions or {})}
        self.user_names = frozenset(extra_decisions or ())  # names the user's rule files decide
        # a key with `*` decides every name it matches (fnmatch: "torch._C._cuda*"), where no exact key does
        self.patterns = tuple((k, d) for k, d in self.decisions.items() if "*" in k)
        self._roots = {k.split(".")[0] for k in (*self.decisions, *cat.aliases)} | {"torch"}
        self._cache: dict = {}

    def fmt(self, text: str) -> str:
        t = self.target
        return text.format(title=t.title, name=t.name, device=t.device or "the device",
                           namespace=t.namespace, smi=t.smi or "the vendor tool", backend=t.backend,
                           kernels=t.kernel_advice)

    def category(self, qualname: str) -> str:
        if any(p in self.package_decisions for p in _prefixes(qualname)):
            return "third-party"
        for pattern, category in self.catalog.categories:
            if fnmatch.fnmatchcase(qualname, pattern):
                return category
        return "other"

    def canonical(self, qualname: str) -> str:
        for prefix in _prefixes(qualname):
            if prefix in self.catalog.aliases:
                return self.catalog.aliases[prefix] + qualname[len(prefix):]
        return qualname

    def resolve(self, qualname: str) -> Optional[Resolution]:
        """The target's answer for a name, or None when the name is not CUDA-specific."""
        if qualname in self._cache:
            return self._cache[qualname]
        result = None
        if qualname.split(".", 1)[0] in self._roots:
            result = self._resolve(self.canonical(qualname))
        self._cache[qualname] = result
        return result

    def similar_swap(self, res: Resolution):
        """convert --similar: (the kb/similar.toml entry, the name to write) for an unsupported name that has a
        similar API on the target, else None.  A user rule's decision is never swapped."""
        entry = self.similar.get(res.qualname) if res.kind == UNSUPPORTED and not res.rule else None
        if entry is None:
            return None
        other = self.resolve(entry.new)
        if other is None:  # not CUDA-specific: the same name on every target
            return entry, entry.new
        return (entry, other.new) if other.kind == MAP else None

    def _resolve(self, q: str) -> Optional[Resolution]:
        category = self.category(q)
        for prefix in _prefixes(q):
            decision = self.decisions.get(prefix) or next(
                (d for pattern, d in self.patterns if fnmatch.fnmatchcase(prefix, pattern)), None)
            if decision is None:
                continue
            if decision.kind == SAME:
                return None
            if decision.kind == "new":
                return self._with_note(Resolution(MAP, q, category, decision.value + q[len(prefix):],
                                                  self.fmt(decision.note), rule=decision.rule))
            kind = UNSUPPORTED if decision.kind == "unsupported" else KEEP
            return Resolution(kind, q, category, message=self.fmt(decision.value), rule=decision.rule)
        if q != "torch.cuda" and not q.startswith("torch.cuda."):
            return None
        return self._with_note(self._resolve_cuda(q, category))

    def _resolve_cuda(self, q: str, category: str) -> Resolution:
        t, cat = self.target, self.catalog
        rest = q[len("torch.cuda"):]
        parts = rest.lstrip(".").split(".") if rest else []
        if not parts:
            return Resolution(MAP, q, category, t.namespace)
        if parts[0] == "amp" and t.amp == "torch.amp":
            key = "torch.cuda.amp" + ("." + parts[1] if len(parts) > 1 else "")
            spec = cat.amp.get(key)
            if spec is None:
                return Resolution(UNSUPPORTED, q, category,
                                  message=f"{key} has no torch.amp counterpart")
            adapter = spec if "device" in spec else None
            new = spec["new"] + q[len(key):]
            return Resolution(ADAPT if adapter else MAP, q, category, new,
                              self.fmt(spec.get("note", "")), adapter=adapter)
        first = parts[0]
        if t.has(first):
            sub = t.api_modules.get(first)
            if len(parts) > 1 and sub and not t.has(parts[1], first) and parts[1] in cat.cuda_modules.get(first, ()):
                return Resolution(UNSUPPORTED, q, category,
                                  message=f"{t.namespace}.{first} has no {parts[1]} ({t.api_source})")
            return Resolution(MAP, q, category, t.namespace + rest)
        known = first in cat.cuda_names or first in cat.cuda_modules
        if not known:  # a typo, a private name, or an API newer/older than the torch.cuda list
            return Resolution(UNSUPPORTED, q, "unknown-api",
                              message=f"torch.cuda.{first} is not in torch.cuda's API list (torch 2.13.0): "
                                      "private, removed or misspelled; check it by hand")
        tip = cat.tips.get(category, cat.tips.get("other", ""))
        return Resolution(UNSUPPORTED, q, category,
                          message=f"torch.cuda.{first} has no counterpart in {t.namespace} ({t.api_source}): {tip}")

    def _with_note(self, res: Resolution) -> Resolution:
        if not res.rewrites:
            return res
        for prefix in _prefixes(res.qualname):
            note = self.catalog.notes.get(prefix)
            if note:
                message = "; ".join(m for m in (res.message, self.fmt(note)) if m)
                return Resolution(res.kind, res.qualname, res.category, res.new, message, res.adapter, res.rule)
        return res
