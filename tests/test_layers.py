"""The layers of torchport, read from the import graph: every import, at module level or inside a function, goes
downward (or stays in its package).  `python tests/test_layers.py` prints the map, the package edges and any
violation.

    entry         api (the Python API) < the torchport package; auto; cli < __main__; the simulator's stand-in vendor
                  packages (sim/packages: what a simulated program imports as torch_npu, they may use the run-time patches)
    presentation  report/: the report writers (md/csv/json/html), SARIF, the generated rule docs
    commands      commands/: convert, analyze, port (port-ext), check: run an engine over a tree and return a
                  result; < migrate (composes them)
    engines       converter, porting < analyze;  sim < runtime < debug, profile;  doctor
    targets       backends < kb (target files, API lists and ApiMap, op lists, known errors)
    core          findings, codes, files and writes, text, words, the parallel runner

Layers are folders: every module lives in the folder of its layer (a top-level package of torchport is in one
layer, whole), so where a file sits says what it may import.  The one exception is sim/packages, the stand-in
vendor packages: a simulated program imports them as torch_npu (never as torchport.sim.packages), and they
belong to the simulator they stand in for.

No cycles, at any scale: no module imports itself back through others, and no two packages import each other.
Every import counts (at module level, inside a function, under TYPE_CHECKING), inside a package too.  The
edges are the imports a module writes: importing `pkg.x` runs `pkg/__init__.py` first, but that implied edge
is not counted, or every package whose __init__ imports its submodules would be a cycle.  So an __init__'s
`from . import x` is fine as long as x imports nothing of the package's __init__ back (`from . import name`,
`from torchport.pkg import name`): then the two are a cycle, and what x needs belongs in a lower module both
import.  A package is torchport.X with its sub-packages; the entry layer's groups (the torchport package, api, auto, cli, __main__, and sim.packages: the stand-in
vendor packages, which use the run-time patches) are packages of their own.

Imports by name are edges too: `importlib.import_module`, `__import__` and `runpy.run_module` with a literal,
or with an f-string or concatenation whose constant part (`__name__` and `__package__` read as theirs) names
torchport modules: `f"{__name__}.{module}"` in torchport.cli is an edge to every module under torchport.cli.
A name read at run time (from a target file, from the user) is listed in DYNAMIC, with what it may import.
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
    ("commands", [("torchport.commands", 0), ("torchport.commands.convert", 0), ("torchport.commands.port", 0), ("torchport.commands.analyze", 0),
                  ("torchport.commands.check", 0), ("torchport.commands.migrate", 1)]),
    ("presentation", [("torchport.report", 0)]),
    ("entry", [("torchport.api", 0), ("torchport", 1), ("torchport.auto", 0), ("torchport.cli", 2), ("torchport.__main__", 3),
               ("torchport.sim.packages", 0)]),
]

# Modules outside their folder's layer (see the docstring)
FOLDER_EXCEPTIONS = ("torchport.sim.packages",)

# Imports by a name read at run time: (module, the name's source) -> the torchport modules it may import.
DYNAMIC = {
    ("torchport.runtime", "t.register"): set(),                    # the vendor package of a target file (torch_npu)
    ("torchport.runtime.patches", "rule['module']"): set(),        # the vendor module kb/sim's chip rules name
    ("torchport.sim.comm", "rule['module']"): set(),               # ... only when it is torch._C
    ("torchport.sim.collectives", "path"): set(),                  # a torch module kb/sim/dist.toml names (torch.distributed)
    ("torchport.runtime.session", "'.'.join(parts[:i])"): set(),   # an API's module, from kb's API lists (torch.*)
    ("torchport.runtime.launch", "module"): set(),                 # `run -m module`: the user's program
    ("torchport.ckpt", "module"): set(),                           # --allow pkg.mod.Class: what the user trusts
    ("torchport.ckpt", "module_name"): set(),                      # --model pkg.mod:factory: the user's model
}
# Cycles that are known and being removed elsewhere (each one: the modules of one strongly connected component).
KNOWN_CYCLES: list = []


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
    """module -> {imported torchport modules}, from every import statement (lazy ones included) and import by name."""
    return read_imports(mods)[0]


def read_imports(mods: dict) -> tuple:
    """(module -> {imported torchport modules}, [imports by a name this test cannot read and DYNAMIC does not list],
    {the DYNAMIC entries found})."""
    edges, unread, listed = defaultdict(set), [], set()
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
            elif isinstance(node, ast.Call) and (arg := imported_name(node)) is not None:
                text, whole = constant_text(arg, name, package)
                if whole and text.startswith(".") and not text.startswith(".."):
                    base, known = constant_text(_argument(node, 1, "package"), name, package)
                    text, whole = (base + text, True) if known and base else (text, False)
                if whole and not text.startswith("."):
                    wanted = [text]
                elif text.startswith("torchport"):
                    wanted = sorted(m for m in mods if m.startswith(text))  # f"{__name__}.{x}": all it may name
                elif "torchport".startswith(text):
                    key = (name, ast.unparse(arg))
                    if key in DYNAMIC:
                        listed.add(key)
                        wanted = sorted(DYNAMIC[key])
                    else:
                        unread.append(f"{name} (line {node.lineno}) imports the module named by `{key[1]}`: write the "
                                      "name as a literal (or an f-string whose constant prefix names the torchport "
                                      "modules it may be), or list it in DYNAMIC in tests/test_layers.py with the "
                                      "torchport modules it may import")
                        continue
                else:
                    continue  # named by its constant prefix: not torchport
            else:
                continue
            for w in wanted:
                while w and w not in mods:
                    w = w.rsplit(".", 1)[0] if "." in w else ""
                if w and w != name and w.startswith("torchport"):
                    edges[name].add(w)
    return edges, unread, listed


def imported_name(call: ast.Call):
    """The argument naming the module of an import by name (importlib.import_module, __import__,
    runpy.run_module), or None for any other call."""
    func = call.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if called not in ("import_module", "__import__", "run_module"):
        return None
    if called == "__import__" and (level := _argument(call, 4, "level")) is not None \
            and not (isinstance(level, ast.Constant) and level.value == 0):
        return ast.Constant("")  # relative to the caller's package: not read here
    return _argument(call, 0, "name" if called != "run_module" else "mod_name")


def _argument(call: ast.Call, index: int, keyword: str):
    if len(call.args) > index and not isinstance(call.args[index], ast.Starred):
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def constant_text(node, name: str, package: str) -> tuple:
    """(the constant text a string expression starts with, whether that is all of it); `__name__` and
    `__package__` are the module's."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, True
    if isinstance(node, ast.Name) and node.id in ("__name__", "__package__"):
        return (name if node.id == "__name__" else package), True
    if isinstance(node, ast.JoinedStr):
        text = ""
        for part in node.values:
            if isinstance(part, ast.FormattedValue) and (part.conversion != -1 or part.format_spec is not None):
                return text, False
            more, whole = constant_text(part.value if isinstance(part, ast.FormattedValue) else part, name, package)
            text += more
            if not whole:
                return text, False
        return text, True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, whole = constant_text(node.left, name, package)
        if not whole:
            return left, False
        right, whole = constant_text(node.right, name, package)
        return left + right, whole
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) \
            and isinstance(node.left.value, str):
        return node.left.value.split("%")[0], False
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
        return node.func.value.value.split("{")[0], False
    return "", False


