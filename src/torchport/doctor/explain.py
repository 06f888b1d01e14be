"""`torchport explain "ERROR TEXT"` / `--file log.txt`: known error messages -> cause and fix.

The knowledge is data: kb/errors.toml, one entry per known error with regular expressions that
recognise it, a title, the cause, the fix and the source (the vendor guide and section, or the
public issue thread, it comes from).  A text is searched for every entry; in a log, the line where
each match starts is given, and the other lines where the same error recurs (every rank of a job).  An
exception line of the log (`RuntimeError: ...`) outside every explained traceback is named as not
explained (`unexplained`): a log with two failures, one known, is not reported as if it had one.  When nothing matches, the error lines of the text are compared with the
entries' examples and titles: shared words, each weighted by how rare it is among the entries (words
any error carries, such as "error" or "RuntimeError", and file paths do not count; "HCCL" or "aclnn"
count much), then shape; entries of a target the text names, e.g. "musa", come first among equals.
Only entries scoring at least MIN_SIMILARITY are offered, with their score and never as a match:
text that resembles no entry gets no guesses.
"""
from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Optional

from ..core.errors import UsageError
from ..core.tomlfile import tomllib

KB = Path(__file__).resolve().parents[1] / "kb" / "errors.toml"
_NEWLINE = re.compile(r"\n")
# The least similarity at which a nearest entry is offered, calibrated on tests/data/real_errors.toml:
# its 18 real messages that no entry explains (HCCL / stream / ACL lines whose cause is on other lines,
# other errors, log text) score at most 0.287 against any entry, while its 38 real messages of a known
# kind that are not an entry's example score either 0.312 or more against their own entry (24 of them;
# 22 with their entry first) or under 0.292.  The threshold lies in that gap; tests/test_explain.py checks
# both sides.
MIN_SIMILARITY = 0.30
# A warning line: "[W compiler_depend.ts:51] Warning: ...", "UserWarning: ...", "WARNING 10-22 ...", unless it
# reports an error too
_WARNING = re.compile(r"Warning:|^\W*(?:rank\d+\]?:\s*)?\[W[\d ]|^\W*WARNING\b|\[WARNING\]")
_ERROR_WORD = re.compile(r"Error\b|\bERROR\b")
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
    # "weak": the source shows the message only as a screenshot, or gives no cause; "inferred": torchport's reading
    # of the message's words (doctor/shapes.py), no source documents it
    confidence: str = "documented"
    defers: bool = False   # the answer says the cause is on other lines it names (ERR00100 beside CANN's codes): listed last
    vendors: tuple = ()    # an "any" entry about some vendors' stacks only: guessed only for a log naming one of them

    @property
    def regexes(self) -> tuple:
        return _compiled(self.patterns)


@cache
def _compiled(patterns: tuple) -> tuple:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


@cache
def known_errors(path: Optional[str] = None) -> tuple:
    data = tomllib.loads(Path(path or KB).read_text(encoding="utf-8"))
    return tuple(KnownError(e["id"], e.get("target", "any"), tuple(e["patterns"]), e["title"], e["cause"], e["fix"],
                            e["source"], e.get("example", ""), e.get("confidence", "documented"), e.get("defers", False),
                            tuple(e.get("vendors", ())))
                 for e in data["error"])


@dataclass
class Match:
    error: KnownError
    line: int            # 1-based line of the text where the match starts
    text: str            # that line
    score: float = 1.0   # 1.0 for a pattern match; similarity for a nearest guess
    also: tuple = ()     # the other lines where the same error is found (another rank, a retry)


def _is_warning(line: str) -> bool:
    return bool(_WARNING.search(line)) and not _ERROR_WORD.search(line)


def readable(text: str) -> str:
    """The log as lines: one inside a JSON or HTTP error body has its newlines escaped ("\\n")."""
    if text.count("\\n") > max(2, text.count("\n")):
        return text.replace("\\r\\n", "\n").replace("\\n", "\n").replace('\\"', '"')
    return text


