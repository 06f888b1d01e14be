"""`torchport check --format sarif`: a SARIF 2.1.0 log for code-scanning UIs (GitHub code scanning).

- `tool.driver.rules`: the rules the results refer to, from the code catalogue (`torchport rules`).
- results: level `error` for problems (changes convert would make, unsupported APIs, files that
  cannot be parsed), `note` for advice; `partialFingerprints["torchport/v1"]` is the baseline
  fingerprint (file, rule, code text, occurrence; no line number), so findings are tracked across
  commits.  Suppressed findings (`--baseline`) are left out; with a baseline the rest are
  `baselineState: "new"` and `runs[0].properties.suppressed` counts the others.
- locations: `artifactLocation.uri` relative to the checked root, `uriBaseId` `%SRCROOT%`
  (defined in `originalUriBaseIds`); regions have 1-based lines and columns counted in Unicode
  code points (`columnKind: unicodeCodePoints`, as the converter counts them).
- `fixes`: the exact text edits `torchport convert` makes, as replacements with line/column
  regions into the original file (touching edits merged, so no two regions touch).  Edits on
  shared lines form one fix, attached to the first reported change among them (a fix may carry
  a neighbour's edits, e.g. `.cuda(0)` rewritten by several edits); edits whose only findings
  were suppressed by the baseline get no fix.  Applying every fix of a log gives exactly the
  file `convert` writes (tests/test_check.py checks this on the golden cases).
"""
from __future__ import annotations

import bisect
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..core.codes import CODES
from ..core.files import read_bytes
from ..core.finding import CHANGES, one_line
from ..core.pipeline import CheckedTree
from ..core.textfile import decode
from ..core.version import __version__

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "torchport/v1"
SRCROOT = "%SRCROOT%"
_NEWLINES = re.compile(r"\r\n|\r|\n")

def _rule_descriptor(rule_id: str, registry: dict, level: str) -> dict:
    r = registry.get(rule_id)
    if r is not None:
        name, category, doc, example = r.name, r.category, r.doc, r.example
    else:  # a user rule's id without its file: a minimal descriptor keeps ruleIndex valid
        name, category, doc, example = rule_id, "other", rule_id, ()
    summary = doc.splitlines()[0] if doc else name
    markdown = f"**{rule_id} {name}** ({category})\n\n{doc}"
    if example:
        before, after = example
        markdown += (f"\n\nBefore:\n\n```python\n{before.rstrip()}\n```\n\nAfter (npu):\n\n"
                     f"```python\n{after.rstrip()}\n```")
    return {"id": rule_id, "name": name,
            "shortDescription": {"text": summary},
            "fullDescription": {"text": doc},
            "help": {"text": doc, "markdown": markdown},
            "defaultConfiguration": {"level": level},
            "properties": {"category": category, "tags": ["torchport", category]}}


def _artifact(path: str) -> dict:
    # a name that is not UTF-8 on disk keeps its bytes, percent-encoded (RFC 3986)
    return {"uri": quote(path.encode("utf-8", "surrogateescape"), safe="/"), "uriBaseId": SRCROOT}


def _region(f) -> dict:
    return {"startLine": max(1, f.line), "startColumn": f.col + 1, "endLine": max(f.line, f.end_line)}


class _Positions:
    """Character offset -> (1-based line, 1-based column) in one file's text."""

    def __init__(self, text: str):
        self.starts = [0] + [m.end() for m in _NEWLINES.finditer(text)]

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def __call__(self, offset: int) -> tuple:
        line = self.line(offset)
        return line, offset - self.starts[line - 1] + 1


