"""The shared before/after helper for code cases: one file converted for a target, as `torchport convert FILE`
does, with the codes in preview reported too (every code is tested, whatever its status)."""
from __future__ import annotations

from pathlib import Path

from torchport.converter.run import Converter
from torchport.core.suppress import Selection

ROOT = Path(__file__).resolve().parent / "codes"


def converted(name: str, before: str, target: str, **options) -> tuple:
    """(the converted text, the findings) of one Python or shell file named `name`."""
    options.setdefault("selection", Selection(preview=True))
    kind = "shell" if name.endswith(".sh") else "python"
    new, findings, _lines = Converter(target, **options).convert_text(name, before.encode(), kind)
    return (new.decode() if new is not None else before), findings


def cases() -> list:
    """(code, case name, target, before path, after path) of every case folder."""
    out = []
    for folder in sorted(p for p in ROOT.iterdir() if p.is_dir()):
        for after in sorted(folder.glob("*.*.py")) + sorted(folder.glob("*.*.sh")):
            case, target = after.name.split(".")[:2]
            before = folder / f"{case}{after.suffix}"
            out.append((folder.name, case, target, before, after))
    return out
