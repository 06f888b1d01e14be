"""The layers of torchport, read from the import graph: every import, at module level or inside a function, goes
downward (or stays in its package).  `python tests/test_layers.py` prints the map, the package edges and any
violation.

    entry         api (the Python API) < the torchport package; auto; cli < __main__; the simulator's stand-in vendor
                  packages (sim/packages: what a simulated program imports as torch_npu, they may use the run-time patches)
    presentation  report writers (md/csv/json/html), SARIF, the generated rule docs
    commands      convert, analyze, port-ext, check: run an engine over a tree, return a result; < migrate (composes them)
    engines       converter, porting < analyze;  sim < runtime < debug, profile;  doctor
    targets       backends < kb (target files, API lists and ApiMap, op lists, known errors)
    core          findings, codes, files and writes, text, words, the parallel runner
"""
from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src" / "torchport"

# (layer, [(module prefix, rank within the layer)]), bottom first.  Within a layer, an import must go to a lower
# rank or stay inside its own package; two packages of one rank are independent.
LAYERS = [
    ("core", [("torchport.core", 0)]),
    ("targets", [("torchport.backends", 0), ("torchport.kb", 1)]),
    ("engines", [("torchport.converter", 0), ("torchport.porting", 0), ("torchport.analyze", 1),
                 ("torchport.sim", 0), ("torchport.runtime", 1), ("torchport.debug", 2), ("torchport.profile", 2),
                 ("torchport.doctor", 0), ("torchport.ckpt", 0),
                 ("torchport.export", 1)]),
    ("commands", [("torchport.converter.api", 0), ("torchport.porting.api", 0), ("torchport.analyze.api", 0),
                  ("torchport.check", 0), ("torchport.migrate", 1)]),
    ("presentation", [("torchport.report", 0), ("torchport.check.sarif", 0), ("torchport.converter.rules_doc", 0)]),
    ("entry", [("torchport.api", 0), ("torchport", 1), ("torchport.auto", 0), ("torchport.cli", 2), ("torchport.__main__", 3),
               ("torchport.sim.packages", 0)]),
]


def modules() -> dict:
    """module name -> path, for every module of the package."""
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(mods: dict) -> dict:
    """module -> {imported torchport modules}, from every import statement (lazy ones included)."""
    edges = defaultdict(set)
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                # `from pkg import sub` imports the submodule; `from pkg import name`, the package
                wanted = [f"{module}.{a.name}" if f"{module}.{a.name}" in mods else module for a in node.names]
            elif isinstance(node, ast.Import):
                wanted = [a.name for a in node.names]
            else:
                continue
            for w in wanted:
                while w and w not in mods:
                    w = w.rsplit(".", 1)[0] if "." in w else ""
                if w and w != name and w.startswith("torchport"):
                    edges[name].add(w)
    return edges


def place(module: str) -> tuple:
    """(layer index, rank, owning prefix) of a module: its longest matching prefix."""
    best = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix, rank in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[2])):
                best = (index, rank, prefix)
    return best


def violations(edges: dict) -> list:
    out = []
    for a, targets in edges.items():
        pa = place(a)
        for b in targets:
            pb = place(b)
            if pa[2] == pb[2]:
                continue  # inside one package (or one module group)
            upward = pb[0] > pa[0] or (pb[0] == pa[0] and pb[1] >= pa[1])
            if upward:
                out.append(f"{a} ({LAYERS[pa[0]][0]}) imports {b} ({LAYERS[pb[0]][0]})")
    return sorted(out)


def test_every_module_has_a_layer():
    assert [m for m in modules() if place(m) is None] == []


def test_imports_only_go_down():
    assert violations(imports(modules())) == []


def test_the_core_and_the_targets_import_no_engine():
    edges = imports(modules())
    low = [m for m in edges if place(m)[0] <= 1]
    assert low and all(place(b)[0] <= 1 for m in low for b in edges[m])


def main() -> None:
    mods = modules()
    edges = imports(mods)
    for layer, prefixes in reversed(LAYERS):
        print(f"{layer:13} " + ", ".join(f"{p.removeprefix('torchport.')}" + (f" (rank {r})" if r else "")
                                         for p, r in prefixes))
    print()
    packages = defaultdict(set)
    for a, targets in edges.items():
        for b in targets:
            if place(a)[2] != place(b)[2]:
                packages[place(a)[2]].add(place(b)[2])
    for a in sorted(packages, key=lambda p: (-place(p)[0], p)):
        print(f"{a.removeprefix('torchport.'):22} -> " + ", ".join(sorted(b.removeprefix("torchport.") for b in packages[a])))
    found = violations(edges)
    print(f"\n{len(mods)} modules, {sum(map(len, edges.values()))} imports, {len(found)} upward")
    for v in found:
        print("  " + v)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
