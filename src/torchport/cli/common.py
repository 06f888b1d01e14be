"""What the command modules share: printing long output, the progress bar, option types, the parser whose
errors are one line with a hint, and the one way a command's own options are told from the program it runs."""
from __future__ import annotations

import argparse
import re
import sys

from ..core.errors import UsageError
from ..core.names import printable
from ..core.words import closest


def write_out(text: str) -> None:
    """Print a long output (a diff, a report) in pieces.  Under PYTHONUNBUFFERED (python -u) one large
    write into a pipe whose reader has gone (`| head`) is cut short without an error; in pieces, the next
    piece fails with BrokenPipeError, and the exit code says the output was not all delivered."""
    piece = 8192
    for start in range(0, len(text), piece):
        sys.stdout.write(text[start:start + piece])


def progress():
    if not sys.stderr.isatty():
        return None
    state = {"last": -1}

    def show(done, total):
        pct = done * 100 // max(total, 1)
        if pct != state["last"] or done == total:
            state["last"] = pct
            bar = "#" * (pct // 4)
            sys.stderr.write(f"\r[{bar:<25}] {done}/{total} files")
            if done == total:
                sys.stderr.write("\r" + " " * 50 + "\r")
            sys.stderr.flush()
    return show


def print_errors(findings) -> None:
    """One line per file a command could not process: `  error: file:line: message`."""
    for f in findings:
        print(f"  error: {printable(f.file)}:{f.line}: {printable(f.message)}")


def jobs(text: str) -> int:
    """-j N: a whole number of worker processes, at least 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"needs at least 1 worker, got {n}")
    return n


def output_path(text: str) -> str:
    """-o PATH: a path; an empty one is refused (it was taken for "no -o" and the default used)."""
    if not text:
        raise argparse.ArgumentTypeError("needs a path (it was empty)")
    return text


def target_name(text: str) -> str:
    """`--to`: a bundled target by name or alias, any case (`ascend`, `NPU`), or a target .toml file."""
    from ..backends import resolve_target_name

    return resolve_target_name(text)


def add_trust_options(parser) -> None:
    """--allow and --trust: the pickled globals of a checkpoint its loader may build (ckpt, export)."""
    parser.add_argument("--allow", action="append", default=[], metavar="MODULE.NAME",
                        help="a plain data type the checkpoint pickles that torchport vouches for (argparse.Namespace, "
                             "collections.*, datetime.*, numpy arrays), repeatable")
    parser.add_argument("--trust", action="append", default=[], metavar="MODULE.NAME",
                        help="any other pickled global, for a checkpoint you wrote yourself (a pickle may call it with "
                             "arguments of its choosing); code-running ones are refused even so; repeatable")


AMP_DTYPES = ("float16", "bfloat16")   # runtime.AMP_DTYPES (the CLI imports no torch)


def add_amp_dtype(parser) -> None:
    """--amp-dtype for the commands that run a script with the run-time patches (run, debug, profile)."""
    parser.add_argument("--amp-dtype", choices=AMP_DTYPES, metavar="DTYPE",
                        help="what CUDA's float16 autocast becomes on the target: float16 or bfloat16 (default: the "
                             "target's AMP dtype, bfloat16 on cpu, which hides float16 overflow; the report says "
                             "when it was changed)")


def add_simulate(parser) -> None:
    """--simulate for the commands that run a script with the run-time patches (run has its own, with --devices)."""
    parser.add_argument("--simulate", action="store_true", help="with --to npu, mlu or musa: run on torchport's "
                                                                "simulated device (see `torchport sim`)")


def target_list(text: str) -> str:
    """`analyze --to npu,Cambricon`: each name as `target_name` reads it, joined by commas again."""
    return ",".join(target_name(t.strip()) for t in text.split(",") if t.strip())


def installed_target() -> str:
    """The first installed vendor stack (found, not imported), else cpu."""
    import importlib.util

    from ..backends import load_target, target_names

    for name in target_names(kinds=("vendor",)):
        if importlib.util.find_spec(load_target(name).register) is not None:
            return name
    return "cpu"


class Parser(argparse.ArgumentParser):
    """argparse, with its errors turned into UsageError: one line on stderr and exit 2, like every other usage
    error (argparse's own would print the usage block first), naming the one wrong word with the closest known
    one: `unknown option --too (did you mean --to?)`, `unknown command 'conver' (did you mean convert?)`."""

    takes_program = False    # the command runs a program: `-- python x.py`, see split_program
    program_after_dashes = False  # ... and only after `--` (the command has a positional of its own)
    words: list = []         # the command's own part of the command line (set by cli.parse), for hints
    program: list = []       # the program it runs, as split_program found it (for the hint on misplaced options)

    def error(self, message):
        raise UsageError(self.reword(message))

    def reword(self, message: str) -> str:
        options = [s for a in self._actions for s in a.option_strings]
        m = re.search(r"argument (\S+): invalid choice: '([^']*)'", message)
        if m:
            wrong = m.group(2)
            subs = [a for a in self._actions if isinstance(a, argparse._SubParsersAction)]
            if subs and m.group(1) == subs[0].metavar:  # a command word: `conver`, `ops chek`
                what = " ".join(["command"] if self.prog == "torchport" else [self.prog.split()[-1], "command"])
                return f"unknown {what} '{printable(wrong)}'" + self.closest(wrong, subs[0].choices)
            choices = [str(c) for a in self._actions for c in (a.choices or ())]
            return printable(message) + self.closest(wrong, choices, help_hint=False)
        stray = next((w for w in self.words if self.unknown_option(w, options)), None)
        if stray and ("arguments are required" in message or "unrecognized arguments" in message):
            name = stray.split("=", 1)[0]  # a misspelled option is the cause, whatever argparse complains of
            return f"unknown option {printable(name)}" + self.closest(name, options)
        misplaced = self.misplaced(options)
        if misplaced and "arguments are required" in message:
            return printable(message) + misplaced
        m = re.match(r"unrecognized arguments: (.*)", message)
        if m:
            return f"unexpected argument '{printable(m.group(1).split()[0])}'" + self.closest("", ())
        return printable(message) + self.closest("", ())

    def closest(self, wrong: str, known, help_hint: bool = True) -> str:
        """` (did you mean X?)` for the known word closest to `wrong`, else a pointer to --help."""
        close = closest(wrong, known)
        if close:
            return f" (did you mean {printable(close)}?)"
        return f" (see `{self.prog} --help`)" if help_hint else ""

    def misplaced(self, options: list) -> str:
        """` (-o comes after the program...)` when one of this command's options follows the program it runs (which
        gets every word after it), else ""."""
        if not self.takes_program:
            return ""
        given = next((w.split("=", 1)[0] for w in self.program if w.split("=", 1)[0] in options), None)
        if given is None:
            return ""
        return (f" ({printable(given)} comes after the program, so the program gets it: put {self.prog}'s options "
                f"first and -- before the program: {self.prog} [OPTIONS] -- python script.py [ARGS...])")

    @staticmethod
    def unknown_option(word: str, options: list) -> bool:
        """Is `word` an option this parser does not have (not a negative number, not `-j4` for `-j 4`)?"""
        if not word.startswith("-") or word in ("-", "--") or word.split("=", 1)[0] in options:
            return False
        if not word.startswith("--") and word[:2] in options:
            return False
        try:
            float(word)
        except ValueError:
            return True
        return False


def split_program(parser: argparse.ArgumentParser, argv: list) -> tuple:
    """(the command's own arguments, the program it runs and that program's arguments).  The program starts
    after `--`, or (when `--` is left out) at the first word that is neither one of the command's options nor
    an option's value: `python`, a script, `-m MODULE`.  Everything after belongs to the program, however
    much it looks like an option.  Which options take a value is read from the parser itself.  The parser keeps
    the program, so that its errors can tell an option given after the program (Parser.misplaced)."""
    if getattr(parser, "program_after_dashes", False):  # it has a positional of its own (migrate PROJECT)
        return (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    valued = {s for a in parser._actions if a.option_strings and a.nargs != 0 for s in a.option_strings}
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            parser.program = argv[i + 1:]  # type: ignore[attr-defined]
            return argv[:i], argv[i + 1:]
        if token == "-m":
            break
        if token.split("=", 1)[0] in valued:
            i += 1 if "=" in token else 2
        elif token.startswith("-"):  # a flag, -oDIR, or an unknown option: argparse judges it
            i += 1
        else:
            break
    parser.program = argv[i:]  # type: ignore[attr-defined]
    return argv[:i], argv[i:]