def fixes(result: CheckedTree) -> dict:
    """id(finding) -> SARIF fix, from the edits convert would make (needs check(..., keep_edits=True))."""
    reported = {id(f) for f in result.findings if f.action in CHANGES}
    out = {}
    for scan in result.files:
        edits = scan.edits.get(result.target_ref) or []
        if not edits:
            continue
        try:
            text = decode(read_bytes(Path(result.root) / scan.path))
        except OSError:
            continue
        if text is None:
            continue
        pos = _Positions(text.text)
        carried = {id(e.finding) for e in edits if e.finding is not None}
        items = []   # (first line, last line, edit or None, owner finding or None)
        for e in edits:
            first = pos.line(e.start)
            last = pos.line(max(e.start, e.end - 1)) if e.end > e.start else first
            owner = e.finding if e.finding is not None and id(e.finding) in reported else None
            if e.finding is not None:
                first, last = min(first, e.finding.line), max(last, e.finding.end_line)
            items.append((first, last, e, owner))
        for f in scan.per_target.get(result.target_ref, []):  # changes reported without an edit of their own
            if id(f) in reported and id(f) not in carried:
                items.append((f.line, f.end_line, None, f))
        items.sort(key=lambda it: (it[0], it[1]))
        blocks: list[list[tuple]] = []   # runs of items whose lines overlap
        end = 0
        for it in items:
            if blocks and it[0] <= end:
                blocks[-1].append(it)
                end = max(end, it[1])
            else:
                blocks.append([it])
                end = it[1]
        for block in blocks:
            owners = [it[3] for it in block if it[3] is not None]
            in_block = {id(it[2]) for it in block if it[2] is not None}
            if not owners or not in_block:
                continue
            owner = min(owners, key=lambda f: (f.line, f.col, f.rule))
            # kept edits are in the order convert applies them; touching ones (several insertions at one
            # offset, an insertion before a replacement) become one replacement, so no two regions touch
            spans: list[list[Any]] = []   # [start, end, new text], the last one grown in place
            for e in (e for e in edits if id(e) in in_block):
                if spans and spans[-1][1] == e.start:
                    spans[-1][1:] = [e.end, spans[-1][2] + e.text]
                else:
                    spans.append([e.start, e.end, e.text])
            replacements = []
            for start, stop, new in spans:
                (sl, sc), (el, ec) = pos(start), pos(stop)
                replacements.append({"deletedRegion": {"startLine": sl, "startColumn": sc, "endLine": el,
                                                       "endColumn": ec},
                                     "insertedContent": {"text": new}})
            out[id(owner)] = {"description": {"text": f"what `torchport convert --to {result.target}` writes here"},
                              "artifactChanges": [{"artifactLocation": _artifact(scan.path),
                                                   "replacements": replacements}]}
    return out


def to_sarif(result: CheckedTree, with_fixes: bool = True) -> dict:
    registry = CODES
    levels: dict = {}
    for f in result.findings:
        level = "error" if result.is_problem(f) else "note"
        if levels.get(f.rule) != "error":
            levels[f.rule] = level
    rule_ids = sorted(levels)
    index = {rid: i for i, rid in enumerate(rule_ids)}
    fix_of = fixes(result) if with_fixes else {}
    results = []
    for f in result.findings:
        r = {"ruleId": f.rule, "ruleIndex": index[f.rule],
             "level": "error" if result.is_problem(f) else "note",
             "message": {"text": one_line(f)},
             "locations": [{"physicalLocation": {"artifactLocation": _artifact(f.file), "region": _region(f)}}],
             "partialFingerprints": {FINGERPRINT_KEY: result.fingerprint(f)},
             "properties": {"action": f.action, "category": f.category, "old": f.old, "new": f.new}}
        if result.baseline is not None:
            r["baselineState"] = "new"
        if id(f) in fix_of:
            r["fixes"] = [fix_of[id(f)]]
        results.append(r)
    root_uri = Path(result.root).resolve().as_uri().rstrip("/") + "/"
    run = {
        "tool": {"driver": {"name": "torchport", "version": __version__, "semanticVersion": __version__,
                            "rules": [_rule_descriptor(rid, registry, levels[rid]) for rid in rule_ids]}},
        "automationDetails": {"id": f"torchport-check/{result.target}/"},
        "originalUriBaseIds": {SRCROOT: {"uri": root_uri,
                                         "description": {"text": "the folder torchport check was run for"}}},
        "columnKind": "unicodeCodePoints",
        "invocations": [{"executionSuccessful": True, "exitCode": result.exit_code}],
        "results": results,
        "properties": {"target": result.target, "baseline": result.baseline, "suppressed": len(result.suppressed),
                       "summary": result.summary()},
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
