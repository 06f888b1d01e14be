"""Reading a command line the user gave after `--`: which leading words start the Python interpreter,
and whether that interpreter is the one running torchport.

A bare name (`python`, `python3.11`, `/usr/bin/env python`) means this interpreter when the version
it names, if any, is this one's (as `torchport sim` reads it).  A path (`/usr/bin/python3`,
`.venv/bin/python`) is this interpreter when it is `sys.executable` or, asked, runs with the same
`sys.prefix` (a venv's python and its base interpreter are the same file but not the same packages).
`run` runs another interpreter as a child; `ops record` and `profile` run the script in this process
and refuse another one (`require_this_interpreter`).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from .errors import UsageError

_PYTHON = re.compile(r"python(\d+(\.\d+)*)?w?$")
_FLAGS = re.compile(r"-[bBdEiIOqsSuv]+")
_VALUED = ("-W", "-X")     # interpreter options with a value: they cannot be applied to this process


def interpreter_words(argv: Sequence[str]) -> int:
    """How many leading words of `argv` start the Python interpreter: `python`, `python3.11`,
    `/usr/bin/python3`, `/usr/bin/env python`, each with flags such as -u; 0 when it is not Python."""
    i = 1 if argv and Path(argv[0]).name == "env" and len(argv) > 1 else 0
    if i >= len(argv) or not _PYTHON.match(Path(argv[i]).name):
        return 0
    i += 1
    while i < len(argv) and _FLAGS.fullmatch(argv[i]):
        i += 1
    return i


def interpreter(argv: Sequence[str]) -> Optional[str]:
    """The word of `argv` that names Python (`python3`, `/usr/bin/python3`; after `env`), or None."""
    if not interpreter_words(argv):
        return None
    return argv[1] if Path(argv[0]).name == "env" else argv[0]


def _version_matches(word: str) -> bool:
    match = _PYTHON.match(Path(word).name)
    named = match.group(1) if match else None
    ours = [str(n) for n in sys.version_info[:3]]
    return not named or named.split(".") == ours[:len(named.split("."))]


def is_this_interpreter(word: str) -> bool:
    """Whether `word` (what the user typed to start Python) starts the interpreter running torchport."""
    if not _version_matches(word):
        return False
    if "/" not in word and os.sep not in word:
        return True
    here = os.path.abspath(sys.executable)
    try:
        if os.path.dirname(os.path.abspath(word)) == os.path.dirname(here) and os.path.samefile(word, here):
            return True
        asked = subprocess.run([word, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True,
                               timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    prefix = asked.stdout.strip()
    return asked.returncode == 0 and bool(prefix) and os.path.realpath(prefix) == os.path.realpath(sys.prefix)


def require_this_interpreter(argv: Sequence[str], command: str) -> None:
    """UsageError (one line) when `argv` starts another Python than this one, or gives it an option this
    process cannot apply, or -c CODE: `command` (`profile`, `ops record`) runs the script here."""
    word = interpreter(argv)
    if word is None:
        return
    if "/" in word and not Path(word).exists():
        raise UsageError(f"interpreter not found: {word}")
    if not is_this_interpreter(word):
        raise UsageError(f"{word} is not the Python running torchport ({sys.executable}, Python "
                         f"{sys.version.split()[0]}), and `torchport {command}` runs the script in its own: run "
                         f"`{word} -m torchport {command} ...` where torch and torchport are installed, or name "
                         "no interpreter")
    rest = argv[interpreter_words(argv):]
    option = rest[0] if rest else ""
    if option == "-c":
        raise UsageError(f"`torchport {command}` runs a script or -m MODULE, not -c CODE: put the code in a file")
    if option[:2] in _VALUED:
        raise UsageError(f"`torchport {command}` runs the script in this process, where python {option} cannot be "
                         f"applied: give it to the interpreter running torchport (`python {option} ... -m torchport "
                         f"{command} ... -- script.py`)")


def child_command(argv: Sequence[str]) -> list[str]:
    """`argv` to start as a child process: a bare name of this Python (`python -c ...`, `env python3 ...`)
    becomes `sys.executable`, the interpreter that has torch; anything else is kept as given."""
    word = interpreter(argv)
    if word is None or "/" in word or not _version_matches(word):
        return list(argv)
    at = 1 if Path(argv[0]).name == "env" else 0
    return [sys.executable, *argv[at + 1:]] if sys.executable else list(argv)
