"""The fidelity suite's runner: read the rows (tests/fidelity/*.toml, format in README.md), run their probes under
`torchport sim` (one process, or one torchrun of 2, per target, options and environment), and judge each outcome
against the row's `expect`.  Imports no torch: the probes run in the simulated processes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

FOLDER = Path(__file__).resolve().parent
ROOT = FOLDER.parent.parent
TARGETS = ("npu", "mlu", "musa")
VERDICTS = ("faithful", "too strict", "too permissive", "not modelled")
AREAS = ("op", "autocast", "api", "device", "memory", "distributed", "dtype", "rng", "compile")
EXPECT_KINDS = ("ok", "value", "raises", "warns")
REQUIRED = ("id", "target", "area", "behaviour", "source", "vendor", "probe", "expect", "verdict")
OPTIONAL = {"why": "", "ranks": 1, "options": [], "env": {}, "alone": False}
TIMEOUT = 600


@dataclass(frozen=True)
class Row:
    id: str
    target: str
    area: str
    behaviour: str
    source: str
    vendor: str
    probe: str
    expect: str
    verdict: str
    file: str
    why: str = ""
    ranks: int = 1
    options: tuple = ()
    env: tuple = ()
    alone: bool = False

    @property
    def group(self) -> tuple:
        """Rows of one group run in one process (or one torchrun)."""
        return (self.target, self.ranks, self.options, self.env, self.id if self.alone else "")


class RowError(ValueError):
    """A row that does not follow README.md's format."""


def _row(raw: dict, file: str) -> Row:
    where = f"{file}: row {raw.get('id', '?')}"
    missing = [k for k in REQUIRED if not isinstance(raw.get(k), str) or not raw[k].strip()]
    unknown = set(raw) - set(REQUIRED) - set(OPTIONAL)
    if missing or unknown:
        raise RowError(f"{where}: {'missing ' + ', '.join(missing) if missing else ''}"
                       f"{' unknown ' + ', '.join(sorted(unknown)) if unknown else ''}")
    values = {**OPTIONAL, **raw}
    if values["target"] not in TARGETS:
        raise RowError(f"{where}: target must be one of {', '.join(TARGETS)}")
    if values["verdict"] not in VERDICTS:
        raise RowError(f"{where}: verdict must be one of {', '.join(VERDICTS)}")
    if values["area"] not in AREAS:
        raise RowError(f"{where}: area must be one of {', '.join(AREAS)}")
    if values["verdict"] != "faithful" and not values["why"].strip():
        raise RowError(f"{where}: a row that is not faithful says why")
    kind = values["expect"].split(":", 1)[0].strip()
    if kind not in EXPECT_KINDS or (kind != "ok" and ":" not in values["expect"]):
        raise RowError(f"{where}: expect is ok, or value: / raises: / warns: followed by a text")
    if values["ranks"] not in (1, 2):
        raise RowError(f"{where}: ranks is 1 or 2")
    try:
        compile(values["probe"], where, "exec")
    except SyntaxError as e:
        raise RowError(f"{where}: probe is not Python: {e}") from None
    return Row(**{k: values[k] for k in REQUIRED}, file=file, why=values["why"], ranks=values["ranks"],
               options=tuple(values["options"]), env=tuple(sorted(values["env"].items())), alone=values["alone"])


def load_rows(folder: Path = FOLDER) -> list:
    """Every row of every <area>.toml, in file order; ids unique across files."""
    rows, seen = [], {}
    for path in sorted(folder.glob("*.toml")):
        for raw in tomllib.loads(path.read_text(encoding="utf-8")).get("row", []):
            row = _row(raw, path.name)
            if row.id in seen:
                raise RowError(f"{path.name}: row {row.id} also in {seen[row.id]}")
            seen[row.id] = path.name
            rows.append(row)
    return rows


PREAMBLE = '''\
import ast, json, os, sys, warnings
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
import {register} as vendor
DEV = {device!r}
dev = getattr(torch, DEV)
RANK = int(os.environ.get("RANK", "0"))
if {ranks} > 1:
    import datetime
    dev.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group({backend!r}, timeout=datetime.timedelta(seconds=60))
OUT = open(os.path.join({folder!r}, f"outcome-{{RANK}}.jsonl"), "w")


def probe(row_id, source):
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    names = dict(torch=torch, nn=nn, F=F, dist=dist, vendor=vendor, DEV=DEV, dev=dev, RANK=RANK)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            exec(compile(tree, row_id, "exec"), names)
            value = eval(compile(ast.Expression(last.value), row_id, "eval"), names) if last else None
            outcome = {{"kind": "ok", "value": repr(value)}}
        except BaseException as e:
            outcome = {{"kind": "raises", "error": f"{{type(e).__name__}}: {{e}}"}}
    outcome["warnings"] = [str(w.message) for w in caught]
    OUT.write(json.dumps({{"id": row_id, **outcome}}) + "\\n")
    OUT.flush()


'''


