"""Configuration files (YAML, JSON, TOML, INI) and other files convert copies unchanged.

Values such as `device: cuda` or `backend: nccl` choose the device of a converted program as surely as
code does, but a config's meaning belongs to the project: they are reported with file:line, never
rewritten.  Other files that mention CUDA (docs, requirements, Dockerfiles) are counted, so a summary
never suggests that nothing outside the code needs a look.
"""
from __future__ import annotations

import bisect
import re

from ..backends import Target
from ..core import codes
from ..core.finding import ADVICE, Finding
from .checkers import Phase, checker

CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".conf")
MENTION_BYTES = 1 << 20   # how much of a file convert copies is searched for "cuda"
# a key naming a device or a backend, then `:` or `=`, then a CUDA device or NCCL, alone on the line
# (Linear on any text: the key is the whole run of key characters, read once by the lookahead for the word
# and once as the key; the indent is taken whole, by a lookahead and a backreference (an atomic group, which
# Python before 3.11 lacks); no two runs of blanks are side by side.)
_KEY = r"(?=[\w.-]*?(?:device|backend|accelerator))(?P<key>[\w.-]+)"
_SETTING = re.compile(r"""^(?=(?P<indent>[ \t-]*))(?P=indent)["']?""" + _KEY + r"""["']?[ \t]*[:=][ \t]*"""
                      r"""["']?(?P<value>cuda(?::\d+)?|nccl|NCCL)["']?[ \t]*(?:,[ \t]*)?(?:[#;][^\r\n]*)?\r?$""",
                      re.IGNORECASE | re.MULTILINE)
# in a YAML flow mapping: {device: cuda, backend: nccl}
_FLOW = re.compile(r"[{,][ \t]*" + _KEY + r"[ \t]*:[ \t]*(?P<value>cuda(?::\d+)?|nccl)[ \t]*(?=[,}])", re.IGNORECASE)


# the same as a quoted pair anywhere on a line (JSON, inline tables): "device": "cuda:0"
_PAIR = re.compile(r"""["']""" + _KEY + r"""["'][ \t]*[:=][ \t]*["'](?P<value>cuda(?::\d+)?|nccl)["']""",
                   re.IGNORECASE)
_NEWLINE = re.compile(r"\n")


def is_config(rel: str) -> bool:
    return rel.lower().endswith(CONFIG_SUFFIXES)


@checker(codes.TP403, phase=Phase.CONFIG, triggers=("cuda", "nccl"))
def config_settings(rel: str, text: str, target: Target) -> list[Finding]:
    out: list[Finding] = []
    seen: set[tuple[int, str]] = set()
    found = [*_SETTING.finditer(text), *_PAIR.finditer(text), *_FLOW.finditer(text)]
    line_ends = [m.end() for m in _NEWLINE.finditer(text)] if found else []
    for m in sorted(found, key=lambda m: m.start()):
        line = bisect.bisect_right(line_ends, m.start()) + 1
        value = m.group("value")
        if (line, m.group("key")) in seen or value.lower() != "nccl" and not value.startswith("cuda"):
            continue  # found by both patterns; or "CUDA" (device names are lower case)
        seen.add((line, m.group("key")))
        if value.lower() == "nccl":
            new = target.backend if not target.backend_expr else "the backend torch.distributed picks for the device"
        elif target.device:
            new = target.device + (value[4:] if target.device_index else "")
        else:
            new = "the device torch.accelerator reports"
        out.append(Finding(rel, line, line, codes.TP403.id, "device-string", ADVICE,
                           old=m.group(0).strip(" \t\r\n{,"), message=f"config value {m.group('key')}: {value}: "
                                                           f"on {target.name} use {new}"))
    return out
