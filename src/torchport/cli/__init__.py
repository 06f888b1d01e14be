"""The `torchport` command line: `main`, the parser built from one module per command (its arguments, its run,
its text output), and the one way a command line is read.  The exit-status policy is `exits` (docs/cli.md).

Usage errors are one line on stderr with a hint and exit 2 (common.Parser).  A command that runs a program gets
it split off one way for all of them (common.split_program).  Names that come from the user's files (paths, op
names, log lines) are printed through `core.names.printable`, so they cannot forge output lines or drive the
terminal.  Building the parser imports no engine: each command imports what it uses when it runs, and a command
line that names one command imports only that command's module (start-up: bench/startup_bench.py).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Optional

from ..core.errors import UsageError
from ..core.version import __version__
from . import exits
from .common import Parser, split_program

# The command modules, in the order `torchport --help` lists them, and the command names each one adds.
COMMANDS = (("migrate", ("migrate",)), ("convert", ("convert",)), ("analyze", ("analyze",)), ("check", ("check",)),
            ("port_ext", ("port-ext",)), ("run", ("run",)), ("sim", ("sim",)), ("ops", ("ops",)),
            ("profile", ("profile", "profile-diff")), ("doctor", ("doctor",)), ("explain", ("explain",)),
            ("debug", ("compare", "debug")), ("ckpt", ("ckpt",)), ("export", ("export",)), ("rules", ("rules",)),
            ("targets", ("targets",)))
MODULE_OF = {name: module for module, names in COMMANDS for name in names}


def build_parser(only: Optional[tuple] = None) -> argparse.ArgumentParser:
    """The parser of every command, or of the command modules named in `only` (what one command line needs)."""
    ap = Parser(prog="torchport", description="Move CUDA PyTorch projects to other accelerators.")
    ap.add_argument("--version", action="version", version=f"torchport {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module, _names in COMMANDS:
        if only is None or module in only:
            importlib.import_module(f"{__name__}.{module}").add(sub)
    return ap


def _modules_for(argv: list) -> Optional[tuple]:
    """The command modules a command line needs: its command's, none for --version alone, else all of them (None:
    --help lists every command, and an unknown one is told the closest name)."""
    if argv == ["--version"]:
        return ()
    return (MODULE_OF[argv[0]],) if argv and argv[0] in MODULE_OF else None


def main(argv=None) -> int:
    """Run one command; its exit code (exits.py)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    state = {"command": "torchport"}

    def work() -> int:
        args = parse(argv)
        state["command"] = command_name(args)
        return args.func(args)

    return exits.guarded(work, lambda: state["command"])


def _chosen(parser: argparse.ArgumentParser, argv: list) -> tuple:
    """(the subparser the leading words of argv choose, how many words chose it)."""
    depth = 0
    while depth < len(argv):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or argv[depth] not in subs[0].choices:
            break
        parser = subs[0].choices[argv[depth]]
        depth += 1
    return parser, depth


def parse(argv: list) -> argparse.Namespace:
    """The parsed command line; UsageError when it names no command.  A command that runs a program gets it,
    split off one way for all of them (common.split_program), as `args.program`."""
    if argv[:2] == ["profile", "diff"]:
        argv = ["profile-diff", *argv[2:]]
    parser = build_parser(_modules_for(argv))
    chosen, depth = _chosen(parser, argv)
    own, program = argv[depth:], None
    if getattr(chosen, "takes_program", False):
        own, program = split_program(chosen, own)
        argv = argv[:depth] + own
    chosen.words = own[:own.index("--")] if "--" in own else own
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the command's own parser, which knows its options (and so the closest one)
        chosen.error(f"unrecognized arguments: {' '.join(extra)}")
    if program is not None:
        args.program = program
    if not getattr(args, "func", None):
        if args.command == "ops":
            raise UsageError("ops needs a subcommand: check or record (see `torchport ops --help`)")
        raise UsageError("a COMMAND is needed (see `torchport --help`)")
    return args


def command_name(args) -> str:
    """`convert`, `ops check`, `profile diff`...: how the user spelled the command."""
    if args.command == "profile-diff":
        return "profile diff"
    sub = getattr(args, "ops_command", None) or getattr(args, "debug_command", None) or getattr(args, "ckpt_command", None) \
        or getattr(args, "export_command", None)
    return " ".join(filter(None, (args.command, sub)))