def script(rows: list, folder: Path) -> str:
    """The probe program of one group: each row's probe in turn, each outcome a JSON line."""
    from torchport.backends import load_target  # no torch: the target's data only

    t = load_target(rows[0].target)
    text = PREAMBLE.format(register=t.register, device=t.device, ranks=rows[0].ranks, backend=t.backend,
                           folder=str(folder))
    for row in rows:
        text += f"probe({row.id!r}, {textwrap.dedent(row.probe)!r})\n"
    if rows[0].ranks > 1:
        text += "dist.destroy_process_group()\n"
    return text + "OUT.close()\n"


@dataclass
class GroupRun:
    """What one group's process left: each rank's outcomes by row id, and its output when something went wrong."""
    outcomes: dict = field(default_factory=dict)     # rank -> {id: outcome}
    returncode: int = 0
    stderr: str = ""


def run_group(rows: list, folder: Path) -> GroupRun:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "probes.py"
    path.write_text(script(rows, folder), encoding="utf-8")
    row = rows[0]
    python = [sys.executable]
    if row.ranks > 1:
        python += ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(row.ranks)]
    cmd = [sys.executable, "-m", "torchport", "sim", "--to", row.target, "--devices", str(row.ranks), *row.options,
           "--", *python, str(path)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1", **dict(row.env)}
    env.pop("TORCHPORT_TARGET", None)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=TIMEOUT, cwd=folder)
        returncode, stderr = p.returncode, p.stderr
    except subprocess.TimeoutExpired as e:
        returncode, stderr = -1, f"timed out after {TIMEOUT} s\n{e.stderr or ''}"
    run = GroupRun(returncode=returncode, stderr=stderr if isinstance(stderr, str) else stderr.decode(errors="replace"))
    for rank in range(row.ranks):
        lines = (folder / f"outcome-{rank}.jsonl")
        if lines.is_file():
            run.outcomes[rank] = {o["id"]: o for o in map(json.loads, lines.read_text().splitlines()) if o}
    return run


def judge(row: Row, outcome) -> str:
    """'' when the outcome is what the row expects, else why not (one line)."""
    if outcome is None:
        return "no outcome: the probe process ended before this row"
    kind, _, text = row.expect.partition(":")
    kind, text = kind.strip(), text.strip()
    got = (f"raised {outcome['error']}" if outcome["kind"] == "raises" else f"ran, result {outcome.get('value')}")
    if kind == "raises":
        return "" if outcome["kind"] == "raises" and text in outcome["error"] else f"expected to raise '{text}'; {got}"
    if outcome["kind"] != "ok":
        return f"expected to run; {got}"
    if kind == "value" and outcome["value"] != text:
        return f"expected result {text}; {got}"
    if kind == "warns" and not any(text in w for w in outcome["warnings"]):
        return f"expected a warning with '{text}'; {got}, warnings {outcome['warnings']}"
    return ""


def counts(rows: list) -> dict:
    """verdict -> {target: rows, 'all': rows}."""
    table = {v: dict.fromkeys((*TARGETS, "all"), 0) for v in VERDICTS}
    for row in rows:
        table[row.verdict][row.target] += 1
        table[row.verdict]["all"] += 1
    return table


def markdown_counts(rows: list) -> str:
    table = counts(rows)
    lines = ["| verdict | all | " + " | ".join(TARGETS) + " |", "|---|---|" + "---|" * len(TARGETS)]
    for verdict in VERDICTS:
        lines.append(f"| {verdict} | {table[verdict]['all']} | " + " | ".join(str(table[verdict][t]) for t in TARGETS) + " |")
    totals = {t: sum(table[v][t] for v in VERDICTS) for t in (*TARGETS, "all")}
    lines.append(f"| total | {totals['all']} | " + " | ".join(str(totals[t]) for t in TARGETS) + " |")
    return "\n".join(lines)
