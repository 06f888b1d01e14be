"""The one exit-status policy of every command (docs/cli.md): what a finished, refused, broken or interrupted
command returns to the shell, and the one line it prints on stderr.

  0    done, nothing to report
  1    done, with findings or errors (what the command fails on), or its output could not be delivered in full
       (stdout closed early, `| head`: stops quietly)
  2    not done: bad usage or input, or the environment refused (a path that cannot be read or written, a full
       disk); one line on stderr, naming the path
  3    an internal error (a torchport bug): one line naming the command; TORCHPORT_DEBUG=1 adds the traceback
  130  interrupted (Ctrl-C): one line, no traceback
Commands that run a program (`run`, `sim`, `profile`, `ops record`, `debug`) return that program's code.
"""
from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable
from typing import cast

from ..core.errors import UsageError
from ..core.names import printable

OK, FINDINGS, USAGE, INTERNAL, INTERRUPTED = 0, 1, 2, 3, 130
SYMLINK_LOOP = "Symlink loop from "   # pathlib.Path.resolve()'s RuntimeError (Python 3.11-3.12)


def guarded(work: Callable[[], int], command: Callable[[], str]) -> int:
    """Run `work` (parse and run a command) under the policy; `command()` names the command for a bug report."""
    escape_undecodable_output()
    try:
        code = work()
        sys.stdout.flush()  # a reader that went away (`| head`) is noticed here, not at interpreter exit
        return code
    except SystemExit:  # --help, --version
        flush_stdout()
        raise
    except UsageError as e:
        return fail(USAGE, f"torchport: error: {printable(str(e))}")
    except KeyboardInterrupt:
        return fail(INTERRUPTED, "torchport: interrupted")
    except BrokenPipeError:
        silence_stdout()
        return FINDINGS
    except OSError as e:  # the machine's doing (full disk, read-only folder, no permission), not a bug
        show_traceback()
        return fail(USAGE, f"torchport: error: {describe_os_error(e)}")
    except Exception as e:  # noqa: BLE001 - a bug: one line for users, the traceback on request
        show_traceback()
        if isinstance(e, RuntimeError) and str(e).startswith(SYMLINK_LOOP):   # pathlib's resolve() on the input
            return fail(USAGE, f"torchport: error: {printable(str(e))}: a chain of links that never ends")
        return fail(INTERNAL, f"torchport: internal error in `{command()}`: {type(e).__name__}: {printable(str(e))} "
                              "(run it again with TORCHPORT_DEBUG=1 for the traceback, and please report it)")


def fail(code: int, line: str) -> int:
    try:
        print(line, file=sys.stderr)
    except OSError:  # stderr is gone too: the exit code still tells
        pass
    return code


def show_traceback() -> None:
    if os.environ.get("TORCHPORT_DEBUG"):
        import traceback

        traceback.print_exc()


def describe_os_error(e: OSError) -> str:
    """`PATH: reason` (both paths for a rename), or the reason alone when the error names no path."""
    reason = e.strerror or str(e)
    if e.filename is None:
        return reason
    where = printable(e.filename)
    if e.filename2 is not None:
        where += f" -> {printable(e.filename2)}"
    return f"{where}: {reason}"


def escape_undecodable_output() -> None:
    """A file name that is not UTF-8 holds surrogates (`\\udcff`); in JSON output they are written as that
    escape (valid JSON, the exact name) instead of failing (a strict locale) or writing the raw byte (C.UTF-8)."""
    if sys.stdout is sys.__stdout__ and hasattr(sys.stdout, "reconfigure"):
        cast(io.TextIOWrapper, sys.stdout).reconfigure(errors="backslashreplace")   # the real stdout: not None


def flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()


def silence_stdout() -> None:
    """After a broken pipe: point the process's stdout at /dev/null, so Python's last flush at exit
    does not fail again and print "Exception ignored" (only for the real stdout, not a test's capture)."""
    if sys.stdout is not sys.__stdout__:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, cast(io.TextIOWrapper, sys.stdout).fileno())   # the real stdout, whose pipe broke
        os.close(devnull)
    except (OSError, ValueError):
        pass
