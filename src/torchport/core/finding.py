"""The one record every static command produces: a Finding."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

# What a finding means for the user's code.
INSERT = "insert"            # text added (an import)
MODIFY = "modify"            # text rewritten
DELETE = "delete"            # text removed
UNSUPPORTED = "unsupported"  # the target has no counterpart; code left as is
ADVICE = "advice"            # left as is; something the user should know or check
ERROR = "error"              # the file could not be processed (syntax error, undecodable)
ACTIONS = (INSERT, MODIFY, DELETE, UNSUPPORTED, ADVICE, ERROR)
CHANGES = (INSERT, MODIFY, DELETE)
FAILED = "converter"         # category of an error finding that says torchport itself failed on a file

# Why a finding is what it is, where a later step decides by it (migrate's "What's left", analyze's readiness):
# reasons, not words of its message, so a reworded message never changes a verdict.
CUDA_ONLY_PATH = "cuda-only-path"    # an unsupported name on the path of a CUDA-only package imported above
KEPT_BRANCH = "kept-branch"          # an unsupported name inside a CUDA question convert kept: it does not run there
OPTIONAL_IMPORT = "optional-import"  # a module imported under try/except ImportError: the project runs without it
REASONS = (CUDA_ONLY_PATH, KEPT_BRANCH, OPTIONAL_IMPORT)


@dataclass(frozen=True)
class Finding:
    """One thing found in one file; line/col refer to the original file (1-based lines)."""

    file: str
    line: int
    end_line: int
    rule: str
    category: str
    action: str
    old: str = ""
    new: str = ""
    message: str = ""
    col: int = 0
    reasons: tuple[str, ...] = ()   # REASONS that hold for it (not written to reports: the message says them in words)

    @property
    def is_change(self) -> bool:
        return self.action in CHANGES

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _FIELDS}


_FIELDS = tuple(f.name for f in fields(Finding) if f.name != "reasons")


def _first_line(text: str) -> str:
    text = text.strip()
    return text.split("\n", 1)[0].rstrip() + " ..." if "\n" in text else text


def change_of(f: Finding) -> str:
    """What a change does, in one line: `old -> new`, `add new` or `remove old`."""
    old, new = _first_line(f.old), _first_line(f.new)
    return f"{old} -> {new}" if old and new else f"add {new}" if new else f"remove {old}"


def one_line(f: Finding) -> str:
    """One line saying what a finding means: `old -> new: message` for changes, `old: message` otherwise."""
    old, message = _first_line(f.old), _first_line(f.message)
    if f.action in CHANGES:
        what = change_of(f)
        return f"{what}: {message}" if message else what
    if old and message:
        return f"{old}: {message}"
    return message or old or f.rule
