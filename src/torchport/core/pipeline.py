"""What every tree command (convert, analyze, check, port-ext) shares about a run and its files.

- `Mode`: how a run delivers its output (a mirrored tree, the input rewritten with a backup, a diff, nothing);
  a str enum, so results and reports keep the plain words.
- `Outcome`: what became of one file, whatever the command: done, an input error (the user's file or
  destination: it could not be read, decoded, parsed or written), an internal error (torchport failed on it: a
  bug, with the traceback kept) or skipped.  A file's outcome never stops the run: `guarded` turns an exception
  in a command's per-file work into that file's internal error, and the rest of the tree goes on.
- `RunResult`: what a command returns and the report writers and the exit policy read.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Callable, Protocol, TypeVar

from . import codes
from .finding import ERROR, FAILED, Finding

R = TypeVar("R")


class _Words(str, enum.Enum):
    """Members are their words wherever they are printed or compared (`f"{mode}" == mode == "write"`)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Mode(_Words):
    WRITE = "write"            # a mirrored output tree
    IN_PLACE = "in-place"      # the input rewritten, the exact bytes backed up
    DIFF = "diff"              # a unified diff; nothing written
    DRY_RUN = "dry-run"        # findings only; nothing written

    @classmethod
    def of(cls, in_place: bool = False, diff: bool = False, dry_run: bool = False) -> "Mode":
        """The mode the command-line switches ask for (at most one of them)."""
        from .errors import UsageError

        if sum(map(bool, (in_place, diff, dry_run))) > 1:
            raise UsageError("choose only one of --in-place, --diff, --dry-run")
        return cls.IN_PLACE if in_place else cls.DIFF if diff else cls.DRY_RUN if dry_run else cls.WRITE

    @property
    def writes(self) -> bool:
        return self in (Mode.WRITE, Mode.IN_PLACE)


class Outcome(_Words):
    DONE = "done"
    INPUT_ERROR = "input-error"
    INTERNAL_ERROR = "internal-error"
    SKIPPED = "skipped"


SKIPPED_STATUSES = ("excluded", "skipped", "ignored")


def outcome(status: str, findings: list) -> Outcome:
    """A file's outcome from a command's own status word and its findings."""
    if status in SKIPPED_STATUSES:
        return Outcome.SKIPPED
    if status == "error":
        failed = any(f.rule == codes.TP000.id and f.category == FAILED for f in findings)
        return Outcome.INTERNAL_ERROR if failed else Outcome.INPUT_ERROR
    return Outcome.DONE


def internal_error(rel: str, error: BaseException) -> Finding:
    """The finding for a file torchport failed on (a bug): named, never mistaken for the user's error."""
    return Finding(rel, 1, 1, codes.TP000.id, FAILED, ERROR, message=(
        f"torchport failed on this file ({type(error).__name__}: {error}); please report it"))


def guarded(work: Callable[..., R], failed: Callable[[str, Finding, str], R], rel_of: Callable) -> Callable[..., R]:
    """`work`, made to return `failed(rel, finding, traceback)` for the item it raised on instead of raising
    (KeyboardInterrupt and SystemExit still stop the run).  Module-level callables stay picklable for workers."""
    return _Guarded(work, failed, rel_of)


class _Guarded:
    def __init__(self, work, failed, rel_of):
        self.work, self.failed, self.rel_of = work, failed, rel_of

    def __call__(self, item):
        try:
            return self.work(item)
        except Exception as e:  # MemoryError and RecursionError included: that file's failure, not the run's
            rel = self.rel_of(item)
            import traceback

            return self.failed(rel, internal_error(rel, e), traceback.format_exc())


@dataclass
class FileResult:
    """One file of a run; each command adds its own fields (converter.run.ConvertedFile, porting.api.PortedFile,
    analyze.scan.FileScan)."""

    path: str                         # input-relative posix path
    status: str                       # the command's word: converted, ported, scanned, copied, skipped, error...
    findings: list = field(default_factory=list)
    message: str = ""
    diff: str = ""
    trace: str = ""                   # torchport failed on this file: the traceback

    @property
    def outcome(self) -> Outcome:
        return outcome(self.status, self.findings)


class RunResult(Protocol):
    """What convert, analyze, check and port-ext return."""

    files: list

    @property
    def findings(self) -> list: ...

    def summary(self) -> dict: ...

    def to_dict(self) -> dict: ...
