"""File trees: where outputs go, what is safe to write, and which files a run visits.

Rules of the house: the input is never written unless the user asked for
`--in-place` (and then a backup is kept); an output inside the input, or an
existing output without `--force`, is refused; symlinks are never followed out
of the tree; special files (FIFOs, sockets, devices) are never opened, and a
file or folder that cannot be read is that entry's error, not a silent gap.
How bytes reach the disk is core/writes.py's business.
"""
from __future__ import annotations

import contextlib
import errno
import fnmatch
import functools
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from . import writes
from .errors import UsageError
from .finding import ADVICE, ERROR, Finding

SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache"}
REPORT_MARKER = ".torchport-report"


@dataclass(frozen=True)
class Entry:
    rel: str                 # posix path relative to the input root ("" root for a single file)
    src: Path
    kind: str                # "file" | "link" | "link-outside" | "special" | "unreadable"
    excluded: bool = False
    problem: str = ""        # special, unreadable: what it is / why it cannot be read
    size: int = 0            # a file's size when it was listed (for sharing work out)
    mtime_ns: int = 0        # ... and its modification time (a guess at which earlier results still hold)


def is_within(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def inside(root: Path, rel: str) -> Optional[Path]:
    """`root / rel` when `rel` is a relative path with no `..` whose every existing part below `root` is a real
    folder or file, not a link (a manifest's path, reached without following links); else None."""
    parts = rel.replace("\\", "/").split("/")
    if not rel or rel.startswith("/") or os.path.isabs(rel) or any(p in ("", ".", "..") for p in parts):
        return None
    path = Path(root)
    for part in parts:
        path = path / part
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return None
        except FileNotFoundError:
            break
        except OSError:
            return None
    return Path(root, *parts)


def same_file(a: Union[str, os.PathLike[str]], b: Union[str, os.PathLike[str]]) -> bool:
    """Would writing `a` replace `b`?  Compared lexically (`nosuch/../in.pt` is in.pt once nosuch is made),
    resolved, and by inode where both exist."""
    a, b = Path(a), Path(b)
    if os.path.abspath(a) == os.path.abspath(b) or a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_report_path(report: Union[str, os.PathLike[str], None], argv: Iterable[object]) -> None:
    """`--report FILE` of a command that runs `argv`: a file name, and none of the files the command names (the
    script it runs, a file it reads), which the report would replace.  UsageError otherwise."""
    if report is None:
        return
    if not str(report):
        raise UsageError("--report needs a file name (it was empty)")
    if Path(report).is_dir():
        raise UsageError(f"--report {report} is a folder: give a file name (.json or .md)")
    try:
        info = os.lstat(report)
    except OSError:
        info = None
    if info is not None and not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)) \
            and not os.path.abspath(report).startswith("/dev/"):
        raise UsageError(f"--report {report} is a device or a FIFO, not a file: give a file name (.json or .md)")
    for word in argv:
        if isinstance(word, str) and word and not word.startswith("-") and Path(word).is_file() \
                and same_file(report, word):
            raise UsageError(f"--report {report} is {word}, a file the command names: the report would replace it")


def default_output(src: Path, target: str) -> Path:
    src = Path(os.path.abspath(src))  # `convert .`: named after the folder, beside it
    if src.is_dir():
        return src.parent / f"{src.name}_{target}"
    return src.parent / f"{src.stem}_{target}{src.suffix}"


def default_report_dir(src: Path, output: Optional[Path], target: str) -> Path:
    src = Path(os.path.abspath(src))
    if output is None:  # in place
        base = src if src.is_dir() else src.with_suffix("")
        return base.parent / f"{base.name}_{target}_report"
    base = output if output.suffix == "" or src.is_dir() else output.with_suffix("")
    return base.parent / f"{base.name}_report"


def check_layout(src: Path, output: Optional[Path], report_dir: Optional[Path], force: bool) -> None:
    """Refuse unsafe combinations before anything is written (UsageError -> exit 2)."""
    if not src.exists():
        raise UsageError(f"input not found: {src}")
    if not src.is_dir() and not src.is_file():   # a FIFO, a device: there is no file to convert
        raise UsageError(f"input {src} is not a regular file or a folder")
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
    if output is not None and report_dir is not None:
        real_out, real_reports = output.resolve(), report_dir.resolve()
        if real_reports == real_out or is_within(real_reports, real_out):
            raise UsageError(f"report folder {report_dir} is inside the output {output}: its reports would "
                             "overwrite the project's own files; choose a folder outside it")
    if output is not None and src.is_dir() and output.exists() and not output.is_dir():
        raise UsageError(f"output {output} is a file: a folder is converted into a folder (--force does not "
                         "change that); give a folder's name")
    if report_dir is not None and report_dir.is_symlink():
        raise UsageError(f"report folder {report_dir} is a link (to {os.readlink(report_dir)}): torchport replaces "
                         "its own files there, and never through a link; give the folder itself")
    if report_dir is not None and report_dir.exists() and not report_dir.is_dir():
        raise UsageError(f"report folder {report_dir} is a file (--force does not change that): give a folder's name")
    if output is not None and output.exists() and not force:
        raise UsageError(f"output {output} already exists (use --force to write into it)")
    if report_dir is not None and report_dir.exists() and not force:
        if any(report_dir.iterdir()) and not (report_dir / REPORT_MARKER).exists():
            raise UsageError(f"report folder {report_dir} exists and was not made by torchport (use --force)")


