"""The vendor kernels' dtype limits (kb/sim/dtypes/<target>.toml): for an op the vendor implements, the dtypes one
argument may have; the simulated kernel raises the vendor's message for any other, before it runs.

Each [[limit]] cites the vendor source or document it was read from.  A limit may name the chips it holds for;
`for_device` keeps those of the simulated chip.  `decompose` names vendor ops that route to PyTorch's own
decomposition, which the simulator then decomposes.  Plain data; no torch here.
"""
from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path

FOLDER = Path(__file__).resolve().parent.parent / "kb" / "sim" / "dtypes"
ERRORS = ("RuntimeError", "NotImplementedError")
# ops the extension implements itself (not host kernels) whose kernel checks a limit given for them
OWN_KERNELS = ("convolution_overrideable", "convolution_backward_overrideable")
FIELDS = {"ops", "argument", "allowed", "error", "message", "source", "chips", "note"}


def _file(target: str) -> dict:
    path = FOLDER / f"{target}.toml"
    if not path.is_file():
        return {}
    from ..core.tomlfile import tomllib

    return tomllib.loads(path.read_text(encoding="utf-8"))


def limits(target: str) -> list:
    """The [[limit]] tables of a target's file, checked for shape (a malformed file is our bug: ValueError)."""
    path = FOLDER / f"{target}.toml"
    data = _file(target)
    if data and data.get("target") != target:
        raise ValueError(f"{path.name}: target is {data.get('target')!r}, not {target!r}")
    rows = data.get("limit", [])
    for i, row in enumerate(rows):
        where = f"{path.name} limit {i + 1}"
        if set(row) - FIELDS:
            raise ValueError(f"{where}: unknown fields {sorted(set(row) - FIELDS)}")
        for key in ("ops", "argument", "allowed", "message", "source"):
            if not row.get(key):
                raise ValueError(f"{where}: no {key}")
        if row.get("error", "RuntimeError") not in ERRORS:
            raise ValueError(f"{where}: error must be one of {', '.join(ERRORS)}")
    return rows


def decomposed(target: str) -> list:
    """Ops the vendor registers itself whose kernel routes to the ops PyTorch's decomposition calls (the file's
    `decompose`, each cited there): the simulator decomposes them so that those ops' limits apply."""
    return list(_file(target).get("decompose", []))


def for_device(target: str, chip: str) -> list:
    """(op key, argument, allowed ScalarType names, message, raises NotImplementedError) for the extension, one per
    op key of every limit that holds for `chip` (a limit's `chips` are names or glob patterns; none: every chip).
    Two limits for one op key on one chip are a data error."""
    out: dict = {}
    for row in limits(target):
        if row.get("chips") and not any(fnmatchcase(chip, pattern) for pattern in row["chips"]):
            continue
        for op in row["ops"]:
            if op in out:
                raise ValueError(f"{target}.toml: two dtype limits for {op} on {chip}")
            out[op] = (op, row["argument"], list(row["allowed"]), row["message"],
                       row.get("error", "RuntimeError") == "NotImplementedError")
    return list(out.values())
