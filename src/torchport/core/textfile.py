"""Reading and writing source text without changing its bytes needlessly.

A file is decoded with its BOM or PEP 263 coding cookie, else UTF-8, else GBK
(common in Chinese code bases); it is written back in the same encoding, BOM
and line endings, so a file with no edits stays byte-identical.
"""
from __future__ import annotations

import codecs
import difflib
import re
from dataclasses import dataclass
from typing import Optional

_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
FALLBACK_ENCODINGS = ("utf-8", "gbk")


@dataclass
class Text:
    text: str
    encoding: str
    bom: bool = False

    @property
    def newline(self) -> str:
        i = self.text.find("\n")
        return "\r\n" if i > 0 and self.text[i - 1] == "\r" else "\n"

    def encode(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data


def coding_cookie(data: bytes) -> Optional[str]:
    for line in data.split(b"\n", 2)[:2]:
        m = _COOKIE.match(line)
        if m:
            try:
                return codecs.lookup(m.group(1).decode("ascii")).name
            except LookupError:
                return None
        if line.strip() and not line.lstrip().startswith(b"#"):
            break
    return None


def decode(data: bytes) -> Optional[Text]:
    """Decode source bytes, or None when no known encoding fits."""
    if data.startswith(codecs.BOM_UTF8):
        try:
            return Text(data[3:].decode("utf-8"), "utf-8", bom=True)
        except UnicodeDecodeError:
            return None
    candidates = [coding_cookie(data)] if b"coding" in data[:400] else []
    for enc in [c for c in candidates if c] + list(FALLBACK_ENCODINGS):
        try:
            return Text(data.decode(enc), enc)
        except (UnicodeDecodeError, LookupError):
            continue
    return None


def unified_diff(old: str, new: str, old_name: str, new_name: str) -> str:
    """A unified diff of two texts; a last line without its newline gets patch's marker, so lines
    never run together."""
    def lines(text: str) -> list:
        out = text.splitlines(True)
        if out and not out[-1].endswith(("\n", "\r")):
            out[-1] += "\n\\ No newline at end of file\n"
        return out

    return "".join(difflib.unified_diff(lines(old), lines(new), old_name, new_name))
