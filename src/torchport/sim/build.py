"""Build and load the simulated device's C++ extension (csrc/simdevice.cpp), cached per torch version.

The first use compiles it with torch.utils.cpp_extension (about a minute on 2 cores); later uses
import the cached library directly.  The cache folder's name holds the torch version, the Python
version and a hash of the source, so a different torch or a changed source builds anew; a
`build.json` beside the library records what it was built for and the library's sha256, and is checked
before loading: a folder or library another user owns or others can write (the build folder, `sim/`, or a
cache root without the sticky bit) is refused; a library whose hash differs (planted, truncated) or a
record that does not parse is built again.  The record guards against damage and other users, not against
this user: whoever can write this user's files can also change torchport itself.
Cache root: core.cache.cache_root().
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.machinery
import importlib.util
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

from ..core.cache import cache_root
from ..core.errors import UsageError

SOURCE = Path(__file__).resolve().parent / "csrc" / "simdevice.cpp"
# -fmacro-prefix-map: torch's warnings name the file they come from (__FILE__); it is simdevice.cpp, not the path of
# the checkout that built the cached library (a temporary clone's /tmp/... showed in every user's warnings)
FLAGS = ("-O2", f"-fmacro-prefix-map={SOURCE.parent}{os.sep}=")


def _identity(torch_version: str) -> dict:
    flags = " ".join(f.split("=")[0] for f in FLAGS)   # the flags, less the checkout's path
    digest = hashlib.sha256(SOURCE.read_bytes() + flags.encode()).hexdigest()[:12]
    py = f"{sys.version_info.major}{sys.version_info.minor}"
    return {"torch": torch_version, "python": py, "source": digest,
            "name": f"torchport_simdevice_{digest}"}


def build_dir(torch_version: str) -> Path:
    ident = _identity(torch_version)
    return cache_root() / "sim" / f"torch-{ident['torch']}-py{ident['python']}-{ident['source']}"


def compiler() -> str:
    """The C++ compiler torch.utils.cpp_extension will call, or '' when there is none."""
    cxx = os.environ.get("CXX") or "c++"
    return shutil.which(cxx) or ""


def _suffix() -> str:
    return ".so"   # what torch.utils.cpp_extension.load names the library, whatever the Python


def _import_library(path: Path, name: str):
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    module = importlib.util.module_from_spec(cast(importlib.machinery.ModuleSpec, spec))   # given a loader: a spec
    loader.exec_module(module)   # the spec's loader
    return module


def _other_builds(torch_version: str) -> list:
    root = cache_root() / "sim"
    if not root.is_dir():
        return []
    mine = build_dir(torch_version).name
    return sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != mine and (p / "build.json").is_file())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def unsafe(path: Path) -> str:
    """Why loading code from `path` would run what someone else put there ('' when it would not)."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return f"{path} is a link"
    if info.st_uid != os.getuid():
        return f"{path} belongs to another user"
    if info.st_mode & 0o022:
        return f"{path} can be written by other users"
    return ""


def unsafe_place(folder: Path) -> str:
    """Why `folder` or the folders holding it could have been swapped by another user ('' when not): the
    build folder and `sim/` must be the user's own and not writable by others; the cache root may be a link
    (a cache moved to another disk) but not writable by others unless sticky, as /tmp is."""
    root = cache_root()
    try:
        info = os.stat(root)
        if info.st_mode & 0o002 and not info.st_mode & stat.S_ISVTX:
            return f"{root} can be written by other users"
        return unsafe(root / "sim") or unsafe(folder)
    except OSError as e:
        return f"{e.filename} cannot be read ({e.strerror})"


def cached_problem(folder: Path, library: Path, record: Path, version: str) -> str:
    """Why the cached build cannot be loaded as it is ('' when it can): a damaged or foreign build is built again;
    an unsafe folder (see `unsafe`) is refused by the caller."""
    try:
        built = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeError):
        return "a build record that does not parse"
    if not isinstance(built, dict):
        return "a build record that does not parse"
    if built.get("torch") != version:
        return f"built for torch {built.get('torch')}"
    if built.get("sha256") != _sha256(library):
        return "a library that is not the one built there (its sha256 differs)"
    return ""


def load(verbose: bool = False):
    """The extension module: from the cache, or built now.  UsageError says what is missing, or why the cache
    cannot be trusted or used."""
    try:
        return _load(verbose)
    except OSError as e:   # TORCHPORT_CACHE a file, a dangling link on the way, a full disk...
        where = e.filename or cache_root()
        raise UsageError(f"the simulator's cache cannot be used: {where}: {e.strerror or e} (set TORCHPORT_CACHE to "
                         "a folder of your own)") from None


