"""`torchport doctor`'s checks of the vendor stack on this machine: the toolkit's version against the
vendor package installed (kb/vendor_versions.toml), the driver's version, the device nodes and this
user's access to them, and modules in the current folder that would shadow torch or the vendor package.

Where a toolkit keeps its version and which device nodes a target needs are target data (`[doctor.toolkit]`,
`[doctor.driver]`, `[doctor.devices]` in backends/<target>.toml); which package release goes with which
toolkit is kb data.  Every read goes through the `Probe`, so a test can fake the whole machine.  A version
that cannot be read, or a release the table does not list, is "unverified" (warn), never ok.
"""
from __future__ import annotations

import os
import re
from functools import cache
from typing import Optional

from .probe import FAIL, OK, SKIP, WARN, Check, Probe

# Files a container engine leaves in the container's root: Docker's /.dockerenv, Podman's /run/.containerenv.
CONTAINER_MARKERS = ("/.dockerenv", "/run/.containerenv")
_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
# 2.1.0rc1 and 2.1.0.rc1 are one version (PEP 440 normalisation of the pre/post/dev separators)
_SUFFIX = re.compile(r"(?<=\d)[._-]?(rc|post|dev|a|b|c)[._-]?(?=\d)")


@cache
def compatibility() -> dict:
    """kb/vendor_versions.toml: target -> {package, toolkit, on_mismatch, source, releases}."""
    from ..kb import bundled_data

    data = bundled_data("vendor_versions.toml")
    assert isinstance(data, dict)
    return data


def _norm(version: str) -> str:
    """A version as compared: its local label (+torch2.1.0) dropped, lower case, PEP 440's separators."""
    return _SUFFIX.sub(r".\1", version.split("+")[0].strip().lower())


def release_of(found: str, known) -> Optional[str]:
    """The listed toolkit release a version read from the machine is: itself, or the longest listed one it
    extends by a dotted suffix (8.0.RC2.beta1 -> 8.0.RC2); None when it is none of them."""
    low = found.lower()
    hits = [k for k in known if low == k.lower() or low.startswith(k.lower() + ".")]
    return max(hits, key=len) if hits else None


def _expand(pattern: str, environ: dict) -> Optional[str]:
    """$VAR / ${VAR} from the environment; None when one is unset or empty (the place is not known)."""
    missing = []

    def value(m):
        v = environ.get(m.group(1) or m.group(2), "")
        if not v:
            missing.append(m.group(0))
        return v.rstrip("/") if v else ""

    out = _VAR.sub(value, pattern)
    return None if missing else out


def read_version(probe: Probe, where: dict) -> tuple:
    """(version, where it was read) from a [doctor.toolkit]/[doctor.driver] table, or (None, [places looked])."""
    regex, looked = re.compile(where["pattern"]), []
    for pattern in where.get("files", ()):
        path_glob = _expand(pattern, probe.environ)
        if path_glob is None:
            continue
        looked.append(path_glob)
        for path in probe.glob(path_glob):
            m = regex.search(probe.read(path) or "")
            if m:
                return m.group(1), path
    for argv in where.get("commands", ()):
        program = _expand(argv[0], probe.environ)
        if program is None:
            continue
        looked.append(program)
        found = probe.which(program) if "/" not in program else program if probe.exists(program) else None
        if found is None:
            continue
        m = regex.search(probe.output([found, *argv[1:]]) or "")
        if m:
            return m.group(1), " ".join([found, *argv[1:]])
    return None, looked


def _places(looked: list) -> str:
    shown = ", ".join(looked[:4]) + (f" and {len(looked) - 4} more" if len(looked) > 4 else "")
    return shown or "nowhere (the variables naming its place are unset)"


def _homes(where: dict) -> list:
    """The variables a table's places are under (ASCEND_HOME_PATH, MUSA_HOME...)."""
    names = [m.group(1) or m.group(2) for p in [*where.get("files", ()), *(a[0] for a in where.get("commands", ()))]
             for m in _VAR.finditer(p)]
    return [n for n in dict.fromkeys(names) if n != "HOME"]


