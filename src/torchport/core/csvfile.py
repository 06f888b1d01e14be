"""Writing CSV that spreadsheets cannot execute.

Excel, LibreOffice and Google Sheets read a cell that starts with =, +, -, @, a tab or a carriage
return as a formula (CSV injection): an op or module name such as `=HYPERLINK(...)` would be
evaluated when the file is opened.  `safe_cell` puts a single quote before such text, which the
spreadsheet shows as plain text.  Numbers, and text that is only a decimal number such as
`-0.25` or `+3e-5`, are left as they are so numeric columns stay numeric.

`write_csv(path, header, rows)` writes a file, `csv_text(header, rows)` returns the text; both
neutralise every cell, header included, and end lines with CRLF (RFC 4180).
"""
from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Union

from . import writes

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_DECIMAL = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def safe_cell(value: object) -> str:
    """The cell as text, with a leading ' when a spreadsheet would take it for a formula."""
    text = "" if value is None else str(value)
    if text.startswith(FORMULA_START) and not _DECIMAL.fullmatch(text):
        return "'" + text
    return text


def _write_rows(stream: IO[str], header: Iterable[object], rows: Iterable[Iterable[object]]) -> None:
    writer = csv.writer(stream, lineterminator="\r\n")
    writer.writerow([safe_cell(c) for c in header])
    for row in rows:
        writer.writerow([safe_cell(c) for c in row])


def csv_text(header: Iterable[object], rows: Iterable[Iterable[object]]) -> str:
    buf = io.StringIO()
    _write_rows(buf, header, rows)
    return buf.getvalue()


def write_csv(path: Union[str, os.PathLike[str]], header: Iterable[object],
              rows: Iterable[Iterable[object]]) -> Path:
    """Write `rows` under `header` to `path` (UTF-8; a character UTF-8 cannot hold is written as an escape)."""
    target = Path(path)
    writes.write_text(target, csv_text(header, rows))  # whole or not at all, never through a link
    return target
