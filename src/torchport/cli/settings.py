"""`[tool.torchport]` in the project's pyproject.toml, and `--select/--ignore`: the settings `check` and `convert`
share, merged with the command line (which wins).

The pyproject.toml read is the nearest one, walking up from the first INPUT (the folder itself, or a file's
folder), that has a `[tool.torchport]` table; `--no-config` reads none.  Keys:

    target = "npu"                      # --to when it is not given
    exclude = ["vendor/*", "*_pb2.py"]  # added to -e GLOB
    select = ["TP2", "TP501"]           # codes or prefixes reported (default: all); --select replaces it
    ignore = ["TP206"]                  # codes or prefixes left out; --ignore replaces it
    preview = true                      # also the codes in preview (--preview)
    baseline = ".torchport-baseline.json"   # check --baseline, relative to the pyproject.toml's folder
    [tool.torchport.per-file-ignores]
    "tests/*" = ["TP2"]                 # glob (relative to the pyproject.toml's folder; no `/`: a file name)

A value of the wrong type, an unknown key or an unknown code is one line naming the file and the key (exit 2).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..core import suppress
from ..core.errors import UsageError
from ..core.files import normal_glob
from ..core.names import printable
from ..core.words import closest

KEYS = ("target", "exclude", "select", "ignore", "per-file-ignores", "baseline", "preview")


@dataclass
class Settings:
    path: Optional[Path] = None       # the pyproject.toml read
    target: Optional[str] = None
    exclude: tuple = ()
    select: tuple = ()
    ignore: tuple = ()
    preview: bool = False
    per_file: tuple = ()              # ((glob, (codes...)), ...)
    baseline: Optional[str] = None    # a path (made absolute)

    @property
    def folder(self) -> Optional[Path]:
        return self.path.parent if self.path is not None else None


def find(start: str) -> Optional[Path]:
    """The nearest pyproject.toml with a [tool.torchport] table, from `start`'s folder up; None when none."""
    here = Path(os.path.abspath(start))
    if not here.is_dir():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        try:
            text = candidate.read_text(encoding="utf-8", errors="replace") if candidate.is_file() else ""
        except OSError:
            continue
        if "tool.torchport" in text:
            return candidate
    return None


def load(path: Path) -> Settings:
    """Read and check [tool.torchport] of one pyproject.toml; UsageError naming the file and key."""
    from ..core.tomlfile import tomllib

    where = printable(str(path))
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{where}: cannot read it ({getattr(e, 'strerror', None) or e})") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{where}: not valid TOML ({e})") from None
    table = data.get("tool", {}).get("torchport") if isinstance(data.get("tool"), dict) else None
    if table is None:
        return Settings()
    if not isinstance(table, dict):
        raise UsageError(f"{where}: [tool.torchport] must be a table")
    out = Settings(path)
    for key, value in table.items():
        name = f"{where}: [tool.torchport] {key}"
        if key not in KEYS:
            close = closest(key, KEYS)
            raise UsageError(f"{where}: [tool.torchport] unknown key '{printable(key)}'"
                             + (f" (did you mean {close}?)" if close else f" (known: {', '.join(KEYS)})"))
        if key == "target":
            if not isinstance(value, str):
                raise UsageError(f"{name}: must be a string (npu, mlu, ...)")
            from .common import target_name

            try:
                out.target = target_name(value if not value.endswith(".toml") else str(path.parent / value))
            except UsageError as e:
                raise UsageError(f"{name}: {e}") from None
        elif key == "baseline":
            if not isinstance(value, str) or not value:
                raise UsageError(f"{name}: must be a file path (a string)")
            out.baseline = str(path.parent / value)
        elif key == "exclude":
            out.exclude = tuple(normal_glob(g, f"{name}: a glob") for g in _strings(value, name))
        elif key in ("select", "ignore"):
            setattr(out, key, _codes(value, name, selecting=key == "select"))
        elif key == "preview":
            if not isinstance(value, bool):
                raise UsageError(f"{name}: must be true or false")
            out.preview = value
        else:
            if not isinstance(value, dict):
                raise UsageError(f'{name}: must be a table of glob = ["codes"]')
            out.per_file = tuple((normal_glob(glob, f"{name}: a glob"),
                                  _codes(codes, f"{name} {glob!r}", selecting=False))
                                 for glob, codes in value.items())
    return out


def _strings(value, name: str) -> tuple:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{name}: must be a list of strings")
    return tuple(value)


def _codes(value, name: str, selecting: bool = True) -> tuple:
    try:
        return suppress.parse_codes(value if isinstance(value, str) else _strings(value, name), name, selecting)
    except ValueError as e:
        raise UsageError(str(e)) from None


def codes_option(option: str):
    """The type of `--select/--ignore TP201,TP2`: codes or prefixes, checked against the catalogue (a
    UsageError: one line naming the option, with the closest code)."""
    def read(text: str) -> tuple:
        try:
            return suppress.parse_codes(text, option, selecting=option == "--select")
        except ValueError as e:
            raise UsageError(str(e)) from None
    return read


def add_options(p) -> None:
    """--select, --ignore, --no-config for check and convert."""
    p.add_argument("--select", type=codes_option("--select"), metavar="CODES",
                   help="report (and, for convert, make) only these codes: comma-separated codes or prefixes "
                        "(TP2,TP501); replaces [tool.torchport] select")
    p.add_argument("--ignore", type=codes_option("--ignore"), metavar="CODES",
                   help="leave these codes out (a suppressed change is not made); replaces [tool.torchport] ignore")
    p.add_argument("--preview", action="store_true", default=None,
                   help="also report (and, for convert, make) the codes in preview (`torchport rules` marks them); "
                        "as preview = true in [tool.torchport]")
    p.add_argument("--no-config", action="store_true",
                   help="do not read [tool.torchport] from pyproject.toml")


def resolve(args, inputs: list, command: str) -> Settings:
    """The settings of this run: the project's [tool.torchport] (unless --no-config) under the command line.
    Sets args.to (a UsageError when neither gives one) and returns the settings read."""
    settings = Settings()
    if not args.no_config and inputs:
        path = find(inputs[0])
        if path is not None:
            settings = load(path)
    if args.to is None:
        if settings.target is None:
            raise UsageError(f"the following arguments are required: -t/--to (see `torchport {command} --help`)")
        args.to = settings.target
    return settings


def selection(args, settings: Settings, base: str) -> suppress.Selection:
    """The rule selection of this run; `base` is the folder findings' paths are relative to."""
    prefix = strip = ""
    if settings.per_file and settings.folder is not None:
        rel = Path(os.path.relpath(os.path.abspath(base), settings.folder)).as_posix()
        if rel == ".." or rel.startswith("../"):  # the project is inside `base`, or elsewhere
            inner = Path(os.path.relpath(settings.folder, os.path.abspath(base))).as_posix()
            strip = "" if inner.startswith("..") else inner
        elif rel != ".":
            prefix = rel
    return suppress.Selection(select=args.select if args.select is not None else settings.select,
                              ignore=args.ignore if args.ignore is not None else settings.ignore,
                              per_file=settings.per_file, prefix=prefix, strip=strip,
                              preview=bool(args.preview) or settings.preview)


def print_warnings(findings) -> None:
    """On stderr, whatever the output format: each unknown code in a `# torchport: ignore[...]` comment."""
    import sys

    for f in findings:
        if f.rule == suppress.NEVER and f.action == "advice" and suppress.COMMENT_NOTE in f.message:
            print(f"torchport: warning: {printable(f.file)}:{f.line}: {printable(f.message)}", file=sys.stderr)
