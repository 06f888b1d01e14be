"""torchport's cache folder, and bundled data files read once per change instead of once per run.

`cache_root()`: $TORCHPORT_CACHE, else $XDG_CACHE_HOME/torchport, else ~/.cache/torchport.

`cached_data(path, read)` returns `read(path)`: the plain data (dicts, lists, strings, numbers,
frozensets) a reader makes of a data file after checking it.  The first run parses and checks the
file; the result is kept with `marshal` in one file of the cache folder, keyed by the data file's
path, size and modification time, the reader's module file (so a changed reader reads again),
torchport's version and Python's.  A missing, unreadable, stale or corrupt cache is read anew; a
cache folder that cannot be written just means no cache.  TORCHPORT_NO_CACHE=1 turns it off.
Only torchport's own files go through it: user files are read and checked every time.
"""
from __future__ import annotations

import marshal
import os
import sys
from pathlib import Path
from typing import Callable

from .version import __version__

_LOADED: dict = {}       # the cache file's entries, read once per process
_STATE = {"read": False}


def cache_root() -> Path:
    if os.environ.get("TORCHPORT_CACHE"):
        return Path(os.environ["TORCHPORT_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "torchport"


def _cache_file() -> Path:
    py = f"{sys.version_info.major}{sys.version_info.minor}"
    return cache_root() / f"data-{__version__}-py{py}.marshal"


def _stamp(path: Path) -> tuple:
    info = os.stat(path)
    return info.st_size, info.st_mtime_ns


_MODULE_STAMPS: dict = {}  # a reader's module file -> its stamp, taken once per process


def _module_stamp(module: str) -> tuple:
    if module not in _MODULE_STAMPS:
        _MODULE_STAMPS[module] = _stamp(Path(module))
    return _MODULE_STAMPS[module]


def _entries() -> dict:
    if not _STATE["read"]:
        _STATE["read"] = True
        try:
            loaded = marshal.loads(_cache_file().read_bytes())
            if isinstance(loaded, dict):
                _LOADED.update(loaded)
        except (OSError, ValueError, EOFError, TypeError):
            pass
    return _LOADED


def cached_data(path: Path, read: Callable[[Path], object]) -> object:
    """read(path), from the cache when neither the file nor the reader's module changed since."""
    if os.environ.get("TORCHPORT_NO_CACHE"):
        return read(path)
    module = sys.modules[read.__module__].__file__ or ""
    try:
        key = f"{path}|{read.__module__}.{read.__qualname__}"
        stamp = (_stamp(path), _module_stamp(module))
    except OSError:
        return read(path)
    entries = _entries()
    hit = entries.get(key)
    if isinstance(hit, tuple) and len(hit) == 2 and hit[0] == stamp:
        return hit[1]
    data = read(path)
    entries[key] = (stamp, data)
    if not _save(entries):
        del entries[key]  # not plain data, or no cache folder: the next call reads the file again
    return data


def _save(entries: dict) -> bool:
    """Write the cache file whole (a temporary file, then a rename); False when that failed."""
    target = _cache_file()
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    try:
        data = marshal.dumps(entries)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, target)
        return True
    except (OSError, ValueError):
        try:
            tmp.unlink()
        except OSError:
            pass
        return False