def hold_output(src: Path, out: Optional[Path], mode: str, force: bool) -> contextlib.AbstractContextManager[None]:
    """Create the output (exclusively without --force: two runs cannot both find it free) and lock where this
    run writes (the output, or the input in place) for the length of the run."""
    if mode == "write" and out is not None:
        if src.is_dir():
            out.parent.mkdir(parents=True, exist_ok=True)
            try:
                out.mkdir(exist_ok=force)
            except FileExistsError:
                raise UsageError(f"output {out} already exists (use --force to write into it)") from None
            if not out.is_dir():
                raise UsageError(f"output {out} is not a folder")
            return writes.hold(out, "the output")
        out.parent.mkdir(parents=True, exist_ok=True)
        return writes.hold(out.parent, "the output folder")
    if mode == "in-place":
        return writes.hold(src if src.is_dir() else src.parent, "the input")
    return contextlib.nullcontext()


def _excluded(rel: str, patterns: tuple[str, ...]) -> bool:
    """Does an exclude glob match the path, its name, or a folder it is in?"""
    if not patterns:
        return False
    globs, folders = _exclusion(tuple(patterns))
    name = rel.rsplit("/", 1)[-1]
    return bool(globs.match(os.path.normcase(rel)) or globs.match(os.path.normcase(name))) or rel.startswith(folders)


MAX_GLOB = 1024   # characters of one glob (fnmatch's translation of `[` runs is quadratic in them)


def normal_glob(pattern: str, what: str = "an exclude glob") -> str:
    """A glob as paths are matched: relative, without a leading `./` (`./legacy/*` is `legacy/*`); one longer than
    MAX_GLOB is a UsageError."""
    if len(pattern) > MAX_GLOB:
        raise UsageError(f"{what} of {len(pattern):,} characters: at most {MAX_GLOB} ({pattern[:40]}...)")
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return pattern


