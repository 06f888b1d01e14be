"""How the reports word a change: `change "a" to "b"`, `add "x"`, `delete "y"` (report.md, change_list.csv,
torchport.log and report.html all say it the same way)."""
from __future__ import annotations

from ..core.finding import DELETE, INSERT


def _quoted(text: str) -> str:
    """Quote code for a description, unless it is a string literal with quotes of its own."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text
    return f'"{text}"'


def describe(f) -> str:
    if f.action == INSERT:
        return f"add {_quoted(f.new)}"
    if f.action == DELETE:
        return f"delete {_quoted(f.old)}"
    return f"change {_quoted(f.old)} to {_quoted(f.new)}"