def _make_private_dirs(folder: Path) -> None:
    """Create `folder` and its missing parents, none writable by others whatever the umask (an umask of 002 would
    make them group-writable, and `unsafe` would then refuse the cache it just made)."""
    missing = []
    at = folder
    while not at.exists() and not at.is_symlink():
        missing.append(at)
        at = at.parent
    for d in reversed(missing):
        d.mkdir(exist_ok=True)
        d.chmod(d.stat().st_mode & ~0o022)


def _load(verbose: bool):
    import torch

    version = torch.__version__
    ident = _identity(version)
    folder = build_dir(version)
    library = folder / f"{ident['name']}{_suffix()}"
    record = folder / "build.json"
    if record.is_file() and library.is_file():
        danger = unsafe_place(folder) or unsafe(library)
        if danger:
            raise UsageError(f"the simulator's cached build is not safe to load: {danger}; delete {folder} "
                             "(it is built again)")
        problem = cached_problem(folder, library, record, version)
        if not problem:
            return _import_library(library, ident["name"])
        if problem.startswith("built for torch"):   # the folder is named for this torch: not ours to replace
            raise UsageError(f"the simulator build in {folder} is {problem}, this is torch {version}: delete that "
                             "folder to rebuild")
        _say(f"the cached build in {folder} has {problem}: building it again")
    from torch.utils import cpp_extension

    if not cpp_extension.is_ninja_available():
        raise UsageError("the simulated device needs ninja to build once (pip install ninja, or "
                         "pip install 'torchport[sim]')")
    if not compiler():
        others = _other_builds(version)
        extra = f" (the cache has builds only for other versions: {', '.join(others)})" if others else ""
        raise UsageError(f"the simulated device needs a C++ compiler to build once for torch {version}: "
                         f"none found (install g++, or set CXX){extra}")
    _make_private_dirs(folder)
    danger = unsafe_place(folder)
    if danger:
        raise UsageError(f"the simulator's build folder is not safe to build in: {danger}; delete {folder}")
    with open(folder / ".lock", "w") as lock:
        try:                                   # one build at a time (torchrun starts several processes)
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _say(f"waiting for another process that is building the simulated device (in {folder})")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if record.is_file() and library.is_file() and not cached_problem(folder, library, record, version) \
                and not (unsafe_place(folder) or unsafe(library)):
            return _import_library(library, ident["name"])   # another process built it meanwhile
        for stale in (record, library):
            stale.unlink(missing_ok=True)
        # cpp_extension's own lock file outlives a build that was killed; holding our lock, it is stale
        (folder / "lock").unlink(missing_ok=True)
        return _build(folder, ident, record, verbose)


def _build(folder: Path, ident: dict, record: Path, verbose: bool):
    import torch
    from torch.utils import cpp_extension

    _say(f"building the simulated device for torch {torch.__version__} (once; about a minute on 2 cores), "
         f"cached in {folder}")
    start = time.perf_counter()
    log = io.StringIO()
    try:
        with contextlib.redirect_stdout(log) if not verbose else contextlib.nullcontext():
            module = cpp_extension.load(ident["name"], [str(SOURCE)], build_directory=str(folder),
                                        extra_cflags=list(FLAGS), verbose=verbose)
    except (RuntimeError, OSError, SystemExit, subprocess.SubprocessError) as e:   # a compiler that fails to run
        first = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        raise UsageError(f"building the simulated device failed ({first}); "
                         f"run `torchport sim --build --verbose` to see the compiler output") from None
    seconds = time.perf_counter() - start
    _say(f"built the simulated device in {seconds:.0f} s")
    library = folder / f"{ident['name']}{_suffix()}"
    library.chmod(library.stat().st_mode & ~0o022)   # nobody else may change what later runs load
    record.write_text(json.dumps({**ident, "seconds": round(seconds, 1), "built": time.strftime("%Y-%m-%d %H:%M:%S"),
                                  "sha256": _sha256(library)}, indent=1) + "\n", encoding="utf-8")
    return module


def _say(text: str) -> None:
    """A progress line: the first build takes a minute, which must not look like a hang."""
    print(f"torchport sim: {text}", file=sys.stderr, flush=True)


def build_info() -> dict:
    """What build.json says about the cached build for this torch, or {} when there is none."""
    import torch

    record = build_dir(torch.__version__) / "build.json"
    try:
        data = json.loads(record.read_text(encoding="utf-8")) if record.is_file() else {}
    except (OSError, ValueError, UnicodeError):
        return {}
    return data if isinstance(data, dict) else {}
