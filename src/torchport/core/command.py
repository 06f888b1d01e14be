"""Reading a command line the user gave after `--`: which leading words start the Python interpreter."""
from __future__ import annotations

import re
from pathlib import Path

_PYTHON = re.compile(r"python(\d+(\.\d+)*)?w?$")
_FLAGS = re.compile(r"-[bBdEiIOqsSuv]+")


def interpreter_words(argv: list) -> int:
    """How many leading words of `argv` start the Python interpreter: `python`, `python3.11`,
    `/usr/bin/python3`, `/usr/bin/env python`, each with flags such as -u; 0 when it is not Python."""
    i = 1 if argv and Path(argv[0]).name == "env" and len(argv) > 1 else 0
    if i >= len(argv) or not _PYTHON.match(Path(argv[i]).name):
        return 0
    i += 1
    while i < len(argv) and _FLAGS.fullmatch(argv[i]):
        i += 1
    return i
