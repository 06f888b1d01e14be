"""Download pinned sdists from PyPI into .corpus-cache/ (the only network step), verify and unpack them.
One process at a time per cache (a lock file), so runs side by side share the downloads."""
from __future__ import annotations

import fcntl
import hashlib
import json
import tarfile
import urllib.request
import zipfile
from pathlib import Path

CACHE = Path(__file__).resolve().parents[1] / ".corpus-cache"


def sdist(name: str, version: str) -> Path:
    """The unpacked source tree of name==version (downloaded once, sha256-checked against PyPI)."""
    CACHE.mkdir(exist_ok=True)
    tree = CACHE / f"{name}-{version}"
    if (tree / ".complete").exists():
        return _root(tree)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (tree / ".complete").exists():   # another process may have unpacked it while this one waited
            _download(name, version, tree)
    return _root(tree)


def _download(name: str, version: str, tree: Path) -> None:
    req = urllib.request.Request(f"https://pypi.org/simple/{name}/",
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        index = json.load(r)  # PEP 691 JSON simple index
    stems = {f"{name}-{version}", f"{name.replace('-', '_').lower()}-{version}"}
    files = [f for f in index["files"] if any(f["filename"] in (s + ".tar.gz", s + ".zip") for s in stems)]
    if not files:
        raise SystemExit(f"{name}=={version} has no sdist on PyPI")
    info = files[0]
    sha = info["hashes"]["sha256"]
    archive = CACHE / info["filename"]
    if not archive.exists() or hashlib.sha256(archive.read_bytes()).hexdigest() != sha:
        with urllib.request.urlopen(info["url"], timeout=300) as r:
            archive.write_bytes(r.read())
    if hashlib.sha256(archive.read_bytes()).hexdigest() != sha:
        raise SystemExit(f"sha256 mismatch for {archive.name}")
    tree.mkdir(exist_ok=True)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(tree)
    else:
        with tarfile.open(archive) as tf:
            if hasattr(tarfile, "data_filter"):
                tf.extractall(tree, filter="data")
            else:  # pragma: no cover - old Pythons
                tf.extractall(tree)
    (tree / ".complete").write_text(info["url"] + "\n")


def _root(tree: Path) -> Path:
    entries = [p for p in tree.iterdir() if p.name != ".complete"]
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else tree


def python_files(root: Path) -> list:
    return sorted(p for p in root.rglob("*.py") if p.is_file() and not p.is_symlink())
