"""Writing to the user's disk the way careful tools do: a whole file or nothing, never through a link.

- `write_file` writes a temporary file in the destination's folder and renames it over the destination
  (`os.replace`): a full disk or a crash leaves the old file as it was, and a symlink or hard link at
  the destination is replaced, never written through.  `exclusive=True` refuses an existing destination.
- `make_dirs` creates folders under a root and refuses a path that leaves it through a symlink.
- `new_dir` creates a folder that did not exist (backups, an output without --force).
- `hold` takes an advisory lock on a folder for the length of a run, so two runs cannot write one tree.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Optional

from .errors import UsageError

_TEMP_PREFIX = ".torchport-tmp-"
UMASK = os.umask(0o022)
os.umask(UMASK)
_UID, _GID = (os.geteuid(), os.getegid()) if hasattr(os, "geteuid") else (-1, -1)


class Unreadable(OSError):
    """The file to copy could not be read (the error is the input's, not the output's)."""


class UnsafePath(OSError):
    """A destination that would take a write outside the tree it belongs to."""


def write_file(path: Path, data: bytes, like: Optional[os.stat_result] = None, exclusive: bool = False,
               mode: Optional[int] = None, keep_same: bool = False) -> None:
    """Write data to path atomically, with the permission bits (and, where allowed, the owner) of `like`,
    else `mode`, else those of a new file (0666 less the umask).  `keep_same`: a plain file of this user with one
    name, `like`'s permission bits and these bytes is left as it is (a re-run into its own output)."""
    path = Path(path)
    try:
        there: Optional[os.stat_result] = os.lstat(path)
    except FileNotFoundError:
        there = None
    if keep_same and there is not None and like is not None and _holds(path, there, data, like):
        return
    if there is not None and not exclusive and _is_device(path, there):  # -o /dev/null, /dev/stdout: written to
        with open(path, "wb") as f:
            f.write(data)
        return
    fd, tmp = _temp_beside(path)
    done = False
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if like is not None:
                os.fchmod(f.fileno(), stat.S_IMODE(like.st_mode))
                if (like.st_uid, like.st_gid) != (_UID, _GID):
                    with contextlib.suppress(OSError):
                        os.fchown(f.fileno(), like.st_uid, like.st_gid)
            else:
                os.fchmod(f.fileno(), mode if mode is not None else 0o666 & ~UMASK)
        if exclusive:
            _link_new(tmp, path, data)
        else:
            if there is not None and stat.S_ISDIR(there.st_mode):
                raise IsADirectoryError(errno.EISDIR, "a folder is in the way", str(path))
            os.replace(tmp, path)
            done = True
    finally:
        if not done:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def _holds(path: Path, there: os.stat_result, data: bytes, like: os.stat_result) -> bool:
    """Is the file at path (lstat `there`) a plain file of this user, with one name, like's permission bits and
    exactly these bytes?"""
    with _same_kind(path, there, len(data), like) as f:
        return f is not None and f.read(len(data) + 1) == data


def _same_copy(f: BinaryIO, info: os.stat_result, dst: Path) -> bool:
    """Does dst already hold a copy of the open file f (fstat `info`): a plain file of this user, with one name,
    f's permission bits and f's bytes?"""
    try:
        there = os.lstat(dst)
    except OSError:
        return False
    with _same_kind(dst, there, info.st_size, info) as g:
        while g is not None:
            block = f.read(1 << 20)
            if block != g.read(1 << 20):
                return False
            if not block:
                return True
    return False


@contextlib.contextmanager
def _same_kind(path: Path, there: os.stat_result, size: int, like: os.stat_result) -> Iterator[Optional[BinaryIO]]:
    """path opened for reading when it (lstat `there`) is a plain file of this user with one name, `size` bytes and
    like's permission bits, and is still that file once open; else None."""
    if not stat.S_ISREG(there.st_mode) or there.st_nlink != 1 or there.st_size != size \
            or there.st_uid != _UID or stat.S_IMODE(there.st_mode) != stat.S_IMODE(like.st_mode):
        yield None
        return
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        yield None
        return
    with os.fdopen(fd, "rb") as f:
        yield f if os.fstat(fd).st_ino == there.st_ino else None


