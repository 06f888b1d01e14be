"""Reading and writing source text without changing its bytes needlessly.

A file is decoded with its BOM or PEP 263 coding cookie, else UTF-8, else GBK
(common in Chinese code bases); it is written back in the same encoding, BOM
and line endings (LF, CRLF, or old-Mac CR), so a file with no edits stays
byte-identical and inserted lines end like the file's first line.
"""
from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Optional

from .names import printable

_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_LINE_END = re.compile(r"\r\n?|\n")
FALLBACK_ENCODINGS = ("utf-8", "gbk")


@dataclass
class Text:
    text: str
    encoding: str
    bom: bool = False

    @property
    def newline(self) -> str:
        """How the first line ends: CRLF, CR (old Mac) or LF (also for a text of one line)."""
        m = _LINE_END.search(self.text)
        return m.group() if m else "\n"

    def encode(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data


def coding_cookie(data: bytes) -> Optional[str]:
    for line in re.split(rb"\r\n?|\n", data, maxsplit=2)[:2]:
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
    never run together.  The names are printed with `printable()`: a name holding a newline or a
    terminal escape cannot forge header lines."""
    def lines(text: str) -> list[str]:
        out = text.splitlines(True)
        if out and not out[-1].endswith(("\n", "\r")):
            out[-1] += "\n\\ No newline at end of file\n"
        return out

    import difflib

    return "".join(difflib.unified_diff(lines(old), lines(new), printable(old_name), printable(new_name)))
