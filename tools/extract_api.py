"""Regenerate the per-target Python API lists in src/torchport/kb/api/.

Each output file records which names a torch device namespace exposes, and
where that list came from, so `convert` can tell which `torch.cuda.*` APIs a
target has.  Three sources:

  torch  NS...            an installed PyTorch (run inside the venv that has
                          torch==2.13.0): torch.cuda, torch.xpu, torch.mps,
                          torch.cpu, torch.accelerator
  wheel  NAME WHEEL PKG   a vendor wheel read with zipfile + ast, never
                          imported (torch_npu from PyPI)
  git    NAME GITDIR PKG  a vendor source tree in a bare git directory, read
                          with `git show` + ast (torch_musa, torch_mlu)

Names come from `__all__` of the namespace module and of its public
submodules; nothing is imported for the wheel and git sources.
"""
from __future__ import annotations

import argparse
import ast
import datetime
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "torchport" / "kb" / "api"


def write(name: str, record: dict) -> None:
    record["extracted"] = datetime.date.today().isoformat()
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"{path}: {len(record['names'])} names, {len(record['modules'])} submodules")


# ---------------------------------------------------------------- torch
def from_installed_torch(namespaces: list[str]) -> None:
    import importlib
    import types

    import torch

    for ns in namespaces:
        mod = importlib.import_module(ns)
        names = sorted(set(getattr(mod, "__all__", ())))
        modules = {}
        for attr in dir(mod):
            sub = getattr(mod, attr, None)
            if attr.startswith("_") or not isinstance(sub, types.ModuleType):
                continue
            if not sub.__name__.startswith(ns + "."):
                continue
            exported = getattr(sub, "__all__", None)
            if exported is None:
                exported = [n for n in dir(sub) if not n.startswith("_")]
            modules[attr] = sorted(set(exported))
        write(ns.split(".", 1)[1], {
            "namespace": ns,
            "package": "torch",
            "version": torch.__version__,
            "source": f"PyPI torch=={torch.__version__.split('+')[0]} (CPU build), imported",
            "method": f"sorted({ns}.__all__) and __all__ (or public dir) of each public submodule",
            "names": names,
            "modules": modules,
        })


# ---------------------------------------------------------------- static
class Package:
    """A package read without importing it: `read(path)` gives a file's text."""

    def __init__(self, read, listing: list[str]):
        self.read = read
        self.files = set(listing)
        self._cache: dict[str, tuple[set, dict]] = {}

    def module_file(self, dotted: str):
        base = dotted.replace(".", "/")
        for cand in (base + ".py", base + "/__init__.py"):
            if cand in self.files:
                return cand
        return None

    @staticmethod
    def dotted(path: str) -> str:
        path = path[:-3]
        if path.endswith("/__init__"):
            path = path[: -len("/__init__")]
        return path.replace("/", ".")

    def absolute(self, path: str, level: int, module) -> str:
        if not level:
            return module or ""
        pkg = self.dotted(path)
        if not path.endswith("__init__.py"):
            pkg = pkg.rsplit(".", 1)[0]
        parts = pkg.split(".")
        if level > 1:
            parts = parts[: len(parts) - (level - 1)]
        return ".".join(parts + ([module] if module else []))

    def public(self, path: str) -> tuple[set, dict]:
        """(names, submodules) a module exposes: its literal __all__ plus its public
        top-level bindings; star imports from inside the package are followed;
        names bound to modules of the package also appear as submodules."""
        if path in self._cache:
            return self._cache[path]
        self._cache[path] = (set(), {})  # cycle guard
        names: set = set()
        modules: dict = {}
        try:
            tree = ast.parse(self.read(path))
        except SyntaxError:
            return self._cache[path]
        for node in self._top_level(tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and t.id == "__all__":
                        try:
                            names.update(v for v in ast.literal_eval(node.value) if isinstance(v, str))
                        except ValueError:
                            pass
                    elif isinstance(t, ast.Name):
                        names.add(t.id)
            elif isinstance(node, ast.ImportFrom):
                source = self.absolute(path, node.level, node.module)
                for alias in node.names:
                    if alias.name == "*":
                        file = self.module_file(source)
                        if file:
                            sub_names, sub_modules = self.public(file)
                            names.update(sub_names)
                            modules.update(sub_modules)
                        continue
                    bound = alias.asname or alias.name
                    names.add(bound)
                    file = self.module_file(f"{source}.{alias.name}")
                    if file:
                        modules[bound] = sorted(self.public(file)[0])
        names = {n for n in names if not n.startswith("_")}
        modules = {k: v for k, v in modules.items() if not k.startswith("_")}
        self._cache[path] = (names, modules)
        return names, modules

    @staticmethod
    def _top_level(body):
        for node in body:
            yield node
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list) and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    yield from Package._top_level(inner)


def collect(read, listing: list[str], pkg_dir: str) -> tuple[list[str], dict]:
    """Names of `<pkg_dir>/__init__.py` and of the submodules it binds or contains."""
    pkg = Package(read, listing)
    init = f"{pkg_dir}/__init__.py"
    names, modules = pkg.public(init)
    prefix = pkg_dir + "/"
    for path in listing:  # direct child modules are attributes once imported
        if not path.startswith(prefix) or not path.endswith(".py"):
            continue
        parts = path[len(prefix):-3].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if len(parts) == 1 and parts[0] and not parts[0].startswith("_") and parts[0] not in modules:
            modules[parts[0]] = sorted(pkg.public(path)[0])
    return sorted(names), {k: sorted(v) for k, v in sorted(modules.items())}


