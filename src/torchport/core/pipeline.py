"""What every tree command (convert, analyze, check, port-ext) shares about a run and its files.

- `Mode`: how a run delivers its output (a mirrored tree, the input rewritten with a backup, a diff, nothing);
  a str enum, so results and reports keep the plain words.
- `Outcome`: what became of one file, whatever the command: done, an input error (the user's file or
  destination: it could not be read, decoded, parsed or written), an internal error (torchport failed on it: a
  bug, with the traceback kept) or skipped.  A file's outcome never stops the run: `guarded` turns an exception
  in a command's per-file work into that file's internal error, and the rest of the tree goes on.
- `RunResult`: what a command returns and the report writers and the exit policy read; `FoundResult`, `TreeResult`,
  `ConvertedTree`, `PortedTree` and `AssessedTree` add what the convert, port-ext and analyze writers read
  besides (report/ reads results only through these).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, TypeVar, runtime_checkable

from . import codes
from .finding import ERROR, FAILED, Finding

if TYPE_CHECKING:
    from collections import Counter

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
    def of(cls, in_place: bool = False, diff: bool = False, dry_run: bool = False) -> Mode:
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


def outcome(status: str, findings: list[Finding]) -> Outcome:
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


def guarded(work: Callable[..., R], failed: Callable[[str, Finding, str], R],
            rel_of: Callable[[Any], str]) -> Callable[..., R]:
    """`work`, made to return `failed(rel, finding, traceback)` for the item it raised on instead of raising
    (KeyboardInterrupt and SystemExit still stop the run).  Module-level callables stay picklable for workers."""
    return _Guarded(work, failed, rel_of)


class _Guarded:
    def __init__(self, work: Callable[..., Any], failed: Callable[[str, Finding, str], Any],
                 rel_of: Callable[[Any], str]) -> None:
        self.work, self.failed, self.rel_of = work, failed, rel_of

    def __call__(self, item: Any) -> Any:
        try:
            return self.work(item)
        except Exception as e:  # MemoryError and RecursionError included: that file's failure, not the run's
            rel = self.rel_of(item)
            import traceback

            return self.failed(rel, internal_error(rel, e), traceback.format_exc())


@dataclass
class FileResult:
    """One file of a run; each command adds its own fields (converter.run.ConvertedFile, commands.port.PortedFile,
    analyze.scan.FileScan)."""

    path: str                         # input-relative posix path
    status: str                       # the command's word: converted, ported, scanned, copied, skipped, error...
    findings: list[Finding] = field(default_factory=list)
    message: str = ""
    diff: str = ""
    trace: str = ""                   # torchport failed on this file: the traceback

    @property
    def outcome(self) -> Outcome:
        return outcome(self.status, self.findings)


@runtime_checkable
class RunResult(Protocol):
    """What convert, analyze, check and port-ext return, and what every report writer reads: the files, the
    run's figures and its JSON form."""

    files: list[Any]                  # of FileResult (each command's own kind)

    def summary(self) -> dict[str, Any]: ...

    def to_dict(self) -> dict[str, Any]: ...


@runtime_checkable
class FoundResult(RunResult, Protocol):
    """A run for one target (convert, check, port-ext): also its findings, in file order."""

    @property
    def findings(self) -> list[Finding]: ...


@runtime_checkable
class TreeResult(FoundResult, Protocol):
    """A run that rewrites files (convert, port-ext): where it read and wrote, and each file's text before and
    after, read back from where the run left them (None when they cannot be)."""

    target: str
    input: str
    output: Optional[str]
    mode: str
    backup: Optional[str]

    def texts(self, r: FileResult) -> Optional[tuple[str, str]]: ...


@runtime_checkable
class ConvertedTree(TreeResult, Protocol):
    """convert's result: also when it started and the findings suppressed (`# torchport: ignore`,
    --select/--ignore)."""

    started: str

    @property
    def suppressed(self) -> list[Finding]: ...


@runtime_checkable
class PortedTree(TreeResult, Protocol):
    """port-ext's result: also the mapping it used, its totals and API counts, and an inventory (npu, mlu)."""

    map_source: str
    user_maps: list[str]
    inventory: dict[str, Any]

    def totals(self) -> dict[str, Any]: ...

    def api_counts(self) -> tuple[Counter[str], Counter[str]]: ...


@runtime_checkable
class CheckedTree(FoundResult, Protocol):
    """check's result: also the folder its paths are relative to, the baseline and what it suppressed, each
    finding's fingerprint and whether it fails the check, and the exit code."""

    target: str
    target_ref: str                   # the key of a checked file's per-target findings and edits
    root: str
    baseline: Optional[str]
    suppressed: list[Finding]

    def fingerprint(self, finding: Finding) -> str: ...

    def is_problem(self, finding: Finding) -> bool: ...

    @property
    def exit_code(self) -> int: ...


@runtime_checkable
class AssessedTree(RunResult, Protocol):
    """analyze's result: the targets, each one's readiness, the C++ scan, the touchpoints, what each target
    lacks, and a file's text for the report's excerpts (None when it cannot be read)."""

    input: str
    started: str
    targets: list[str]                # the targets' names
    torch_version: Optional[str]
    native: Any
    readiness: dict[str, Any]         # target -> Readiness
    data: dict[str, Any]              # target -> the versions of the data used
    libraries: Any                    # the installed libraries the project calls, or None

    @property
    def common(self) -> list[Finding]: ...

    def advice(self, target: str) -> list[Any]: ...

    def unknown_apis(self) -> list[Finding]: ...

    def package_of(self, finding: Any) -> Any: ...

    def touchpoints(self) -> list[Any]: ...   # of Finding

    def unsupported(self, target: str) -> list[Finding]: ...

    def source(self, rel: str) -> Optional[str]: ...
