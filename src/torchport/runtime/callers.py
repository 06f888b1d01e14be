"""Who is asking: the project's own code, or an installed library?

The answer decides what `torch.cuda.is_available()`, `torch.cuda.device_count()` and
`tensor.is_cuda` return, and whether `torch.cuda.X` is the target's X or the real one.
torch's own code always gets the real torch.cuda (its internals call each other).  For the
rest, under the default policy ("project"):

- the project's code (the script, its folder, notebooks, `python -c`) is told the truth
  about the *target*: CUDA-style code asks "is there a GPU?" and means "is there an
  accelerator?", so `"cuda" if torch.cuda.is_available() else "cpu"` picks the target;
- installed libraries (site-packages, the standard library, torch itself) get the real
  CUDA answers, so they do not take CUDA-only code paths (fused CUDA kernels, NCCL,
  bitsandbytes...) on a machine that has no CUDA.

The other policies: "always" (everyone is told about the target, like the vendors' shims)
and "real" (nobody is; the idiom then lands on the CPU).
"""
from __future__ import annotations

import os
import sys
import sysconfig
from functools import lru_cache
from typing import cast

POLICIES = ("project", "always", "real")


def _library_roots() -> tuple:
    roots = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(os.path.realpath(path))
    import site

    for path in getattr(site, "getsitepackages", lambda: [])() + [getattr(site, "USER_SITE", "") or ""]:
        if path:
            roots.add(os.path.realpath(path))
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # torchport itself
    roots.add(here)
    return tuple(sorted(r.rstrip(os.sep) + os.sep for r in roots))


_LIBRARY_ROOTS = _library_roots()


@lru_cache(maxsize=4096)
def is_library_file(filename: str) -> bool:
    """True for code installed as a library; False for the project's files and for code without a
    file (`<stdin>`, `<string>`, notebook cells)."""
    if not filename or filename.startswith("<"):
        return filename.startswith("<frozen")
    real = os.path.realpath(filename)
    if os.sep + "site-packages" + os.sep in real or os.sep + "dist-packages" + os.sep in real:
        return True
    return real.startswith(_LIBRARY_ROOTS) or _installed_folder(os.path.dirname(real))


def library_name(filename: str) -> str:
    """The top-level package (or module) an installed file belongs to: the first part of its path below
    site-packages, or below the folder pip installed it into."""
    real = os.path.realpath(filename)
    for marker in ("site-packages", "dist-packages"):
        if os.sep + marker + os.sep in real:
            return real.split(os.sep + marker + os.sep, 1)[1].split(os.sep)[0]
    parts = real.split(os.sep)
    for i in range(len(parts) - 1, 0, -1):
        if _installed_folder(os.sep.join(parts[:i]) or os.sep, 1):
            return parts[i]
    return os.path.basename(os.path.dirname(real)) or os.path.basename(real)


@lru_cache(maxsize=1024)
def _installed_folder(folder: str, depth: int = 4) -> bool:
    """Whether `folder` or one of the `depth` folders above it holds a *.dist-info: a folder pip installed into
    (`pip install --target DIR`, put on PYTHONPATH), whatever its name."""
    try:
        if any(name.endswith(".dist-info") for name in os.listdir(folder)):
            return True
    except OSError:
        pass
    parent = os.path.dirname(folder)
    return depth > 1 and parent != folder and _installed_folder(parent, depth - 1)


_TORCH_ROOTS: tuple = ()


def _torch_roots() -> tuple:
    """torch's own package (its internals always get the real torch.cuda) and torchport's."""
    global _TORCH_ROOTS
    if not _TORCH_ROOTS:
        import torch

        _TORCH_ROOTS = tuple(os.path.dirname(os.path.realpath(cast(str, m.__file__))) + os.sep   # packages: a file
                             for m in (torch, sys.modules[__name__.rsplit(".", 2)[0]]))
    return _TORCH_ROOTS


@lru_cache(maxsize=4096)
def kind_of_file(filename: str) -> str:
    """"torch" (torch or torchport itself), "library" (installed code) or "project"."""
    if filename and not filename.startswith("<"):
        if os.path.realpath(filename).startswith(_torch_roots()):
            return "torch"
    return "library" if is_library_file(filename) else "project"


def _caller(depth: int) -> str:
    try:
        return kind_of_file(sys._getframe(depth + 1).f_code.co_filename)
    except ValueError:
        return "project"


def tells_target(policy: str, depth: int = 1) -> bool:
    """Queries (is_available, device_count, is_cuda): answer for the target, or for CUDA?  torch's
    own code always gets CUDA's answer; libraries get the target's only under "always"; the
    project gets the target's unless the policy is "real".  `depth` 1 = the caller of the caller."""
    kind = _caller(depth + 1)
    if kind == "torch":
        return False
    if kind == "library":
        return policy == "always"
    return policy != "real"


def redirects(policy: str, depth: int = 1) -> bool:
    """torch.cuda.X: the target's X, or the real one?  torch's own code always gets the real one
    (its internals call each other: torch.manual_seed calls torch.cuda.manual_seed_all); libraries
    get the target's under "always"; the project always does."""
    kind = _caller(depth + 1)
    if kind == "torch":
        return False
    return kind == "project" or policy == "always"
