"""`torchport explain "ERROR TEXT"` / `--file log.txt`: known error messages -> cause and fix.

The knowledge is data: kb/errors.toml, one entry per known error with regular expressions that
recognise it, a title, the cause, the fix and the source (the vendor guide and section it comes
from).  A text is searched for every entry; in a log, the line where each match starts is given.
When nothing matches, the error lines of the text are compared with the entries' examples and
titles (shared words, then shape; entries of a target the text names, e.g. "musa", come first),
and the nearest entries are offered with their score, never presented as a match.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

from ..core.tomlfile import tomllib
from ..core.errors import UsageError

KB = Path(__file__).resolve().parents[1] / "kb" / "errors.toml"
_NEWLINE = re.compile(r"\n")
_ERROR_LINE = re.compile(r"error|exception|failed|not found|cannot|could not|traceback|undefined|denied|invalid",
                         re.IGNORECASE)


@dataclass(frozen=True)
class KnownError:
    id: str
    target: str
    patterns: tuple
    title: str
    cause: str
    fix: str
    source: str
    example: str
    confidence: str = "documented"   # "weak": the source shows the message only as a screenshot, or gives no cause

    @property
    def regexes(self) -> tuple:
        return _compiled(self.patterns)


@lru_cache(maxsize=None)
def _compiled(patterns: tuple) -> tuple:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


@lru_cache(maxsize=None)
def known_errors(path: Optional[str] = None) -> tuple:
    data = tomllib.loads(Path(path or KB).read_text(encoding="utf-8"))
    return tuple(KnownError(e["id"], e.get("target", "any"), tuple(e["patterns"]), e["title"], e["cause"], e["fix"],
                            e["source"], e.get("example", ""), e.get("confidence", "documented"))
                 for e in data["error"])


@dataclass
class Match:
    error: KnownError
    line: int            # 1-based line of the text where the match starts
    text: str            # that line
    score: float = 1.0   # 1.0 for a pattern match; similarity for a nearest guess


def explain(text: str, target: Optional[str] = None, nearest: int = 3) -> tuple:
    """(matches, nearest guesses): every known error found in `text` (in order of appearance), and
    when there is none, the `nearest` most similar entries."""
    if not text.strip():
        raise UsageError("nothing to explain: give the error text, or --file LOG")
    entries = [e for e in known_errors() if target is None or e.target in (target, "any")]
    starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
    lines = text.splitlines()
    found = []
    for e in entries:
        hits = [m for rx in e.regexes for m in [rx.search(text)] if m]
        if hits:
            at = min(m.start() for m in hits)
            n = _line_of(starts, at)
            found.append(Match(e, n, lines[n - 1].strip() if n - 1 < len(lines) else ""))
    found.sort(key=lambda m: (m.line, m.error.id))
    if found:
        return found, []
    return [], _nearest(lines, entries, nearest)


def _line_of(starts: list, offset: int) -> int:
    import bisect

    return bisect.bisect_right(starts, offset)


_WORD = re.compile(r"[a-z][a-z0-9_]+")


@lru_cache(maxsize=None)
def _target_words() -> dict:
    """Words that name a target in an error text (npu, torch_npu, hccl, npu-smi, ascend...), from its file."""
    from ..backends import available_targets, load_target

    out = {}
    for name in available_targets():
        t = load_target(name)
        words = {t.name, t.device, t.register, t.backend, t.smi, *t.title.lower().split()} - {"", "gloo"}
        out[name] = {w.lower() for w in words if w and len(w) > 2}
    return out


def _nearest(lines: list, entries: list, k: int) -> list:
    candidates = [(i + 1, line.strip()) for i, line in enumerate(lines) if _ERROR_LINE.search(line)] or \
        [(i + 1, line.strip()) for i, line in enumerate(lines) if line.strip()]
    candidates = candidates[-50:]  # the end of a log is where errors usually are
    read = []  # (n, line, its words, its head): worked out once, not per entry (a log line can be megabytes long)
    for n, line in candidates:
        low = line.lower()
        read.append((n, line, set(_WORD.findall(low)), low[:300]))
    text_words = {w for _, _, words, _ in read for w in words}
    named = {t for t, words in _target_words().items() if words & text_words}
    scored = []
    for e in entries:
        ref_words = set(_WORD.findall(f"{e.example} {e.title}".lower()))
        best = (0.0, 0, "")
        for n, line, words, head in read:
            overlap = len(words & ref_words) / max(len(words | ref_words), 1)
            shape = difflib.SequenceMatcher(None, head, e.example.lower()[:300]).ratio()
            score = 0.6 * overlap + 0.4 * shape + (0.15 if e.target in named else 0.0)
            if score > best[0]:
                best = (score, n, line)
        scored.append(Match(e, best[1], best[2], round(min(best[0], 1.0), 3)))
    scored.sort(key=lambda m: -m.score)
    return scored[:k]
