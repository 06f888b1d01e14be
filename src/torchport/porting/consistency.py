"""The ported tree holds together: every quoted `#include` that named a project file before
porting names the same file, under its new name, after.

Workers record each file's quoted includes before and after (re-lexed from the text they
write, not taken from the edits); this module resolves both sides against the file lists
of the input and the output tree and reports any include that no longer resolves.
"""
from __future__ import annotations

from typing import Optional

from .engine import IncludeResolver
from .lexer import include_path, scan


def quoted_includes(before: list, new: Optional[str]) -> list:
    """(line, path before, path after) for each quoted include; `before` is [(line, path)] of the input,
    `new` the text written (None: unchanged), re-lexed here rather than taken from the edits."""
    if not before or new is None:
        return [(line, path, path) for line, path in before]
    after = []
    for s, e in scan(new)[1]:
        found = include_path(new[s:e], s)
        if found and found[1] == '"':
            after.append(found[0])
    if len(after) != len(before):  # cannot happen: porting never adds or removes an include
        return [(line, path, None) for line, path in before]
    return [(line, path, new_path) for (line, path), new_path in zip(before, after)]


def check_includes(files: list) -> tuple:
    """(number of project includes checked, [(output file, line, include, expected file)] that broke).
    `files` are FileResults (path, output, includes)."""
    written = {r.path: r.output for r in files if r.status not in ("skipped", "error")}
    before = IncludeResolver(list(written), {})
    after = IncludeResolver(list(written.values()), {})
    checked, broken = 0, []
    for r in files:
        for line, old_path, new_path in r.includes:
            target = before.find(r.path, old_path)
            if target is None:
                continue  # not a project file (system or third-party header): nothing to keep consistent
            checked += 1
            expected = written[target]
            if new_path is None or after.find(r.output, new_path) != expected:
                broken.append((r.output, line, new_path or old_path, expected))
    return checked, broken
