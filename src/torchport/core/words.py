"""Words: word lists as regular expressions (a trie-factored alternation, the minimal set of trigger words), a
count with its noun in the right number (`counted(1, "file")` is "1 file", `counted(2, "file")` "2 files"), and
the known word closest to a mistyped one (every "did you mean" of the tool)."""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any


def closest(word: str, known: Iterable[object]) -> str:
    """The known word closest to a mistyped `word` (difflib's ratio >= 0.6), or ""."""
    import difflib

    close = difflib.get_close_matches(word, [str(k) for k in known], n=1, cutoff=0.6) if word else []
    return close[0] if close else ""


def counted(n: object, noun: str, plural: str = "") -> str:
    """`n noun`, the noun plural unless n is 1 (`plural` for irregular ones: entry/entries)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def trie_pattern(words: Iterable[str]) -> str:
    """One regex alternation for many words, factored as a trie: each position is tested once."""
    trie: dict[str, dict[str, Any]] = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        if not node:
            return ""
        branches = [re.escape(ch) + emit(sub) for ch, sub in sorted(node.items()) if ch]
        optional = "" in node
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if optional:
            body = "(?:" + body + ")?"
        return body

    return emit(trie)


def minimal_words(words: Iterable[str]) -> list[str]:
    """The words that hold no other word (finding the shorter one is enough), sorted.

    Each word's substrings of the lengths other words have are looked up in the set: the work is linear
    in the number of words (times the square of their length, which MAX_NAME bounds), where testing
    every pair was quadratic (20,000 rules took minutes)."""
    unique = set(words)
    lengths = sorted({len(w) for w in unique})
    return sorted(w for w in unique
                  if unique.isdisjoint([w[i:i + n] for n in lengths if n < len(w) for i in range(len(w) - n + 1)]))