def explain(text: str, target: Optional[str] = None, nearest: int = 3) -> tuple:
    """(matches, nearest guesses): every known error found in `text` (in order of appearance), and
    when there is none, the `nearest` most similar entries that reach MIN_SIMILARITY (maybe none)."""
    if not text.strip():
        raise UsageError("nothing to explain: give the error text, or --file LOG")
    text = readable(text)
    entries = [e for e in known_errors() if target is None or e.target in (target, "any")]
    starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
    lines = text.splitlines()
    found = []
    for e in entries:
        at = sorted({_line_of(starts, m.start()) for rx in e.regexes for m in rx.finditer(text)})
        if at:
            n = at[0]
            found.append(Match(e, n, lines[n - 1].strip() if n - 1 < len(lines) else "", also=tuple(at[1:])))
    from .families import family_errors, refinements, vendors_in
    from .shapes import shape_errors
    from .vendor_checks import check_errors

    for n, fields in refinements(text):   # a line's own parameters say more than the entries matching it
        error = KnownError(patterns=(), **fields)
        if target is None or error.target in (target, "any"):
            found = [m for m in found if m.line != n] + [Match(error, n, lines[n - 1].strip())]
    covered = {n for m in found for n in (m.line, *m.also)}
    vendors = vendors_in(text)
    families = family_errors(text, covered)   # kb/error_families.toml: libraries, HCCL codes, parameters
    covered |= {n for n, _fields in families}
    checks = check_errors(text, covered, vendors)   # kb/vendor_checks.json: where a vendor's plug-in raises it
    covered |= {n for n, _fields in checks}
    shapes = shape_errors(text, covered, vendors)   # kb/error_shapes.toml, tracebacks: what the words say
    for n, fields in families + checks + shapes:
        error = KnownError(patterns=(), **fields)
        if target is None or error.target in (target, "any"):
            found.append(Match(error, n, lines[n - 1].strip() if n - 1 < len(lines) else ""))
    # a warning (the vendor's CPU fallback, an optional library not loaded) or an answer that points to other lines
    # comes after the errors the log ends with; a reading of a message's shape after every documented answer
    found.sort(key=lambda m: (m.error.defers or _is_warning(m.text), m.error.confidence == "inferred", m.line,
                              m.error.id))
    if found:
        return found, []
    # a guess never offers another vendor's fix, nor one where the log names no vendor
    candidates = [e for e in entries
                  if e.target in vendors or e.target == "any" and (not e.vendors or vendors & set(e.vendors))]
    return [], [m for m in _nearest(lines, candidates, nearest) if m.score >= MIN_SIMILARITY]


# The line a Python exception ends a traceback with: `RuntimeError: ...`, `torch.OutOfMemoryError: ...`,
# `KeyboardInterrupt`, maybe after torchrun's `[rank1]: `; and the line a traceback starts with.
_EXCEPTION_LINE = re.compile(r"^[ \t]*(?:\[rank\d+\]:[ \t]*)?[A-Za-z_][\w.]*(?:Error|Exception|Interrupt)(?::|[ \t]*$)", re.MULTILINE)
_TRACEBACK = "Traceback (most recent call last)"


def unexplained(text: str, matches: list) -> list:
    """[(line, text)] of the exception lines no match explains: a match explains the exception that ends the
    traceback it is found in (from that traceback's first line to two lines after the exception's, where a
    message goes on, short of the next traceback), or the exception line itself."""
    text = readable(text)
    lines = text.splitlines()
    explained = {n for m in matches for n in (m.line, *m.also)}
    starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
    out, previous = [], 0
    for hit in _EXCEPTION_LINE.finditer(text):
        n = _line_of(starts, hit.start())
        if n == previous:
            continue
        first = next((i for i in range(n - 1, previous, -1) if _TRACEBACK in lines[i - 1]), n)
        last = n
        while last < min(n + 2, len(lines)) and _TRACEBACK not in lines[last]:
            last += 1                # the message's next lines, up to the next traceback
        if not any(first <= k <= last for k in explained):
            out.append((n, lines[n - 1].strip()))
        previous = n
    return out


