"""What analyze's writers share (analysis.md, the CSVs, report.html, the terminal summary): the readiness table's
rows, and the report group of a finding category.  Read from the result and from core.codes, never from the
analyze command."""
from __future__ import annotations

from ..core.codes import CATEGORIES
from ..core.words import counted

# Report groups of finding categories (core.codes.CATEGORIES): categories without one are not touchpoints.
TOUCHPOINT_GROUPS = {category: group for category, group in CATEGORIES.items() if group}

READINESS_HEADER = ("Target", "Grade", "Automatic", "Manual", "Review", "Blocked", "Effort")


def touchpoint_group(category: str) -> str:
    """The category's report group, or the category itself when it has none."""
    return TOUCHPOINT_GROUPS.get(category, category)


def readiness_rows(result) -> list:
    rows = []
    for t in result.targets:
        r = result.readiness[t]
        grade = r.grade if not r.not_read else f"{r.grade} (unverified: {counted(r.not_read, 'file')} not read)"
        rows.append((t, grade, r.automatic, r.manual, r.review, r.blocked, f"{r.effort:g}"))
    return rows
