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
    def covered(d: Edit) -> bool:
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


def changed_spans(kept: list[Edit], units: list[tuple[int, int]], line_starts: list[int],
                  size: int) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where kept edits (sorted, not overlapping) changed a text: [((old start, old end), (new start, new end))].

    `units` are sorted (start, end) spans of whole lines that compile on their own (a module's top-level
    statements); `line_starts` the offsets where the text's lines start; `size` its length.  Each edit's
    lines and every unit they overlap, merged where they overlap or touch, make one span; every edit lies
    inside a span, so checking the new text of the spans checks every change."""
    import bisect

    def line_span(e: Edit) -> tuple[int, int]:  # the lines holding e.start and e.end (an edit that ends a line joins the next)
        first = line_starts[bisect.bisect_right(line_starts, e.start) - 1]
        after = bisect.bisect_right(line_starts, e.end)
        return first, line_starts[after] if after < len(line_starts) else size

    spans = sorted(line_span(e) for e in kept)
    while True:
        grown = sorted(spans + [u for u in units if any(u[0] < e and s < u[1] or u[0] == s for s, e in spans)])
        merged: list[tuple[int, int]] = []
        for s, e in grown:
            if merged and s <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        if merged == spans:
            break
        spans = merged

    def shift(pos: int, inclusive: bool) -> int:  # an insertion at a span's end (only at the text's end) is in it
        return pos + sum(len(e.text) - (e.end - e.start) for e in kept if e.start < pos or inclusive and e.start == pos)

    return [((s, e), (shift(s, False), shift(e, True))) for s, e in spans]


def line_hunks(text: str, kept: list[Edit]) -> list[tuple[int, int, int, int]]:
    """Where the kept edits (sorted, not overlapping) changed `text`, in lines: sorted (old first, old last, new
    first, new last) 1-based ranges, which may hold equal lines at their ends; the lines between them are
    equal and in order.  What a report aligns side by side, from the edits rather than a diff of two texts."""
    import bisect

    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"] if len(kept) > 8 else None

    def line(pos: int) -> int:
        return bisect.bisect_right(starts, pos) if starts is not None else text.count("\n", 0, pos) + 1

    hunks: list[tuple[int, int, int, int]] = []
    delta = 0  # new line number - old line number, after the edits so far
    for e in kept:
        o1, o2 = line(e.start), line(e.end)
        n1 = o1 + delta
        delta += e.text.count("\n") - text.count("\n", e.start, e.end)
        if hunks and o1 <= hunks[-1][1]:
            hunks[-1] = (hunks[-1][0], o2, hunks[-1][2], o2 + delta)
        else:
            hunks.append((o1, o2, n1, o2 + delta))
    return hunks
