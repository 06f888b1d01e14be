"""torchport's cache folder, and bundled data files read once per change instead of once per run.

`cache_root()`: $TORCHPORT_CACHE, else $XDG_CACHE_HOME/torchport, else ~/.cache/torchport.

`cached_data(path, read)` returns `read(path)`: the plain data (dicts, lists, strings, numbers,
frozensets) a reader makes of a data file after checking it.  The first run parses and checks the
file; the result is kept with `marshal` in a file of its own in the cache folder (named by a hash of
the data file's path and the reader; one folder per torchport and Python version), with the data
file's size and modification time and the reader's module file's (so a changed reader reads again).
A run reads only the entries it asks for: a command that needs two data files does not load the
others', nor those of other checkouts that share the cache folder.  A missing, unreadable, stale or
corrupt entry is read anew; a cache folder that cannot be written just means no cache.
TORCHPORT_NO_CACHE=1 turns it off.  Only torchport's own files go through it: user files are read and
checked every time.
"""
from __future__ import annotations

import marshal
import os
import sys
import zlib
from pathlib import Path
from typing import Any, Callable

from .version import __version__


def cache_root() -> Path:
    if os.environ.get("TORCHPORT_CACHE"):
        return Path(os.environ["TORCHPORT_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "torchport"


def _cache_folder() -> Path:
    py = f"{sys.version_info.major}{sys.version_info.minor}"
    return cache_root() / f"data-{__version__}-py{py}"


def _entry_file(key: str) -> Path:
    """The entry's file: named by two checksums of its key (zlib: no hashlib import at start-up); the key is kept
    inside too, so that two keys with one name only ever miss, never mix."""
    raw = key.encode("utf-8", "surrogatepass")
    return _cache_folder() / f"{zlib.crc32(raw):08x}{zlib.adler32(raw):08x}.marshal"


def _stamp(path: Path) -> tuple[int, int]:
    info = os.stat(path)
    return info.st_size, info.st_mtime_ns


_MODULE_STAMPS: dict[str, tuple[int, int]] = {}  # a reader's module file -> its stamp, taken once per process


def _module_stamp(module: str) -> tuple[int, int]:
    if module not in _MODULE_STAMPS:
        _MODULE_STAMPS[module] = _stamp(Path(module))
    return _MODULE_STAMPS[module]


def cached_data(path: Path, read: Callable[[Path], object], also: tuple[Path, ...] = ()) -> object:
    """read(path), from the cache when neither the file nor the reader's module changed since; `also`: more
    files the result is made from (their changes, and a different list of them, read anew too)."""
    if os.environ.get("TORCHPORT_NO_CACHE"):
        return read(path)
    module = sys.modules[read.__module__].__file__ or ""
    try:
        key = f"{path}|{read.__module__}.{read.__qualname__}"
        stamp = (_stamp(path), _module_stamp(module), tuple((str(p), _stamp(p)) for p in also))
    except OSError:
        return read(path)
    entry = _entry_file(key)
    try:
        hit = marshal.loads(entry.read_bytes())
        if isinstance(hit, tuple) and len(hit) == 3 and hit[0] == key and hit[1] == stamp:
            return hit[2]
    except (OSError, ValueError, EOFError, TypeError):
        pass   # no entry yet, or a corrupt one: read anew
    data = read(path)
    save_marshal(entry, (key, stamp, data))   # not plain data, or no cache folder: the next call reads anew
    return data


def save_marshal(target: Path, value: tuple[Any, ...], private: bool = False) -> bool:
    """Write one cache file as `marshal` data (a temporary file, then a rename); False when that failed.
    `private`: readable and writable by this user only (a new folder too)."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    try:
        data = marshal.dumps(value)
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700 if private else 0o777)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
        return True
    except (OSError, ValueError):
        try:
            tmp.unlink()
        except OSError:
            pass
        return False