def _is_device(path: Path, info: os.stat_result) -> bool:
    """The system's character device or pipe the user named as an output (`-o /dev/stdout`, `/dev/null`): a path
    under /dev/ (through its links: /dev/stdout is one) that is a character device or a pipe.  Anywhere else a
    device node, a FIFO or a link to one is a file like any other: replaced, never written into (a FIFO in an
    output folder would hang the run; a link to /dev/null in it would swallow the file)."""
    if not os.path.abspath(path).startswith("/dev/"):
        return False
    if stat.S_ISLNK(info.st_mode):
        try:
            info = os.stat(path)
        except OSError:
            return False
    return stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode)


def _link_new(tmp: Path, path: Path, data: bytes) -> None:
    """Give the finished temporary file the name `path`, which must not exist (whatever it is)."""
    try:
        os.link(tmp, path)  # FileExistsError when path exists, even as a dangling symlink
    except FileExistsError:
        raise
    except OSError as e:  # a file system without hard links: create the name exclusively, then fill it
        if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK):
            raise
        with open(path, "xb") as f:
            f.write(data)


def write_text(path: Path, text: str, mode: Optional[int] = None) -> None:
    """A report or generated file, in UTF-8, written atomically (a name that is not UTF-8 on disk appears
    as backslash escapes)."""
    write_file(path, text.encode("utf-8", "backslashreplace"), None, mode=mode)


def copy_file(src: Path, dst: Path, keep_same: bool = False) -> None:
    """Copy src's content and permission bits to dst atomically (the copy never goes through a link at dst).
    `keep_same`: a plain file of this user with one name, src's permission bits and src's bytes is left as it is
    (a re-run into its own output)."""
    try:
        fd = os.open(src, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError as e:
        raise Unreadable(e.errno, e.strerror, str(src)) from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(errno.EINVAL, "not a regular file", str(src))
        if keep_same and _same_copy(f, info, Path(dst)):
            return
        f.seek(0)
        fd, tmp = _temp_beside(Path(dst))
        try:
            with os.fdopen(fd, "wb") as out:
                while True:
                    block = f.read(1 << 20)
                    if not block:
                        break
                    out.write(block)
                os.fchmod(out.fileno(), stat.S_IMODE(info.st_mode))
            if Path(dst).is_dir() and not Path(dst).is_symlink():
                raise IsADirectoryError(errno.EISDIR, "a folder is in the way", str(dst))
            os.replace(tmp, dst)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def _temp_beside(path: Path) -> tuple[int, Path]:
    """A new temporary file in path's folder (created exclusively, mode 0600 until it is complete).  An error
    names `path`, the file the user asked for, not the temporary name."""
    _clear_stale_temps(path.parent)
    for n in range(100):
        tmp = path.parent / f"{_TEMP_PREFIX}{os.getpid()}-{n}-{path.name[:60]}"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600), tmp
        except FileExistsError:
            continue
        except OSError as e:
            raise type(e)(e.errno, e.strerror, str(path)) from None
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path.parent))


_CLEARED: set[str] = set()  # folders whose stale temporary files this run has removed