def _url(source: str) -> str:
    """A source's address without the words after it."""
    return source.split(" ")[0]


def _installed(probe: Probe, package: str) -> Optional[str]:
    return probe.version(package.replace("_", "-")) or probe.version(package)


# ----------------------------------------------------------------- versions
def check_toolkit(probe: Probe, target) -> list:
    """The toolkit's version read from the machine against the release of the vendor package installed."""
    where = target.doctor.toolkit
    if not where:
        return []
    name, table = where["name"], compatibility().get(target.name)
    row = f"{name} version"
    found, place = read_version(probe, where)
    if found is None:
        homes = " or ".join(_homes(where))
        return [Check(row, WARN, f"unverified: no {name} version found (looked in {_places(place)})",
                      f"install {name}" + (f", or set {homes} to where it is installed"
                                           if homes else ""))]
    detail = f"{name} {found} ({place})"
    if not table:
        return [Check(row, WARN, f"{detail}; unverified: torchport has no table of the {name} each "
                                 f"{target.register or target.name} release needs")]
    package, releases, source = table["package"], table["releases"], table["source"]
    version = _installed(probe, package)
    if version is None:
        return [Check(row, SKIP, f"{detail}; {package} is not installed, so there is nothing to pair it with")]
    rows = [r for r in releases if _norm(r["package"]) == _norm(version)]
    if not rows:
        return [Check(row, WARN, f"{detail}; unverified: {package} {version} is not in torchport's table",
                      f"check which {name} {package} {version} needs: {_url(source)}")]
    torch_version = probe.version("torch")
    same_torch = [r for r in rows if torch_version and _norm(r["torch"]) == _norm(torch_version)]
    needs = list(dict.fromkeys(r["toolkit"] for r in same_torch or rows))
    release = release_of(found, {r["toolkit"] for r in releases})
    cited = ", ".join(dict.fromkeys(_url(r.get("source", source)) for r in same_torch or rows))
    if release is not None and release.lower() in {n.lower() for n in needs}:
        return [Check(row, OK, f"{detail} is the {name} {package} {version} was made for (source: {cited})")]
    wanted = " or ".join(f"{name} {n}" for n in needs)
    if release is None:
        return [Check(row, WARN, f"{detail}; unverified: {name} {found} is not in torchport's table; "
                                 f"{package} {version} is listed for {wanted}",
                      f"install {wanted}, or check {_url(source)} for a {package} release made for {name} {found}")]
    status = FAIL if table.get("on_mismatch", "fail") == "fail" else WARN
    return [Check(row, status, f"{package} {version} needs {wanted}; found {detail} (source: {cited})",
                  f"install {wanted}, or {_alternatives(package, name, release, releases, torch_version)}")]


def _alternatives(package: str, name: str, release: str, releases: list, torch_version: Optional[str]) -> str:
    """The package releases made for the toolkit found (those for the torch installed first)."""
    made = [r for r in releases if r["toolkit"].lower() == release.lower()]
    same = [r for r in made if torch_version and _norm(r["torch"]) == _norm(torch_version)]
    if same:
        return " or ".join(f"{package} {r['package']}" for r in same) + f" (made for {name} {release})"
    listed = ", ".join(f"{package} {r['package']} with torch {r['torch']}" for r in made[:4])
    return f"a {package} release made for {name} {release}: {listed}"


def check_driver(probe: Probe, target) -> list:
    """The driver's version, read where the target file says (reported; its pairing is not in the table)."""
    where = target.doctor.driver
    if not where:
        return []
    found, place = read_version(probe, where)
    row = f"{where['name']} version"
    if found is None:
        first = where.get("files", [""])[0] if where.get("files") else ""
        return [Check(row, WARN, f"unverified: no {where['name']} version found (looked in {_places(place)})",
                      f"install the {where['name']}" + (f"; in a container, mount {first} from the host "
                                                         f"(-v {first}:{first})" if first else ""))]
    return [Check(row, OK, f"{where['name']} {found} ({place}); its pairing with the toolkit is not checked")]