def _line_of(starts: list, offset: int) -> int:
    import bisect

    return bisect.bisect_right(starts, offset)


_WORD = re.compile(r"[a-z][a-z0-9_]+")
# Words that every error message may carry: they count for no entry.
_GENERIC = frozenset("a an and are as at be by for from in is it not of on or the this to was with "
                     "error errors code failed failure exception runtimeerror warning".split())


def _words(text: str) -> set:
    """The words of `text`, lower-cased, leaving out file paths (build/CMakeFiles/torch_npu.dir/x.ts:25):
    every message of a library carries the same ones, and they say nothing about the error."""
    kept = " ".join(tok for tok in text.lower().split() if "/" not in tok and "\\" not in tok)
    return set(_WORD.findall(kept)) - _GENERIC


@cache
def _target_words() -> dict:
    """Words that name a target in an error text (npu, torch_npu, hccl, npu-smi, ascend...), from its file."""
    from ..backends import available_targets, load_target

    out = {}
    for name in available_targets():
        t = load_target(name)
        words = {t.name, t.device, t.register, t.backend, t.smi, *t.title.lower().split()} - {"", "gloo"}
        out[name] = {w.lower() for w in words if w and len(w) > 2}
    return out


@cache
def _entry_words() -> dict:
    """Each entry's words (from its example and title) and each word's weight: log(1 + N / df), N the
    number of entries and df how many of them use the word; a word no entry uses weighs most."""
    words = {e.id: frozenset(_words(f"{e.example} {e.title}")) for e in known_errors()}
    df: dict = {}
    for ws in words.values():
        for w in ws:
            df[w] = df.get(w, 0) + 1
    n = len(words)
    weight = {w: math.log(1 + n / c) for w, c in df.items()}
    return {"words": words, "weight": weight, "unknown": math.log(1 + n)}


def _nearest(lines: list, entries: list, k: int) -> list:
    """The k entries most similar to the error lines of `lines` (best line per entry), with scores."""
    candidates = [(i + 1, line.strip()) for i, line in enumerate(lines) if _ERROR_LINE.search(line)] or \
        [(i + 1, line.strip()) for i, line in enumerate(lines) if line.strip()]
    candidates = candidates[-50:]  # the end of a log is where errors usually are
    table = _entry_words()
    weight, unknown = table["weight"], table["unknown"]

    def mass(words) -> float:
        return sum(weight.get(w, unknown) for w in words)

    read = []  # (n, line, its words, their weight, its head): worked out once, not per entry (a log line can be megabytes long)
    text_words: set = set()  # every word, paths included (torch_npu/csrc/... names the target too)
    for n, line in candidates:
        low = line.lower()
        words = _words(low)
        read.append((n, line, words, mass(words), low[:300]))
        text_words.update(_WORD.findall(low))
    named = {t for t, words in _target_words().items() if words & text_words}
    scored = []
    for e in entries:
        ref_words = table["words"].get(e.id) or frozenset(_words(f"{e.example} {e.title}"))
        ref_mass = mass(ref_words)
        best = (0.0, 0, "")
        for n, line, words, line_mass, head in read:
            overlap = 2 * mass(words & ref_words) / max(line_mass + ref_mass, 1e-9)
            shape = difflib.SequenceMatcher(None, head, e.example.lower()[:300]).ratio()
            score = 0.9 * overlap + 0.1 * shape
            if score > best[0]:
                best = (score, n, line)
        scored.append(Match(e, best[1], best[2], round(min(best[0], 1.0), 3)))
    # entries of a target the text names come first among equals; the bonus orders, it does not raise a score
    scored.sort(key=lambda m: -(m.score + (0.05 if m.error.target in named else 0.0)))
    return scored[:k]