STATIC_METHOD = ("ast, nothing imported: literal __all__ plus public top-level bindings of the "
                 "package __init__ (star imports inside the package followed), and the same for "
                 "each submodule it binds or contains")


REFERENCED_METHOD = "names the package's own Python code reads as <namespace>.NAME (so they exist at run time)"


def referenced_names(read, listing: list, namespace: str, pkg_dir: str) -> list:
    spellings = {namespace, pkg_dir.replace("/", ".")}
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(sp) for sp in spellings) + r")\.([A-Za-z]\w*)\b")
    names = set()
    for path in listing:
        if path.endswith(".py"):
            try:
                names.update(pattern.findall(read(path)))
            except UnicodeDecodeError:
                continue
    return sorted(names)


def from_wheel(name, wheel, pkg_dir, namespace, version, source, referenced=False) -> None:
    with zipfile.ZipFile(wheel) as zf:
        listing = zf.namelist()
        read = lambda p: zf.read(p).decode("utf-8")  # noqa: E731
        names, modules = collect(read, listing, pkg_dir)
        record = {"namespace": namespace, "package": pkg_dir.split("/")[0], "version": version,
                  "source": source, "file": f"{pkg_dir}/__init__.py", "method": STATIC_METHOD,
                  "names": names, "modules": modules}
        if referenced:
            found = [n for n in referenced_names(read, listing, namespace, pkg_dir) if n not in modules]
            record["names"] = sorted(set(names) | set(found))
            record["referenced_names"] = found
            record["referenced_method"] = REFERENCED_METHOD
    write(name, record)


RUNTIME_METHOD = ("names the package adds to itself at run time, found in its sources: "
                  "setattr(<package>, \"NAME\", ...) in Python, set_module_attr(\"NAME\", ...) in C++, and the "
                  "legacy <Type>Tensor classes of a C++ `scalar_types = {...}` list")


def runtime_names(read, listing: list, package: str) -> list:
    """Names created while the package initialises, which static reading of __init__ cannot see."""
    names = set()
    setattr_re = re.compile(r"setattr\(\s*" + re.escape(package) + r"\s*,\s*[\"'](\w+)[\"']")
    for path in listing:
        if path.endswith(".py") and "/testing/" not in path:
            names.update(setattr_re.findall(read(path)))
        elif path.endswith((".cpp", ".cc", ".h")):
            text = read(path)
            names.update(re.findall(r'set_module_attr\(\s*"(\w+)"', text))
            block = re.search(r"scalar_types\s*=\s*\{([^}]*)\}", text)
            if block and '"Tensor"' in text:
                names.update(f"{t}Tensor" for t in re.findall(r"ScalarType::(\w+)", block.group(1)))
    return sorted(n for n in names if not n.startswith("_"))


def from_git(name, gitdir, pkg_dir, namespace, version, source, rev, runtime=False) -> None:
    def git(*args: str) -> str:
        return subprocess.run(["git", "--git-dir", gitdir, *args], check=True,
                              capture_output=True, text=True).stdout

    commit = git("rev-parse", rev).strip()
    package = pkg_dir.split("/")[0]
    listing = git("ls-tree", "-r", "--name-only", commit, package).split()
    read = lambda p: git("show", f"{commit}:{p}")  # noqa: E731
    names, modules = collect(read, listing, pkg_dir)
    record = {"namespace": namespace, "package": package, "version": version,
              "source": f"{source}@{commit}", "file": f"{pkg_dir}/__init__.py", "method": STATIC_METHOD,
              "names": names, "modules": modules}
    if runtime:
        found = runtime_names(read, listing, package)
        record["names"] = sorted(set(names) | set(found))
        record["runtime_names"] = found
        record["runtime_method"] = RUNTIME_METHOD
    write(name, record)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("torch")
    t.add_argument("namespaces", nargs="*", default=[
        "torch.cuda", "torch.xpu", "torch.mps", "torch.cpu", "torch.accelerator"])
    for kind in ("wheel", "git"):
        p = sub.add_parser(kind)
        p.add_argument("name")
        p.add_argument("path", help="wheel file" if kind == "wheel" else "bare git directory")
        p.add_argument("pkg_dir", help="package directory inside it, e.g. torch_npu/npu")
        p.add_argument("--namespace", required=True)
        p.add_argument("--version", required=True)
        p.add_argument("--source", required=True, help="where the wheel/repo came from")
        if kind == "wheel":
            p.add_argument("--referenced", action="store_true",
                           help="also names the package's own code reads as <namespace>.NAME")
        if kind == "git":
            p.add_argument("--rev", default="HEAD")
            p.add_argument("--runtime", action="store_true", help="also find names set at run time (setattr, C++)")
    args = ap.parse_args(argv)
    if args.cmd == "torch":
        from_installed_torch(args.namespaces)
    else:
        common = (args.name, args.path, args.pkg_dir, args.namespace, args.version, args.source)
        if args.cmd == "wheel":
            from_wheel(*common, args.referenced)
        else:
            from_git(*common, args.rev, args.runtime)


if __name__ == "__main__":
    sys.exit(main())