@functools.lru_cache(maxsize=64)
def _exclusion(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """The exclude globs as one compiled pattern (compiled once, however many there are), and their folders."""
    patterns = tuple(normal_glob(p) for p in patterns)
    globs = re.compile("|".join(f"(?:{fnmatch.translate(os.path.normcase(p))})" for p in patterns))
    return globs, tuple(p.rstrip("/") + "/" for p in patterns)


def walk(src: Path, exclude: tuple[str, ...] = ()) -> Iterator[Entry]:
    """Every file under src (or src itself), in a stable order; symlinks are reported, not followed;
    special files and folders that cannot be listed come as entries of their own.  Version-control and
    cache folders are left out, and so is a report folder torchport wrote (it holds REPORT_MARKER): migrate's
    `OUT/torchport-report/` is not part of the project `torchport check OUT` checks."""
    if not src.is_dir():
        real = Path(os.path.realpath(src))  # the file named: a link to it is the user's way of naming it
        yield _entry(src.name, real, real.parent, exclude)
        return
    root = src.resolve()
    unlisted: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(src, onerror=unlisted.append, followlinks=False):
        yield from _unlisted(unlisted, src, exclude)
        base = Path(dirpath)
        rel_dir = base.relative_to(src).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        keep = []
        for d in sorted(dirnames):
            p = base / d
            if p.is_symlink():
                yield _link(rel_dir + d, p, root, exclude)
            elif d not in SKIP_DIRS and not is_report_folder(p):  # a report torchport wrote
                # (a folder that cannot be read is listed, and said so, below)
                keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            yield _entry(rel_dir + f, base / f, root, exclude)
    yield from _unlisted(unlisted, src, exclude)


REPORT_FILES = 2000     # a report folder holds fewer files than this
CODE_SUFFIXES = (".py", ".pyi", ".ipynb", ".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hpp", ".mu", ".sh",
                 ".toml", ".cfg", ".txt")


def is_report_folder(folder: Path) -> bool:
    """A folder torchport's reports went into: its marker says so and it holds no code, nor any other file a
    project is made of (a marker planted beside model.py must not hide it from `check`)."""
    try:
        with open(folder / REPORT_MARKER, "rb") as f:
            if not f.read(64).startswith(b"written by torchport"):
                return False
    except OSError:
        return False
    seen = 0
    for _dirpath, _dirnames, filenames in os.walk(folder, followlinks=False):
        seen += len(filenames)
        if seen > REPORT_FILES or any(n.endswith(CODE_SUFFIXES) for n in filenames):
            return False
    return True



def _entry(rel: str, path: Path, root: Path, exclude: tuple[str, ...], follow: bool = False) -> Entry:
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except OSError as e:
        return Entry(rel, path, "unreadable", _excluded(rel, exclude), f"cannot read: {e.strerror}")
    if stat.S_ISLNK(info.st_mode):
        return _link(rel, path, root, exclude)
    if not stat.S_ISREG(info.st_mode):
        return Entry(rel, path, "special", _excluded(rel, exclude), f"not a regular file ({_special_kind(info)})")
    return Entry(rel, path, "file", _excluded(rel, exclude), size=info.st_size, mtime_ns=info.st_mtime_ns)


def _link(rel: str, path: Path, root: Path, exclude: tuple[str, ...]) -> Entry:
    try:
        inside = is_within(path.resolve(), root)
    except (OSError, RuntimeError):
        inside = False
    return Entry(rel, path, "link" if inside else "link-outside", _excluded(rel, exclude))


def _unlisted(errors: list[OSError], src: Path, exclude: tuple[str, ...]) -> Iterator[Entry]:
    """Folders os.walk could not list, as unreadable entries."""
    while errors:
        e = errors.pop(0)
        path = Path(e.filename) if e.filename else src
        rel = path.relative_to(src).as_posix() if path != src else src.name
        yield Entry(rel, path, "unreadable", _excluded(rel, exclude), f"cannot read this folder: {e.strerror}")


def _special_kind(info: os.stat_result) -> str:
    mode = info.st_mode
    return ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file")


def problem_finding(entry: Entry) -> Optional[Finding]:
    """The finding every command reports for an entry it cannot read (None for ordinary entries):
    a special file is skipped (advice: opening a FIFO would wait forever), an unreadable one is an error."""
    from . import codes  # (the catalogue loads only when a command meets such a file: a cheap start)

    if entry.kind == "special":
        return Finding(entry.rel, 1, 1, codes.TP000.id, "input", ADVICE, message=f"{entry.problem}: skipped, not opened")
    if entry.kind == "unreadable":
        return Finding(entry.rel, 1, 1, codes.TP000.id, "input", ERROR, message=f"{entry.problem}; left out of this run")
    return None


def read_error(rel: str, e: OSError) -> Finding:
    """A file that could not be read when its turn came (deleted, permissions changed, a FIFO swapped in)."""
    from . import codes

    return Finding(rel, 1, 1, codes.TP000.id, "input", ERROR, message=f"cannot read: {e.strerror or e}; left out of this run")


DATA_LIMIT = 256 << 20  # a rule file, map, target, baseline, op list or log larger than this is not one


def read_data(path: Union[str, os.PathLike[str]], what: str, limit: int = DATA_LIMIT, pipes: bool = False) -> bytes:
    """A file the user gave torchport to read (rules, a map, a target, a baseline, a log): a regular file
    (or, with `pipes`, a pipe) of at most `limit` bytes.  /dev/zero, a FIFO nobody writes to, a folder or
    a huge file is a one-line UsageError, never a hang or all of memory."""
    try:
        info = os.stat(path)
        if not (stat.S_ISREG(info.st_mode) or pipes and stat.S_ISFIFO(info.st_mode)):
            raise UsageError(f"cannot read {what} {path}: not a regular file")
        fd = os.open(path, os.O_RDONLY | (0 if pipes else getattr(os, "O_NONBLOCK", 0)))
        with os.fdopen(fd, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise UsageError(f"cannot read {what} {path}: {e.strerror or e}") from None
    if len(data) > limit:
        raise UsageError(f"{path}: larger than {limit >> 20} MiB; not a {what} torchport reads")
    return data


def read_bytes(path: Path, limit: int = -1) -> bytes:
    """A regular file's bytes (the first `limit` of them); opened without blocking and without following
    a symlink, so a FIFO or link put in a file's place raises, never hangs or leaves the tree."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return f.read(limit)


def copy_link(entry: Entry, dst: Path, src_root: Path, out_root: Path) -> None:
    """Recreate an in-tree symlink in the output, pointing at the same file of the output tree (relative,
    even when the original was absolute or went out of the tree and back): never into the input."""
    target = Path(os.path.realpath(entry.src)).relative_to(Path(src_root).resolve())
    link = os.path.relpath(Path(out_root) / target, dst.parent)
    tmp = dst.parent / f".torchport-link-{os.getpid()}-{dst.name[:60]}"
    if tmp.is_symlink():
        tmp.unlink()
    os.symlink(link, tmp)
    try:
        if dst.is_dir() and not dst.is_symlink():
            raise IsADirectoryError(f"a folder is in the way: {dst}")
        os.replace(tmp, dst)
    finally:
        if tmp.is_symlink():
            tmp.unlink()


def backup_dir(src: Path) -> Path:
    """Where --in-place keeps the originals: a folder next to the input, created now and only for this run."""
    return writes.new_dir(src.parent / f"{src.name}.torchport-backup")


def own_packages(entries: Iterable[Entry]) -> tuple[str, ...]:
    """Top-level packages the project itself defines (`mmcv/__init__.py`, `src/mmcv/__init__.py`):
    importing them is not a third-party dependency, even when the project is itself in the kb."""
    own: set[str] = set()
    for e in entries:
        parts = e.rel.split("/")
        if parts[-1] == "__init__.py" and len(parts) >= 2:
            own.add(parts[1] if parts[0] == "src" and len(parts) >= 3 else parts[0])
    return tuple(sorted(own))
