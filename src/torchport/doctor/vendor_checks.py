"""Where a vendor's plug-in raises the message a log line holds (kb/vendor_checks.json, extracted from torch_npu,
op-plugin, torch_mlu, torch_musa and torch-xpu-ops by tools/extract_checks.py): the file and line, the kind of
check and the condition that failed.  A message is found when a line holds its words in order around the values it
was built with; only a vendor the log names is searched.  Each answer is the fields of a known error, so `explain`
reports it like one of kb/errors.toml.
"""
from __future__ import annotations

import json
import re
from collections.abc import Set as AbstractSet
from functools import lru_cache
from pathlib import Path

from .families import message_of, vendor_facts

KB = Path(__file__).resolve().parents[1] / "kb" / "vendor_checks.json"
_WORD = re.compile(r"[a-z][a-z0-9_]{3,40}")
SHORTEST_KEY = 12     # a message's longest fixed part must be at least this long to be looked for
LONGEST_LINE = 5000   # a longer log line is read up to here
# A message's fixed words must be at least this many characters and this share of the line's message: a short
# generic message ("dtype {} not supported") found inside a long line of another library is not that message.
LEAST_FIXED, LEAST_SHARE = 20, 0.3


@lru_cache(maxsize=1)
def _index() -> tuple:
    """(sources, {word: [(parts, row)]}): each message under the longest word of its longest fixed part."""
    data = json.loads(KB.read_text(encoding="utf-8"))
    by_word: dict = {}
    for row in data["checks"]:
        parts = tuple(p for p in (part.strip().lower() for part in row[5].split("{}")) if len(p) >= 4)
        key = max(parts, key=len, default="")
        words = _WORD.findall(key)
        if len(key) < SHORTEST_KEY or not words:
            continue
        by_word.setdefault(max(words, key=len), []).append((parts, row))
    return data["sources"], by_word


def _holds(line: str, parts: tuple) -> bool:
    at = 0
    for part in parts:
        at = line.find(part, at)
        if at < 0:
            return False
        at += len(part)
    return True


def _enough(parts: tuple, said: int) -> bool:
    fixed = sum(len(p) for p in parts)
    return fixed >= LEAST_FIXED and fixed >= LEAST_SHARE * said


def check_errors(text: str, covered: set, vendors: AbstractSet[str]) -> list:
    """[(line, fields)] for the lines of `text` not in `covered` that hold a message a named vendor's plug-in raises
    (the longest such message, when several fit), each message once."""
    if not vendors:
        return []
    sources, index = _index()
    out, seen = [], set()
    for n, line in enumerate(text.splitlines(), 1):
        if n in covered:
            continue
        low = line[:LONGEST_LINE].lower()
        said = len(message_of(low))
        fits = [row for word in set(_WORD.findall(low)) for parts, row in index.get(word, ())
                if row[0] in vendors and _holds(low, parts) and _enough(parts, said)]
        if fits:
            row = max(fits, key=lambda r: len(r[5]))
            if row[2] not in seen:
                seen.add(row[2])
                out.append((n, _answer(row, sources[row[1]], line)))
    return out


def _answer(row: list, source: dict, line: str) -> dict:
    vendor, _source, where, kind, condition, message = row
    package, base = source["package"], where.rsplit("/", 1)[-1]
    trace = vendor_facts(vendor).get("trace", "")
    when = f" when `{condition}` is false" if kind.startswith("TORCH_CHECK") and condition else \
        f" when `{condition}`" if condition else ""
    if "WARN" in kind.upper():
        title = f"A warning from {package} ({base})"
        cause = (f"{package} prints this warning at {where}{when}: \"{message[:200]}\". A warning is not what stops a "
                 "run; if the run failed, the cause is on another line.")
        fix = "Nothing to change unless what it says explains a wrong result or a slow run; read the lines after it."
    else:
        what = "its check failed" if kind.startswith("TORCH_CHECK") else "it logged an error" if kind == "logger.error" \
            else f"it raised {kind}"
        title = f"{package} refused the call: {what} ({base})"
        cause = (f"The message is {package}'s own, raised at {where}{when}: the call gave it something this release "
                 "does not accept (a shape, dtype, format, argument value or state the condition tests), or reached "
                 "a path it does not support.")
        fix = (f"Compare the condition with the inputs of the call that failed (the traceback's last frame in your "
               f"code names it); change the call to meet it, or use a {package} release whose check allows it (the "
               f"same file in a newer release shows whether the restriction was lifted). {trace}").strip()
    return {"id": f"check:{vendor}:{where}", "target": vendor, "title": title, "cause": cause, "fix": fix,
            "source": f"{source['repository']}@{source['commit'][:10]} {where} ({kind})", "example": line.strip(),
            "confidence": "documented", "defers": False}
