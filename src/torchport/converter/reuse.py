"""Results of an earlier run, used again: a file whose bytes, place and context are those of last time is not
converted again.

A file's result (its converted bytes, findings, line count, changed lines and suppressed findings) is stored
under a key that names everything the conversion reads: the file's bytes, its path and kind, what the project's
other files say about it (converter/project.py's Facts for that file), the run's options, the target and rule
files' bytes, and torchport itself (its version, the Python version, and the size and modification time of
every file of the package, so an edited rule or table is a new key).  A re-run of an unchanged tree converts
nothing; after one file is edited, it converts that file (and any file whose project facts that edit changed).

One pack per input folder and target, in `cache_root()/convert-<version>-py<XY>/`: a `marshal` file of plain
data, written atomically at the end of a run with that run's entries only (older ones drop out); a pack no run
has written for 30 days is removed.  A pack is
read only when it and its folder belong to this user and no one else may write them (a pack's bytes become
the converted files); a missing, foreign, stale or corrupt pack is an empty one.  Off with `--no-cache`, or
TORCHPORT_NO_CACHE=1 (every cache), or TORCHPORT_NO_RESULT_CACHE=1 (this one only: the test suite sets it,
since its tests patch converter code in-process).

Which files will be converted is guessed before the work is shared out (same size and modification time as
last run: no worker processes for a tree of hits); whether a result is used is decided by its key alone.
"""
from __future__ import annotations

import hashlib
import marshal
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union, cast

from ..core.cache import cache_root, save_marshal
from ..core.finding import Finding
from ..core.version import __version__

if TYPE_CHECKING:
    from ..backends import Target
    from ..core.files import Entry
    from .project import Facts

PACK_VERSION = 1
PACKAGE = Path(__file__).resolve().parents[1]   # src/torchport: its files are part of every key

Hunk = tuple[int, int, int, int]   # core.edits.line_hunks: (old first, old last, new first, new last)
Stored = tuple[Any, ...]           # an entry as the pack keeps it: (new, findings, lines, hunks, suppressed), plain data
Stamp = tuple[int, int, bytes]     # (size, mtime_ns, key) of a file whose result was stored
# (new bytes or None, findings, line count, changed lines or None, suppressed findings): a stored result
Reused = tuple[Optional[bytes], list[Finding], int, Optional[list[Hunk]], list[Finding]]
# a job of run.py: (entry, destination or None, backup or None, source bytes to convert instead, or None)
Job = tuple["Entry", Optional[Path], Optional[Path], Optional[bytes]]
# run.Options and run.ConvertedFile are Any here: run imports this module (tests/test_layers.py: no cycles)


def enabled(no_cache: bool = False) -> bool:
    return not (no_cache or os.environ.get("TORCHPORT_NO_CACHE") or os.environ.get("TORCHPORT_NO_RESULT_CACHE"))


def _package_stamp() -> bytes:
    """Size and modification time of every file of torchport (not its bytecode)."""
    parts = []
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            try:
                info = os.stat(os.path.join(folder, name))
            except OSError:
                continue
            parts.append(f"{folder}/{name}:{info.st_size}:{info.st_mtime_ns}")
    return "\n".join(parts).encode("utf-8", "surrogateescape")


def _file_bytes(path: Union[str, os.PathLike[str]]) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError:
        return b"<unreadable>"


