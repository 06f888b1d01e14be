"""Non-overlapping text edits applied to the original text in one pass.

Offsets are character offsets into the decoded file.  An edit that lies inside
another edit's replaced span is dropped (the outer edit rewrites that text
anyway); a partial overlap drops the later edit.  Insertions at the same
offset keep the order they were made in.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional


@dataclass
class Edit:
    start: int
    end: int
    text: str
    finding: Optional[Any] = None  # the Finding this edit carries, dropped with it
    order: int = 0


def resolve(edits: list[Edit]) -> tuple[list[Edit], list[Edit]]:
    """Split edits into (kept, dropped), kept sorted by position."""
    ranked = sorted(edits, key=lambda e: (e.start, e.end > e.start, -(e.end - e.start), e.order))
    kept: list[Edit] = []
    dropped: list[Edit] = []
    span_end = 0  # end of the text already claimed by kept edits
    for e in ranked:
        if e.start < span_end:
            dropped.append(e)
            continue
        kept.append(e)
        span_end = e.end
    return kept, dropped


def conflicts(kept: list[Edit], dropped: list[Edit]) -> list[Edit]:
    """The dropped edits that no kept edit covers: two rewrites of the same text that disagree (an edit
    inside a kept replacement is not one: the outer edit rewrote that text on purpose)."""
    def covered(d):
        return any(k.start <= d.start and d.end <= k.end and k.end > k.start and (k.start, k.end) != (d.start, d.end)
                   or (k.start, k.end, k.text) == (d.start, d.end, d.text) for k in kept)
    return [d for d in dropped if not covered(d)]


def apply(text: str, edits: list[Edit]) -> tuple[str, list[Edit], list[Edit]]:
    kept, dropped = resolve(edits)
    if not kept:
        return text, kept, dropped
    out: list[str] = []
    pos = 0
    for e in kept:
        out.append(text[pos:e.start])
        out.append(e.text)
        pos = e.end
    out.append(text[pos:])
    return "".join(out), kept, dropped