def cycles(edges: dict) -> list:
    """The strongly connected components of more than one node, each sorted (Tarjan's algorithm)."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    out = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return sorted(out)


def described(component: list, edges: dict) -> str:
    """A cycle as its imports: `a -> b, c; b -> a`."""
    return "; ".join(f"{a} -> {', '.join(sorted(b for b in edges.get(a, ()) if b in component))}" for a in component
                     if any(b in component for b in edges.get(a, ())))


def package_of(module: str) -> str:
    """torchport.X, or the group of the layer map for the entry layer's modules (cli, api, sim.packages)."""
    layer, _, prefix = place(module)
    return prefix if LAYERS[layer][0] == "entry" else ".".join(module.split(".")[:2])


def package_edges(edges: dict) -> dict:
    out = defaultdict(set)
    for a, targets in edges.items():
        for b in targets:
            if package_of(a) != package_of(b):
                out[package_of(a)].add(package_of(b))
    return out


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


def test_layers_are_folders():
    """A module's layer is its top-level folder's (torchport.X), save the stand-in vendor packages."""
    inside = [f"{m} is in the {LAYERS[place(m)[0]][0]} layer, its folder {top} in the {LAYERS[place(top)[0]][0]}"
              for m in modules() if (top := ".".join(m.split(".")[:2])) != m and place(top) is not None
              and place(m)[0] != place(top)[0] and not m.startswith(FOLDER_EXCEPTIONS)]
    assert inside == [], "move the module to its layer's folder (commands/, report/, ...):\n" + "\n".join(inside)


def test_imports_only_go_down():
    assert violations(imports(modules())) == []


def test_no_module_imports_itself_back():
    """Module-level and function-level imports, inside packages too (see the module's docstring for __init__)."""
    edges = imports(modules())
    found = [c for c in cycles(edges) if c not in KNOWN_CYCLES]
    assert not found, "import cycles (move what both need to a lower module, or pass it in):\n" + \
        "\n".join(described(c, edges) for c in found)


def test_known_cycles_are_still_there():
    """KNOWN_CYCLES lists only cycles that exist: one removed comes off the list."""
    assert [c for c in KNOWN_CYCLES if c not in cycles(imports(modules()))] == []


def test_no_two_packages_import_each_other():
    edges = package_edges(imports(modules()))
    found = cycles(edges)
    assert not found, "packages that import each other:\n" + "\n".join(described(c, edges) for c in found)


def test_imports_by_name_are_read():
    """importlib.import_module / __import__ / runpy.run_module: a literal name or a constant prefix, else DYNAMIC."""
    _, unread, listed = read_imports(modules())
    assert not unread, "\n".join(unread)
    assert sorted(set(DYNAMIC) - listed) == [], "DYNAMIC lists imports that are gone"


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
    loops = cycles(edges)
    package_loops = cycles(package_edges(edges))
    unread = read_imports(mods)[1]
    print(f"\n{len(mods)} modules, {sum(map(len, edges.values()))} imports, {len(found)} upward, "
          f"{len(loops)} cycles ({len(KNOWN_CYCLES)} known), {len(package_loops)} between packages, "
          f"{len(unread)} imports by a name not read")
    for v in found:
        print("  " + v)
    for c in loops:
        print(("  known cycle: " if c in KNOWN_CYCLES else "  cycle: ") + described(c, edges))
    for c in package_loops:
        print("  packages: " + described(c, package_edges(edges)))
    for u in unread:
        print("  " + u)
    sys.exit(1 if found or [c for c in loops if c not in KNOWN_CYCLES] or package_loops or unread else 0)


if __name__ == "__main__":
    main()
