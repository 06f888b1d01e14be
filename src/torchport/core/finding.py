"""The one record every static command produces: a Finding."""
from __future__ import annotations

from dataclasses import dataclass, fields

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

    @property
    def is_change(self) -> bool:
        return self.action in CHANGES

    def to_dict(self) -> dict:
        return {name: getattr(self, name) for name in _FIELDS}


_FIELDS = tuple(f.name for f in fields(Finding))
