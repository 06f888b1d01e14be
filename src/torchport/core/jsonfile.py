"""Reading JSON that a user hands us (ops lists, run dumps, profiles).

Every problem is a UsageError (one line, exit 2) naming the file and, where it applies, the line
and the field; never a traceback:

- `read_json(path)`: one JSON document, UTF-8 (UTF-16/32 as json detects them), with or without a
  byte order mark.  `read_json_lines(path)`: JSON Lines, UTF-8, one (line number, value) at a time.
  Undecodable bytes, invalid JSON, nesting deeper than Python's recursion limit and integers
  longer than Python converts (4300 digits) are refused.
- `Fields(value, where)`: an object's fields, read by the type each must have (`text`, `count`,
  `number`, `texts`, `counts`, `obj`, `array`).  Where a number must be finite (the default), NaN,
  Infinity and numbers beyond +-1e300 are refused; `finite=False` keeps NaN and Infinity for
  recorded statistics, where the caller decides what they mean.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from typing import Any, Optional, Union, cast

from .errors import UsageError
from .files import read_data

MAX_BYTES = 256 << 20        # a whole JSON document: far above any ops list or profile torchport writes
MAX_COUNT = 2 ** 63 - 1      # counts, sizes, indices: what an int64 holds
LARGEST = 1e300              # finite numbers: sums and differences of a few of them stay finite
REQUIRED = object()
PathArg = Union[str, "os.PathLike[str]"]


def json_kind(value: object) -> str:
    """A value as a message shows it: 'a string', 'an array', 'null', 'NaN', '-5', 'a 400-digit number'."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    kinds: dict[type, str] = {str: "a string", list: "an array", dict: "an object"}
    if type(value) in kinds:
        return kinds[type(value)]
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    text = repr(value)
    return text if len(text) <= 24 else f"a {len(text.lstrip('-'))}-digit number"


def short(text: str, limit: int = 60) -> str:
    """A user's string quoted for a one-line message (control characters escaped, long ones cut)."""
    quoted = repr(text)
    return quoted if len(quoted) <= limit else quoted[: limit - 4] + "...'"


# ----------------------------------------------------------------- reading
def parse(text: str, where: str, line: Optional[int] = None) -> Any:
    """json.loads with one-line errors; `line`: the file line that `text` is (JSON Lines)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{where}:{(line or 1) + e.lineno - 1}: invalid JSON: {e.msg} (column {e.colno})") from None
    except RecursionError:
        problem = "nested too deeply"
    except ValueError:  # an integer longer than int() converts
        problem = "a number too long to read"
    raise UsageError(f"{where}{f':{line}' if line else ''}: invalid JSON: {problem}")


def _undecodable(where: str, e: UnicodeDecodeError) -> UsageError:
    return UsageError(f"{where}: not {e.encoding.upper()} text (byte 0x{e.object[e.start:e.start + 1].hex()} "
                      f"at offset {e.start}); save it as UTF-8")


def read_json(path: PathArg, *, what: str = "file", limit: int = MAX_BYTES) -> Any:
    """The JSON document in `path` (a regular file of at most `limit` bytes)."""
    data = read_data(path, what, limit)
    try:
        text = data.decode(json.detect_encoding(data))  # a BOM is the encoding's mark, not content
    except UnicodeDecodeError as e:
        raise _undecodable(str(path), e) from None
    return parse(text, str(path))


def read_json_lines(path: PathArg) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSON Lines file (UTF-8, an optional BOM)."""
    try:
        with open(path, "rb") as f:
            for number, data in enumerate(f, 1):
                if number == 1 and data.startswith(b"\xef\xbb\xbf"):
                    data = data[3:]
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise _undecodable(f"{path}:{number}", e) from None
                if text.strip():
                    yield number, parse(text.rstrip("\r\n"), str(path), number)
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror or e}") from None


# ----------------------------------------------------------------- values
def as_text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise UsageError(f"{what} must be a string, not {json_kind(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{what} holds an unpaired UTF-16 surrogate: {short(value)}") from None
    return value


def as_count(value: Any, what: str) -> int:
    """A whole number from 0 to MAX_COUNT (3.0 is 3)."""
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not whole or not 0 <= value <= MAX_COUNT:
        raise UsageError(f"{what} must be a whole number from 0 to {MAX_COUNT}, not {json_kind(value)}")
    return int(value)


def as_number(value: object, what: str, *, finite: bool = True, nullable: bool = False) -> Optional[float]:
    """A float (None for null when nullable); with finite=False, NaN and Infinity are kept (an integer
    beyond float range never is)."""
    if nullable and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{what} must be a number{' or null' if nullable else ''}, not {json_kind(value)}")
    try:
        number = float(value)
    except OverflowError:
        raise UsageError(f"{what} is out of the range of a float: {json_kind(value)}") from None
    if finite and not abs(number) <= LARGEST:
        raise UsageError(f"{what} must be a finite number no larger than 1e300, not {json_kind(value)}")
    return number


class Fields:
    """One JSON object's fields by the type each must have; an error names `where` and the field."""

    def __init__(self, value: object, where: str, prefix: str = "") -> None:
        if not isinstance(value, dict):
            raise UsageError(f"{where}: expected an object, not {json_kind(value)}")
        self.value, self.where, self.prefix = value, where, prefix

    def _get(self, key: str, default: Any) -> tuple[Any, Optional[str]]:
        """(value, how an error names it), or (default, None) when the field is absent."""
        if key in self.value:
            return self.value[key], f"{self.where}: field '{self.prefix}{key}'"
        if default is REQUIRED:
            raise UsageError(f"{self.where}: field '{self.prefix}{key}' is missing")
        return default, None

    def text(self, key: str, default: Any = REQUIRED) -> str:
        value, what = self._get(key, default)
        return cast(str, value) if what is None else as_text(value, what)  # absent: the caller's default, as given

    def count(self, key: str, default: Any = REQUIRED) -> int:
        value, what = self._get(key, default)
        return cast(int, value) if what is None else as_count(value, what)  # absent: the caller's default

    def number(self, key: str, default: Any = REQUIRED, *, finite: bool = True, nullable: bool = False) -> Any:
        value, what = self._get(key, default)
        return value if what is None else as_number(value, what, finite=finite, nullable=nullable)

    def array(self, key: str, default: Any = REQUIRED) -> list[Any]:
        value, what = self._get(key, default)
        if what is not None and not isinstance(value, list):
            raise UsageError(f"{what} must be an array, not {json_kind(value)}")
        return cast("list[Any]", value)  # checked above, or absent: the caller's default

    def texts(self, key: str, default: Any = REQUIRED) -> list[str]:
        values = self.array(key, default)
        return [as_text(v, f"{self.where}: field '{self.prefix}{key}'[{i}]") for i, v in enumerate(values)]

    def counts(self, key: str, default: Any = REQUIRED) -> list[int]:
        values = self.array(key, default)
        return [as_count(v, f"{self.where}: field '{self.prefix}{key}'[{i}]") for i, v in enumerate(values)]

    def obj(self, key: str) -> Fields:
        value, what = self._get(key, REQUIRED)
        if not isinstance(value, dict):
            raise UsageError(f"{what} must be an object, not {json_kind(value)}")
        return Fields(value, self.where, f"{self.prefix}{key}.")

