"""File trees: where outputs go, what is safe to write, and which files a run visits.

Rules of the house: the input is never written unless the user asked for
`--in-place` (and then a backup is kept); an output inside the input, or an
existing output without `--force`, is refused; symlinks are never followed out
of the tree.
"""
from __future__ import annotations

import fnmatch
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from .errors import UsageError

SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache"}
REPORT_MARKER = ".torchport-report"


@dataclass(frozen=True)
class Entry:
    rel: str                 # posix path relative to the input root ("" root for a single file)
    src: Path
    kind: str                # "file" | "link" | "link-outside"
    excluded: bool = False


def is_within(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def default_output(src: Path, target: str) -> Path:
    if src.is_dir():
        return src.parent / f"{src.name}_{target}"
    return src.parent / f"{src.stem}_{target}{src.suffix}"


def default_report_dir(src: Path, output: Optional[Path], target: str) -> Path:
    if output is None:  # in place
        base = src if src.is_dir() else src.with_suffix("")
        return base.parent / f"{base.name}_{target}_report"
    base = output if output.suffix == "" or src.is_dir() else output.with_suffix("")
    return base.parent / f"{base.name}_report"


def check_layout(src: Path, output: Optional[Path], report_dir: Optional[Path], force: bool) -> None:
    """Refuse unsafe combinations before anything is written (UsageError -> exit 2)."""
    if not src.exists():
        raise UsageError(f"input not found: {src}")
    real_src = src.resolve()
    for what, path in (("output", output), ("report folder", report_dir)):
        if path is None:
            continue
        real = path.resolve()
        if real == real_src:
            raise UsageError(f"{what} is the input itself: use --in-place to convert in place")
        if src.is_dir() and is_within(real, real_src):
            raise UsageError(f"{what} {path} is inside the input {src}: choose a folder outside it")
        if is_within(real_src, real) and real != real_src:
            raise UsageError(f"{what} {path} contains the input {src}: choose another folder")
    if output is not None and output.exists() and not force:
        raise UsageError(f"output {output} already exists (use --force to write into it)")
    if report_dir is not None and report_dir.exists() and not force:
        if any(report_dir.iterdir()) and not (report_dir / REPORT_MARKER).exists():
            raise UsageError(f"report folder {report_dir} exists and was not made by torchport (use --force)")


def _excluded(rel: str, patterns: tuple) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(name, p) or rel.startswith(p.rstrip("/") + "/")
               for p in patterns)


def walk(src: Path, exclude: tuple = ()) -> Iterator[Entry]:
    """Every file under src (or src itself), in a stable order; symlinks are reported, not followed."""
    if src.is_file():
        yield Entry(src.name, src, "file", _excluded(src.name, exclude))
        return
    root = src.resolve()
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        base = Path(dirpath)
        rel_dir = base.relative_to(src).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        keep = []
        for d in sorted(dirnames):
            p = base / d
            if p.is_symlink():
                yield _link(rel_dir + d, p, root, exclude)
            elif d not in SKIP_DIRS:
                keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            p = base / f
            rel = rel_dir + f
            if p.is_symlink():
                yield _link(rel, p, root, exclude)
            else:
                yield Entry(rel, p, "file", _excluded(rel, exclude))


def _link(rel: str, path: Path, root: Path, exclude: tuple) -> Entry:
    try:
        inside = is_within(path.resolve(), root)
    except (OSError, RuntimeError):
        inside = False
    return Entry(rel, path, "link" if inside else "link-outside", _excluded(rel, exclude))


def copy_link(entry: Entry, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.is_symlink() or dst.exists():
        dst.unlink()
    os.symlink(os.readlink(entry.src), dst)


def backup_dir(src: Path) -> Path:
    base = src.parent / f"{src.name}.torchport-backup"
    if not base.exists():
        return base
    return src.parent / f"{src.name}.torchport-backup-{time.strftime('%Y%m%d-%H%M%S')}"


def write_bytes_like(dst: Path, data: bytes, like: Path) -> None:
    """Write data to dst with the permission bits of `like`."""
    with open(dst, "wb") as f:
        f.write(data)
    shutil.copymode(like, dst)


def copy_file(src: Path, dst: Path) -> None:
    """Copy content and permission bits (not timestamps or extended attributes: they cost syscalls)."""
    shutil.copyfile(src, dst)
    shutil.copymode(src, dst)


def own_packages(entries) -> tuple:
    """Top-level packages the project itself defines (`mmcv/__init__.py`, `src/mmcv/__init__.py`):
    importing them is not a third-party dependency, even when the project is itself in the kb."""
    own = set()
    for e in entries:
        parts = e.rel.split("/")
        if parts[-1] == "__init__.py" and len(parts) >= 2:
            own.add(parts[1] if parts[0] == "src" and len(parts) >= 3 else parts[0])
    return tuple(sorted(own))