def _clear_stale_temps(folder: Path) -> None:
    """Remove, once per folder and run, the temporary files a torchport process that no longer runs left there
    (killed between writing and renaming): plain files of this user named `.torchport-tmp-<pid>-...`."""
    if str(folder) in _CLEARED:
        return
    _CLEARED.add(str(folder))
    try:
        names = [n for n in os.listdir(folder) if n.startswith(_TEMP_PREFIX)]
    except OSError:
        return
    for name in names:
        pid = name[len(_TEMP_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        with contextlib.suppress(OSError):
            info = os.lstat(folder / name)
            if stat.S_ISREG(info.st_mode) and info.st_uid == _UID:
                os.unlink(folder / name)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


_MADE: set[tuple[str, str]] = set()  # (root, folder) pairs make_dirs created or checked in this run


def make_dirs(root: Path, folder: Path) -> None:
    """Create folder (root or below it) and its parents; an existing part below root that is a symlink
    or not a folder raises UnsafePath, so nothing is written outside root.  A folder is checked once per
    run (`hold` starts a run: it forgets the folders of the last one; a run holds its output locked)."""
    if (str(root), str(folder)) in _MADE:
        return
    root, folder = Path(root), Path(folder)
    rel = folder.relative_to(root)
    current = root
    if not current.is_dir():
        current.mkdir(parents=True, exist_ok=True)
    for part in rel.parts:
        current = current / part
        key = (str(root), str(current))
        if key in _MADE:
            continue
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                os.mkdir(current)
            info = os.lstat(current)
        if stat.S_ISLNK(info.st_mode):
            raise UnsafePath(errno.ELOOP, "a symlink in the output folder: not followed", str(current))
        if not stat.S_ISDIR(info.st_mode):
            raise UnsafePath(errno.ENOTDIR, "a file is in the way of a folder", str(current))
        _MADE.add(key)
    _MADE.add((str(root), str(folder)))


def new_dir(base: Path) -> Path:
    """Create a folder that did not exist: base, else base-2, base-3...; two runs never share one."""
    base = Path(base)
    base.parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        candidate = base if n == 1 else base.with_name(f"{base.name}-{n}")
        try:
            os.mkdir(candidate)
            return candidate
        except FileExistsError:
            continue
    raise UsageError(f"too many folders named {base}-N: remove old ones")


@contextlib.contextmanager
def hold(folder: Path, what: str) -> Iterator[None]:
    """An exclusive advisory lock on folder for the block; another run holding it is a usage error."""
    _MADE.clear()
    _CLEARED.clear()
    try:
        import fcntl
        fd = os.open(folder, os.O_RDONLY)
    except (ImportError, OSError):  # no flock here (or not a folder we can open): go on unlocked
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"another torchport run is writing {what} {folder}; wait for it to finish") from None
        except OSError:  # a file system without locks
            pass
        yield
    finally:
        os.close(fd)


def unchanged(path: Path, data: bytes, info: os.stat_result) -> bool:
    """Whether path still holds exactly `data` (the bytes read before converting) in the same file."""
    try:
        now = os.lstat(path)
        if not stat.S_ISREG(now.st_mode) or now.st_ino != info.st_ino or now.st_dev != info.st_dev:
            return False
        with open(path, "rb") as f:
            return f.read(len(data) + 1) == data
    except OSError:
        return False


class SourceChanged(OSError):
    """The user's file changed between our read and our write: left as it is."""


def rewrite(path: Path, old: bytes, info: os.stat_result, new: bytes, backup: Path, backup_root: Path,
            new_path: Optional[Path] = None) -> None:
    """Replace the user's file (read as `old`, with stat `info`) by `new`, at new_path when the file is
    renamed, after saving `old` (the exact bytes converted) in a backup written exclusively.

    Raises OSError with the file left as it was: read-only, the backup cannot be written, the file changed
    since it was read (SourceChanged), the renamed file exists already (FileExistsError), the disk is full."""
    path = Path(path)
    if not info.st_mode & stat.S_IWUSR:
        raise PermissionError(errno.EACCES, "read-only file: left as it is", str(path))
    make_dirs(backup_root, Path(backup).parent)
    write_file(backup, old, info, exclusive=True)
    try:
        if not unchanged(path, old, info):
            raise SourceChanged(errno.EAGAIN, "changed while torchport was converting it: left as it is", str(path))
        if new_path is None:
            write_file(path, new, info)
        else:
            write_file(new_path, new, info, exclusive=True)
            os.unlink(path)  # renamed; the original is in the backup
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(backup)
        raise


def remove_empty_dirs(folder: Path) -> bool:
    """Remove the empty folders under folder (and folder itself if it ends up empty); whether it remains."""
    for dirpath, _dirs, _files in os.walk(folder, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(dirpath)
    return Path(folder).exists()
