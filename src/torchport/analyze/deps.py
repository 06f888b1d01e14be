"""Third-party dependencies: requirement files, setup.py/setup.cfg/pyproject.toml, CUDA builds of torch.

Declared dependencies are matched against kb/packages.toml (CUDA-only and
CUDA-first packages); imports are matched by the Python scan.  A pinned CUDA
build of torch (`torch==2.1.0+cu118`, `--index-url .../whl/cu121`) is reported
with the target's own install advice.
"""
from __future__ import annotations

import ast
import configparser
import re

from ..core import codes
from ..core.finding import ADVICE, Finding
from ..core.tomlfile import tomllib

_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_CUDA_TORCH = re.compile(r"\+cu\d+|download\.pytorch\.org/whl/cu\d+|/whl/nightly/cu\d+")
_SEPARATORS = re.compile(r"[-_.]+")


def normalize(name: str) -> str:
    """PEP 503 normalisation: 'Nvidia_ML.py' -> 'nvidia-ml-py'."""
    return _SEPARATORS.sub("-", name).lower()


def is_dependency_file(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1].lower()
    return (name.endswith(".txt") and "requirement" in rel.lower()) or name in ("setup.py", "setup.cfg",
                                                                                   "pyproject.toml")


def declared(rel: str, text: str) -> list:
    """[(line, requirement text)] declared by one dependency file."""
    name = rel.rsplit("/", 1)[-1].lower()
    if name == "setup.py":
        return _from_setup_py(text)
    if name == "setup.cfg":
        return _from_setup_cfg(text)
    if name == "pyproject.toml":
        return _from_pyproject(text)
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            out.append((n, line))
    return out


def _from_setup_py(text: str) -> list:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    assigned = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned[node.targets[0].id] = node.value
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.keyword) or node.arg not in ("install_requires", "extras_require",
                                                                  "setup_requires"):
            continue
        value = assigned.get(node.value.id, node.value) if isinstance(node.value, ast.Name) else node.value
        for const in ast.walk(value):
            if isinstance(const, ast.Constant) and isinstance(const.value, str) and _REQ_NAME.match(const.value):
                out.append((const.lineno, const.value))
    return out


def _from_setup_cfg(text: str) -> list:
    parser = configparser.ConfigParser()
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    wanted = [("options", "install_requires"), ("options", "setup_requires")]
    if parser.has_section("options.extras_require"):
        wanted += [("options.extras_require", k) for k in parser.options("options.extras_require")]
    out = []
    lines = text.splitlines()
    for section, key in wanted:
        if parser.has_option(section, key):
            for req in parser.get(section, key).splitlines():
                req = req.strip()
                if req:
                    out.append((_find_line(lines, req), req))
    return out


def _from_pyproject(text: str) -> list:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []
    reqs = list(data.get("project", {}).get("dependencies", []))
    for group in data.get("project", {}).get("optional-dependencies", {}).values():
        reqs += group
    poetry = data.get("tool", {}).get("poetry", {})
    for table in (poetry.get("dependencies", {}), *[g.get("dependencies", {}) for g in poetry.get("group", {}).values()]):
        reqs += [f"{k}{v if isinstance(v, str) and v[:1] in '<>=!~' else ''}" for k, v in table.items() if k != "python"]
    lines = text.splitlines()
    return [(_find_line(lines, r), r) for r in reqs if isinstance(r, str)]


def _find_line(lines: list, text: str) -> int:
    m = _REQ_NAME.match(text)
    key = m.group(1) if m else text
    for n, line in enumerate(lines, 1):
        if key in line:
            return n
    return 1


def dependency_findings(rel: str, text: str, packages) -> list:
    """Findings for one dependency file: KB packages it declares, CUDA builds of torch it pins."""
    out = []
    for line, req in declared(rel, text):
        if _CUDA_TORCH.search(req) and ("torch" in req or "pytorch.org" in req):
            out.append(Finding(rel, line, line, codes.TP910.id, "third-party", ADVICE, old=req,
                               message="a CUDA build of PyTorch: install the target's build instead (see the target advice)"))
            continue
        m = _REQ_NAME.match(req)
        if not m or req.startswith("-"):
            continue
        pkg = packages.by_distribution(normalize(m.group(1)))
        if pkg is not None:
            out.append(Finding(rel, line, line, codes.TP909.id, "third-party", ADVICE, old=req,
                               message=f"{pkg.name}: {pkg.kind}; {pkg.what}"))
    return out
