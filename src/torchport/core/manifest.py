"""What a run wrote into its output tree, so that the next run into the same tree (`--force`) can tell what it
replaces and remove what it wrote before and no longer writes, and nothing else.

The record, `output_files.json` in the run's report folder (never inside the converted tree), names the output
folder and, per file this run wrote (input-relative path), its size and modification time as written; a file a
run leaves as the earlier run wrote it, because its new bytes are the same, is recorded as that run's too.  A later
`--force` run into that folder removes a recorded file it does not write again only when the file still has
that size and time: a file the user changed since, or put there, is kept.  No record (a first run, another
report folder): nothing is removed.
"""
from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from . import writes
from .files import inside

NAME = "output_files.json"
FORMAT = 1
SLACK_NS = 2_000_000_000  # file times lag the clock by a timer tick or a coarse file system: 2 s of slack


def start() -> int:
    """The time before a run writes anything (pass it to `settle`)."""
    return time.time_ns() - SLACK_NS


@dataclass
class Settled:
    """What a run into an existing output did to what was there."""

    output: str
    earlier: bool = False                         # a record of an earlier run into this folder was found
    rewritten: int = 0                            # files the earlier run wrote that this run wrote again
    removed: list[str] = field(default_factory=list)   # files only the earlier run wrote, removed
    kept: list[str] = field(default_factory=list)      # recorded files changed since, kept
    others: int = 0                               # files in the folder torchport did not write, kept

    @property
    def replaced(self) -> bool:
        """Whether the folder held files before this run (an earlier run's, or the user's)."""
        return self.earlier or self.others > 0

    def line(self) -> str:
        """One line for the terminal: what --force replaced."""
        from .words import counted

        if self.earlier:
            text = (f"replaced an earlier torchport output: {counted(self.rewritten, 'file')} rewritten, "
                    f"{counted(len(self.removed), 'stale file')} it had written removed")
            if self.kept:
                text += f", {counted(len(self.kept), 'file')} changed since kept"
        else:
            text = "wrote into an existing folder (no record of an earlier run there: nothing removed)"
        if self.others:
            text += (f"; {counted(self.others, 'file')} torchport did not write "
                     f"{'left as it is' if self.others == 1 else 'left as they are'}")
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"output": self.output, "earlier_run": self.earlier, "rewritten": self.rewritten,
                "removed": self.removed, "kept_changed": self.kept, "other_files": self.others}


def _stamp(path: Path) -> Optional[list[int]]:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns]


def _load(record: Path, output: Path) -> dict[str, Any]:
    """The earlier run's {rel: [size, mtime_ns]} for this output folder, else {}."""
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("output") != str(output):
        return {}
    files = data.get("files")
    return files if isinstance(files, dict) else {}


def _inside(output: Path, rel: str) -> bool:
    """A relative path that stays in output through real folders (no `..`, no symlinked folder on the way)."""
    path = inside(output, rel)
    return path is not None and path.parent.is_dir()


def settle(output: Union[str, os.PathLike[str]], report_dir: Union[str, os.PathLike[str]], written: Iterable[str],
           since: int) -> Settled:
    """After a run wrote `written` (input-relative paths) into the folder `output`: remove what the earlier run
    recorded and this one did not write (unless changed since), and record this run's files in report_dir."""
    output = Path(os.path.abspath(output))
    record = Path(report_dir) / NAME
    earlier = _load(record, output)
    done = Settled(str(output), earlier=bool(earlier))
    now: dict[str, list[int]] = {}
    for rel in sorted(set(written)):
        stamp = _stamp(output / rel)
        # written by this run, or left as the earlier run wrote it because this run's bytes are the same
        # (writes.write_file keep_same): this run's file either way
        if stamp is not None and (stamp[1] >= since or earlier.get(rel) == stamp):
            now[rel] = stamp
    for rel, stamp in sorted(earlier.items()):
        if rel in now:
            done.rewritten += 1
            continue
        path = output / rel
        if not _inside(output, rel) or _stamp(path) is None:
            continue
        if _stamp(path) != stamp or not (path.is_symlink() or path.is_file()):
            done.kept.append(rel)
            continue
        with contextlib.suppress(OSError):
            os.unlink(path)
            done.removed.append(rel)
            _prune(output, path.parent)
    for dirpath, _dirs, files in os.walk(output):
        for name in files:
            rel = (Path(dirpath) / name).relative_to(output).as_posix()
            if rel not in now and rel not in done.kept:
                done.others += 1
    record.parent.mkdir(parents=True, exist_ok=True)
    writes.write_text(record, json.dumps({"format": FORMAT, "output": str(output), "files": now}) + "\n")
    return done


def _prune(output: Path, folder: Path) -> None:
    """Remove folder and its parents below output while they are empty (left by removed files)."""
    while folder != output and output in folder.parents:
        try:
            os.rmdir(folder)
        except OSError:
            return
        folder = folder.parent