def run_key(target: Target, options: Any) -> bytes:
    """What every file's key shares: torchport, Python, the target, the rule files and the run's options
    (all but the project facts, which go into each file's key)."""
    h = hashlib.blake2b(digest_size=20)
    for part in (__version__, sys.version, target.name, target.path, _package_stamp(), _file_bytes(target.path)):
        h.update(part if isinstance(part, bytes) else part.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    for rule_file in options.rule_files:
        h.update(str(rule_file).encode("utf-8", "surrogateescape") + b"\0" + _file_bytes(rule_file) + b"\0")
    h.update(repr((options.launch, options.own_packages, options.device_env, options.selection, options.similar,
                   options.runtime_shim)).encode("utf-8", "surrogateescape"))
    return h.digest()


def file_key(run: bytes, rel: str, kind: str, data: bytes, facts: Facts) -> bytes:
    h = hashlib.blake2b(run, digest_size=20)
    context = (rel, kind, sorted(facts.names_of(rel)), rel in facts.device_users, sorted(facts.params_of(rel).items()))
    h.update(repr(context).encode("utf-8", "surrogateescape") + b"\0")
    h.update(data)
    return h.digest()


def pack_path(src: Path, target: Target) -> Path:
    py = f"{sys.version_info.major}{sys.version_info.minor}"
    name = hashlib.blake2b(f"{src.resolve()}\0{target.name}\0{target.path}".encode("utf-8", "surrogateescape"),
                           digest_size=16).hexdigest()
    return cache_root() / f"convert-{__version__}-py{py}" / f"{name}.marshal"


def _ours(path: Path) -> bool:
    """Owned by this user, and not writable by anyone else."""
    info = os.stat(path)
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def load(path: Path, run: bytes) -> tuple[dict[bytes, Stored], dict[str, Stamp]]:
    """(entries {key: entry}, stamps {rel: (size, mtime_ns, key)}) of a pack written with the run key `run`;
    empty when it cannot be used (another torchport, target, rule file or option: no key of it would match)."""
    try:
        if not (_ours(path.parent) and _ours(path)):
            return {}, {}
        value = marshal.loads(path.read_bytes())
        if isinstance(value, tuple) and len(value) == 4 and value[0] == PACK_VERSION and value[1] == run \
                and isinstance(value[2], dict) and isinstance(value[3], dict):
            return value[2], value[3]
    except (OSError, ValueError, EOFError, TypeError, AttributeError):
        pass
    return {}, {}


def save(path: Path, run: bytes, entries: dict[bytes, Stored], stamps: dict[str, Stamp]) -> None:
    """Write the pack, for this user only; a cache that cannot be written is no cache."""
    save_marshal(path, (PACK_VERSION, run, entries, stamps), private=True)


KEEP_DAYS = 30   # a pack no run has written for this long (a project converted once, long ago) is removed


def prune(folder: Path) -> None:
    """Remove the packs of the folder no run has written for KEEP_DAYS."""
    import time

    too_old = time.time() - KEEP_DAYS * 86400
    try:
        for entry in os.scandir(folder):
            if entry.name.endswith(".marshal") and entry.is_file(follow_symlinks=False) \
                    and entry.stat(follow_symlinks=False).st_mtime < too_old:
                os.unlink(entry.path)
    except OSError:
        pass


def _finding_tuple(f: Finding) -> tuple[Any, ...]:
    return (f.file, f.line, f.end_line, f.rule, f.category, f.action, f.old, f.new, f.message, f.col, f.reasons)


def entry(new: Optional[bytes], findings: list[Finding], lines: int, hunks: Optional[list[Hunk]],
          suppressed: list[Finding]) -> Stored:
    """A result as plain data."""
    return (new, tuple(_finding_tuple(f) for f in findings), lines,
            None if hunks is None else tuple(tuple(h) for h in hunks), tuple(_finding_tuple(f) for f in suppressed))


def result(value: Stored) -> Optional[Reused]:
    """(new, findings, lines, hunks, suppressed) from an entry; None when it is not one (an old or damaged pack)."""
    try:
        new, findings, lines, hunks, suppressed = value
        if not (new is None or isinstance(new, bytes)) or not isinstance(lines, int):
            return None
        return (new, [Finding(*f) for f in findings], lines,
                None if hunks is None else cast("list[Hunk]", [tuple(h) for h in hunks]),  # entry()'s line_hunks
                [Finding(*f) for f in suppressed])
    except (TypeError, ValueError):
        return None


class Pack:
    """The earlier results of one input and target, and this run's key for them."""

    def __init__(self, src: Path, target: Target, options: Any) -> None:
        self.path = pack_path(src, target)
        self.run = run_key(target, options)
        self.facts = options.project
        self.entries, self.stamps = load(self.path, self.run)

    def key(self, rel: str, kind: str, data: bytes) -> bytes:
        return file_key(self.run, rel, kind, data, self.facts)

    def get(self, key: bytes) -> Optional[Reused]:
        value = self.entries.get(key)
        return None if value is None else result(value)

    def expects_hit(self, entry: Entry) -> bool:
        """A guess, for sharing out work: the file looks as it did when its result was stored."""
        stamp = self.stamps.get(entry.rel)
        if not stamp:
            return False
        return stamp[:2] == (entry.size, entry.mtime_ns) and stamp[2] in self.entries

    def save(self, jobs: list[Job], results: list[Any]) -> int:
        """Store this run's results (jobs and results in the same order); the number taken from the pack."""
        entries: dict[bytes, Stored] = {}
        stamps: dict[str, Stamp] = {}
        reused = 0
        for job, r in zip(jobs, results):
            if r.reuse is None:
                continue
            key, value = r.reuse
            if value is None:
                value, reused = self.entries[key], reused + 1
            entries[key] = value
            stamps[job[0].rel] = (job[0].size, job[0].mtime_ns, key)
        save(self.path, self.run, entries, stamps)
        prune(self.path.parent)
        return reused