# ----------------------------------------------------------------- device nodes
def in_container(probe: Probe) -> bool:
    return any(probe.exists(m) for m in CONTAINER_MARKERS) or bool(probe.environ.get("container"))


def check_devices(probe: Probe, target) -> list:
    """Every device node the target needs exists and this user may read and write it."""
    nodes = target.doctor.devices
    if not nodes:
        return []
    if probe.platform != "linux":
        return [Check("device nodes", SKIP, f"{target.title} device nodes are checked on Linux only")]
    found = {pattern: probe.glob(pattern) for pattern in nodes["nodes"]}
    missing = [p for p, paths in found.items() if not paths]
    if missing:
        return [_missing_nodes(probe, target, missing)]
    paths = [p for paths in found.values() for p in paths]
    denied = [p for p in paths if not probe.access(p)]
    if denied:
        groups = sorted({g for g in (probe.group(p) for p in denied) if g})
        named = " or ".join(groups) or "the group owning them"
        fix = (f"add this user to {named}: sudo usermod -aG {groups[0] if groups else '<group>'} $USER, then log in "
               "again" + (f" (in a container: docker run --group-add {groups[0] if groups else '<group>'}, "
                          "or run as the user owning them)" if in_container(probe) else ""))
        return [Check("device nodes", FAIL, f"no read/write access for this user to {', '.join(denied[:4])}"
                                            + (f" (group {', '.join(groups)})" if groups else ""), fix)]
    return [Check("device nodes", OK, f"{len(paths)} readable and writable: {', '.join(paths[:4])}"
                                      + (" ..." if len(paths) > 4 else ""))]


def _missing_nodes(probe: Probe, target, missing: list) -> Check:
    nodes, env = target.doctor.devices, probe.environ
    detail = f"no {', '.join(missing)}"
    var, runtime = nodes.get("container_env", ""), nodes.get("container_runtime", "")
    if in_container(probe):
        detail += " in this container"
        fix = f"start the container with {nodes['docker']}"
        if var and runtime:
            fix += f", or with {runtime} and -e {var}=<device ids>"
        if var and env.get(var):
            detail += f" although {var}={env[var]} is set (was the container started with {runtime or 'its runtime'}?)"
    else:
        fix = f"install and load the {target.title} driver (it creates these nodes)" + \
              (f"; `{target.smi}` should then list the devices" if target.smi else "")
    return Check("device nodes", FAIL, detail, fix)


# ----------------------------------------------------------------- shadowing modules
def check_shadowing(probe: Probe, target) -> list:
    """A torch (or vendor package) module in the current folder or on PYTHONPATH that `import` would load
    instead of the installed one: Python puts the script's folder (or the current one) first on sys.path."""
    extra = probe.environ.get("PYTHONPATH", "")
    folders = [probe.cwd] + ([p or probe.cwd for p in extra.split(os.pathsep)] if extra else [])
    names = ["torch"] + ([target.register] if target.register else [])
    hits = []
    for folder in dict.fromkeys(f for f in folders if f):
        for name in names:
            home = probe.dist_dir(name.replace("_", "-")) or probe.dist_dir(name)
            if home and probe.realpath(folder) == probe.realpath(home):
                continue   # the installed package itself (run from site-packages, or an in-place build)
            for path in (os.path.join(folder, name, "__init__.py"), os.path.join(folder, name + ".py")):
                if probe.exists(path):
                    hits.append((name, path))
    if hits:
        shown = "; ".join(f"{path} would be imported as {name}" for name, path in hits)
        return [Check("shadowing modules", FAIL, shown + " instead of the installed package",
                      "rename or move it (and delete its __pycache__), or run Python from another folder")]
    where = "the current folder" + (" or PYTHONPATH" if probe.environ.get("PYTHONPATH") else "")
    return [Check("shadowing modules", OK, f"no {' or '.join(names)} module in {where} ({probe.cwd or '?'})")]
