"""Dump two runs (say, on the GPU and on the target) and compare them op by op, step by step.

    with dump("run_gpu", model, tensors=True) as d:     # on one machine (or: torchport debug dump)
        train_step(); d.step()
    ...                                                  # the same on the other
    torchport compare run_gpu run_npu -o cmp/            # or compare_runs("run_gpu", "run_npu")

A dump folder holds `rank<R>/ops.jsonl`: one line per op output (a device-neutral name
`module/op/phase/call/output`, its step, dtype, shape, statistics) and, at the end of each step, one
per parameter and per gradient (`module/attribute/param`, `module/attribute/grad`).  With
tensors=True the tensors go to `rank<R>/tensors_<k>.pt` (weights_only-loadable, one step per file,
a new file every ~64 MB so memory stays bounded).

The two sequences are aligned by sequence matching on (step, module, op, phase, output): an op that
one run has and the other has not (a different kernel decomposition, an extra cast) does not shift
the rest.  Each aligned pair gets the relative error and verdict of verdict.py (from tensors when
both dumps have them, else from the statistics), Cosine, MaxAbsErr, MaxRelErr and the share of
elements within 0.1% and 0.5%; the first pair that fails is the first divergence, named with its step.

A dump is untrusted input: each line is checked (types, finite counts; NaN/Inf statistics are kept
and fail their pair), tensor files must be plain names inside the dump folder (no `..`, no absolute
path, no link leading out), and every problem is one UsageError naming the file, line and field.
"""
from __future__ import annotations

import collections
import difflib
import io
import json
import math
import os
import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, TextIO, cast

import torch
from torch.utils._python_dispatch import _disable_current_modes

from ..core import writes
from ..core.csvfile import write_csv
from ..core.errors import UsageError
from ..core.files import is_within
from ..core.jsonfile import Fields, read_json_lines, short
from ..core.names import md_cell, md_code
from .base import ALLOCATION, OpMode, is_random, op_name, phase
from .metrics import Metrics, worst_first
from .modules import ROOT
from .verdict import (
    REDUCED_FLOAT32,
    SAME_DTYPE_TOLERANCES,
    entry_rms,
    least_precise,
    pair_precision,
    passes,
    statistic_errors,
    tensor_errors,
)

CHUNK_BYTES = 64 << 20
PARAMETER, GRADIENT = "param", "grad"   # the phase of a parameter's and a gradient's entries


def _stats(t: torch.Tensor) -> dict:
    x = t.detach()
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(torch.float64)
    x = x.to(torch.float64) if not x.is_complex() else torch.view_as_real(x).to(torch.float64)
    finite = torch.isfinite(x)
    f = x[finite]
    return {"min": float(f.min()) if f.numel() else None, "max": float(f.max()) if f.numel() else None,
            "mean": float(f.mean()) if f.numel() else None, "norm": float(f.norm()) if f.numel() else 0.0,
            "nan": int(torch.isnan(x).sum()), "inf": int(torch.isinf(x).sum())}


class RunDumper(OpMode):
    """Writes one ops.jsonl line per op output and, at the end of each step (step(), and at exit when
    ops ran since the last one), one per parameter and per gradient of the models (given, or found as
    the modules called at top level).  Tensor files hold one step each, so an entry is found by
    (file, name); ops.jsonl is written under a temporary name and renamed at exit."""

    def __init__(self, folder, model=None, *, tensors: bool = False, skip_views: bool = True,
                 parameters: bool = True, **options):
        super().__init__(model, **options)
        self.folder = Path(folder) / f"rank{self.rank}"
        self.tensors, self.skip_views, self.parameters = tensors, skip_views, parameters
        self.counter: Counter[tuple[str, str, str]] = Counter()   # (module, op, phase) -> calls this step
        self._lines: Optional[TextIO] = None
        self._partial: Optional[str] = None
        self._chunk: dict = {}
        self._chunk_bytes = 0
        self._chunks = 0
        self._ops_in_step = 0
        self.entries = 0
        self.steps_dumped = 0

    def __enter__(self):
        if self.enabled:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, self._partial = tempfile.mkstemp(prefix=".ops.jsonl.", dir=self.folder)
            os.fchmod(fd, 0o666 & ~writes.UMASK)
            self._lines = os.fdopen(fd, "w", encoding="utf-8")
        return super().__enter__()

    def _write(self, entry: dict, t: torch.Tensor) -> None:
        if t.layout != torch.strided or t.is_quantized:  # sparse gradients (Embedding(sparse=True)), qint tensors
            return
        entry.update(step=self.step_index, dtype=str(t.dtype).replace("torch.", ""), shape=list(t.shape), **_stats(t))
        if self.tensors:
            entry["file"] = f"tensors_{self._chunks}.pt"
            self._chunk[entry["name"]] = t.detach().to("cpu").clone()
            self._chunk_bytes += t.numel() * t.element_size()
        cast(TextIO, self._lines).write(json.dumps(entry) + "\n")   # only while dumping: open
        self.entries += 1

    def on_op(self, func, args, kwargs):
        out = func(*args, **kwargs)
        base = func._schema.name
        if base in ALLOCATION or is_random(func) or (self.skip_views and (func.is_view or func._schema.is_mutable)):
            return out
        outputs = [out] if isinstance(out, torch.Tensor) else [t for t in out if isinstance(t, torch.Tensor)] \
            if isinstance(out, (list, tuple)) else []
        name, module, ph = op_name(func), self.module or "(top)", phase()
        key = (module, name, ph)
        call = self.counter[key]
        self.counter[key] += 1
        self._ops_in_step += 1
        with _disable_current_modes():
            for i, t in enumerate(outputs):
                self._write({"name": f"{module}/{name}/{ph}/{call}/{i}", "module": module, "op": name, "phase": ph,
                             "call": call, "output": i}, t)
            if self._chunk_bytes >= CHUNK_BYTES:
                self._flush_chunk()
        return out

    def _dump_parameters(self) -> None:
        """Each parameter and its gradient, once, named by module path and attribute."""
        seen = set()
        with _disable_current_modes():
            for root in self.tracker.roots:
                for path, mod in root.named_modules():
                    module = self.tracker.paths.get(id(mod), path or ROOT)
                    for attr, p in mod.named_parameters(recurse=False):
                        if id(p) in seen:
                            continue
                        seen.add(id(p))
                        # the gradient first: the parameter dumped at a step's end was updated from it, so a
                        # divergence of the gradient is the first one compare names, not the update it caused
                        for ph, t in ((GRADIENT, p.grad), (PARAMETER, p)):
                            if isinstance(t, torch.Tensor):
                                self._write({"name": f"{module}/{attr}/{ph}", "module": module, "op": attr,
                                             "phase": ph, "call": 0, "output": 0}, t)

    def _flush_chunk(self) -> None:
        if self._chunk:
            data = io.BytesIO()
            torch.save(self._chunk, data)
            writes.write_file(self.folder / f"tensors_{self._chunks}.pt", data.getvalue())
            self._chunks += 1
        self._chunk, self._chunk_bytes = {}, 0

    def _end_step(self) -> None:
        if self.in_window:
            if self.parameters:
                self._dump_parameters()
            self.steps_dumped += 1
        self._flush_chunk()  # a tensor file never holds two steps: names repeat from step to step
        self.counter.clear()  # call indices restart per step
        self._ops_in_step = 0

    def on_step_end(self) -> None:
        if self._lines is not None:
            self._end_step()

    def on_exit(self) -> None:
        if self._lines is None:
            return
        if self._ops_in_step:
            self._end_step()
        self._flush_chunk()
        self._lines.close()
        self._lines = None
        os.replace(cast(str, self._partial), self.folder / "ops.jsonl")   # made with _lines


def dump(folder, model=None, **options) -> RunDumper:
    """A context manager dumping per-op statistics (and tensors=True: the outputs), with the parameters
    and gradients at each step, to `folder`."""
    return RunDumper(folder, model, **options)


# ----------------------------------------------------------------- comparing two dumps
@dataclass
class Pair:
    a: Optional[dict]
    b: Optional[dict]
    metrics: Optional[Metrics] = None
    passed: Optional[bool] = None
    source: str = ""        # "tensors" or "statistics"
    tolerance: float = 0.0  # the largest relative error allowed here
    error: float = 0.0      # the relative error the verdict reads (verdict.py)

    @property
    def step(self) -> int:
        return cast(dict, self.a or self.b)["step"]   # a pair holds one entry at least

    @property
    def entries(self) -> tuple[dict, dict]:
        """(A's entry, B's entry) of a compared pair (one with metrics: both runs have the output)."""
        return cast(dict, self.a), cast(dict, self.b)

    def why(self) -> str:
        """What failed (or the error and the tolerance, when it passed), of a compared pair."""
        m = cast(Metrics, self.metrics)
        if m.shape_mismatch:
            a, b = self.entries
            return f"shapes differ ({a['shape']} vs {b['shape']})"
        if m.nonfinite_mismatch:
            return "NaN/Inf differ between the runs"
        over = "over" if not self.error <= self.tolerance else "within"
        return f"relative error {self.error:.3g} {over} the tolerance {self.tolerance:.3g}"


@dataclass
class RunComparison:
    pairs: list = field(default_factory=list)
    only_a: int = 0
    only_b: int = 0

    @property
    def compared(self) -> list:
        return [p for p in self.pairs if p.metrics is not None]

    @property
    def failed(self) -> list:
        return [p for p in self.compared if not p.passed]

    @property
    def first_divergence(self) -> Optional[Pair]:
        return self.failed[0] if self.failed else None

    @property
    def worst(self) -> Optional[Pair]:
        """The compared pair with the largest relative error (NaN first)."""
        return min(self.compared, key=lambda p: worst_first(p.error), default=None)


FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # what `file` may hold: a name in the rank folder


def _entry(value, where: str) -> dict:
    """One ops.jsonl line, checked: the fields comparing reads, with the types the dumper writes.
    min/max/mean are null when the output has no finite element; NaN/Infinity statistics are kept
    (they fail the comparison, see verdict.statistic_errors)."""
    f = Fields(value, where)
    entry = dict(value, name=f.text("name"), module=f.text("module"), op=f.text("op"), phase=f.text("phase"),
                 output=f.count("output"), step=f.count("step", 0), dtype=f.text("dtype"), shape=f.counts("shape"),
                 nan=f.count("nan"), inf=f.count("inf"), norm=f.number("norm", finite=False), file=f.text("file", None))
    for k in ("min", "max", "mean"):
        entry[k] = f.number(k, finite=False, nullable=True)
    return entry


def _check_inside(name: str, rank_dir: Path, folder: Path, what: str) -> None:
    """Refuse a tensor file that is not a plain name in the rank folder, or a link leading out of the dump."""
    if not FILE_NAME.fullmatch(name):
        raise UsageError(f"{what} must name a file in the dump folder, not {short(name)}")
    if not is_within((rank_dir / name).resolve(), folder.resolve()):
        raise UsageError(f"{what}: {short(name)} is a link leading outside the dump folder {folder}")


def _load_entries(folder, rank: int) -> list:
    """The checked lines of <folder>/rank<R>/ops.jsonl (a UsageError for anything a dump does not hold)."""
    folder = Path(folder)
    rank_dir = folder / f"rank{rank}"
    path = rank_dir / "ops.jsonl"
    if path.exists() and not path.is_file():  # a pipe or a device could be read forever
        raise UsageError(f"{path} is not a regular file")
    if not path.is_file():
        raise UsageError(f"no dump for rank {rank} in {folder} (expected {path})")
    if not is_within(path.resolve(), folder.resolve()):
        raise UsageError(f"{path} is a link leading outside the dump folder {folder}")
    entries, files = [], set()
    for line, value in read_json_lines(path):
        entry = _entry(value, f"{path}:{line}")
        if entry["file"] is not None and entry["file"] not in files:
            _check_inside(entry["file"], rank_dir, folder, f"{path}:{line}: field 'file'")
            files.add(entry["file"])
        entries.append(entry)
    if not entries:
        raise UsageError(f"{path} holds no op outputs: nothing to compare")
    held = Counter((e["file"], e["name"]) for e in entries if e["file"] is not None)
    for e in entries:  # one tensor named for two entries (a dump of an older torchport, whose steps shared a
        if held.get((e["file"], e["name"]), 0) > 1:  # file): it belongs to neither for sure, use statistics
            e["file"] = None
    return entries


class _Tensors:
    """Loads tensor chunks lazily, one file at a time (file names are checked by _load_entries)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.name: Optional[str] = None   # the chunk file loaded
        self.data: dict = {}

    def get(self, entry: dict):
        file = entry.get("file")
        if not file:
            return None
        if file != self.name:
            self.data = _load_chunk(self.folder / file)
            self.name = file
        t = self.data.get(entry["name"])
        if t is not None and not (isinstance(t, torch.Tensor) and t.layout == torch.strided and not t.is_quantized):
            raise UsageError(f"{self.folder / file}: {short(entry['name'])} is not a dense tensor")
        return t


def _load_chunk(path: Path) -> dict:
    if not path.is_file():
        raise UsageError(f"{path} is missing or not a regular file (named by ops.jsonl)")
    try:
        data = torch.load(path, weights_only=True)
    except Exception as e:  # noqa: BLE001 - torch.load raises many types (and long messages) for bytes it cannot read
        raise UsageError(f"{path}: not a tensor file torchport wrote (torch.load with weights_only=True: "
                         f"{type(e).__name__})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a dict of tensors, not {type(data).__name__}")
    return data


def compare_runs(a_folder, b_folder, *, rank: int = 0, rtol: Optional[float] = None) -> RunComparison:
    """Align the op sequences of two dumps and judge each pair (A: the reference, e.g. the GPU run) by
    verdict.py's relative error; `rtol` replaces the dtype's tolerance everywhere."""
    if rtol is not None and not (math.isfinite(rtol) and rtol >= 0):
        raise UsageError(f"--rtol must be a number of at least 0, not {rtol}")
    a_entries, b_entries = _load_entries(a_folder, rank), _load_entries(b_folder, rank)
    key = lambda e: (e["step"], e["module"], e["op"], e["phase"], e["output"])  # noqa: E731 - the alignment key
    matcher = difflib.SequenceMatcher(None, [key(e) for e in a_entries], [key(e) for e in b_entries], autojunk=False)
    ta, tb = _Tensors(Path(a_folder) / f"rank{rank}"), _Tensors(Path(b_folder) / f"rank{rank}")
    scale: dict[tuple, float] = {}  # (step, phase) -> the largest rms of A's entries there
    for e in a_entries:
        scale[e["step"], e["phase"]] = max(scale.get((e["step"], e["phase"]), 0.0), entry_rms(e))
    result = RunComparison()
    # in order, then by what each output is: two branches the runs took in another order (their outputs out of
    # sequence) are paired by step, module path, op, phase, output and shape, and compared like the rest
    partner: dict = {}   # index in A -> index in B
    loose_a: list[int] = []
    loose_b: list[int] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            partner.update(zip(range(i1, i2), range(j1, j2)))
        else:
            loose_a += range(i1, i2)
            loose_b += range(j1, j2)
    waiting: dict = {}
    for j in loose_b:
        waiting.setdefault((key(b_entries[j]), tuple(b_entries[j]["shape"])), []).append(j)
    for i in loose_a:
        queue = waiting.get((key(a_entries[i]), tuple(a_entries[i]["shape"])))
        if queue:
            partner[i] = queue.pop(0)
    paired_b = set(partner.values())
    result.only_a = len(a_entries) - len(partner)
    result.only_b = len(b_entries) - len(paired_b)
    result.pairs += [Pair(None, b_entries[j]) for j in loose_b if j not in paired_b]
    seen_a = seen_b = None  # the least precise dtype each run has produced so far (in A's order)
    for i, ea in enumerate(a_entries):
        if i not in partner:
            seen_a = least_precise(ea["dtype"], seen_a)
            result.pairs.append(Pair(ea, None))
            continue
        eb = b_entries[partner[i]]
        seen_a, seen_b = least_precise(ea["dtype"], seen_a), least_precise(eb["dtype"], seen_b)
        tol, noise = pair_precision(seen_a, seen_b)
        tol = tol if rtol is None else rtol
        floor = noise * scale[ea["step"], ea["phase"]]
        x, y = ta.get(ea), tb.get(eb)
        if x is not None and y is not None:
            (m, error), source = tensor_errors(y, x, floor), "tensors"
        else:
            (m, error), source = statistic_errors(eb, ea, floor), "statistics"
        result.pairs.append(Pair(ea, eb, m, passes(m, error, tol), source, tol, error))
    return result


# ----------------------------------------------------------------- writers
COLUMNS = ("A name", "B name", "dtype", "shape", "Cosine", "MaxAbsErr", "MaxRelErr", "Within0.1%", "Within0.5%",
           "Tolerance", "step", "source", "Result")
RULE = ("a pair fails when its relative error rms(B - A) / max(rms(A), floor) (from statistics: the largest such "
        "error of min, max, mean and rms) is over the tolerance of the least precise dtype so far, or when NaN/Inf or "
        "the shapes differ; floor = noise * the largest rms(A) of its step and phase (docs/debug.md)")


def _number(x: float, spec: str) -> str:
    return "" if math.isnan(x) else format(x, spec)


def _row(p: Pair) -> tuple:
    e = cast(dict, p.a or p.b)   # a pair holds one entry at least
    if p.metrics is None:
        return (p.a["name"] if p.a else "", p.b["name"] if p.b else "", e["dtype"], e["shape"], "", "", "", "", "", "",
                e["step"], "", "only in A" if p.a else "only in B")
    m = p.metrics
    a, b = p.entries
    exact = p.source == "tensors"  # from statistics, cosine and the within shares are unknown: left empty
    return (a["name"], b["name"], e["dtype"], e["shape"], _number(m.cosine, ".6f") if exact else "",
            f"{m.max_abs:.6g}", f"{m.max_rel:.6g}", _number(m.within_0_1, ".4f") if exact else "",
            _number(m.within_0_5, ".4f") if exact else "", f"{p.tolerance:.3g}", e["step"], p.source,
            "pass" if p.passed else "FAIL")


def summary(result: RunComparison, name=lambda text: text) -> list:
    """The verdict in lines: the first divergence with its step and why, and the worst relative error;
    `name` formats a name (md_code for Markdown, printable for a terminal)."""
    first, worst = result.first_divergence, result.worst
    if first is not None:
        first_a, first_b = first.entries
        lines = [f"first divergence: {name(first_a['name'])} at step {first.step} (B: {name(first_b['name'])}): "
                 f"{first.why()} [{first.source}]"]
    else:
        lines = ["no divergence" if result.compared else
                 "unverified: no output of A lines up with one of B, so nothing was compared"]
    if worst is not None and worst.error == 0:
        lines.append("worst relative error: 0 (every compared output is identical)")
    elif worst is not None:
        lines.append(f"worst relative error: {worst.error:.3g} at {name(worst.entries[0]['name'])}, step {worst.step} "
                     f"(tolerance {worst.tolerance:.3g})")
    if result.only_a or result.only_b:
        lines.append(_unaligned(result, name))
    failed = result.failed
    if failed and all(p.b is not None and p.tolerance == SAME_DTYPE_TOLERANCES["float32"][0]
                      and p.error <= REDUCED_FLOAT32 for p in failed):
        lines.append(f"every failure is under {REDUCED_FLOAT32:g} against the float32 tolerance "
                     f"{SAME_DTYPE_TOLERANCES['float32'][0]:g}: a run whose convolutions or matmuls used TF32 (cuDNN's "
                     "default) or HF32 (Ascend's convolution default) differs that much; if either run did, give "
                     f"--rtol {REDUCED_FLOAT32:g}")
    return lines


def _unaligned(result: RunComparison, name) -> str:
    """What the outputs only one run has are: ops the other run did not call, most often another code path."""
    sides = []
    for side, label in (("a", "A"), ("b", "B")):
        ops = collections.Counter((getattr(p, side) or {}).get("op", "") for p in result.pairs
                                  if p.metrics is None and getattr(p, side) is not None)
        if ops:
            top = ", ".join(f"{name(op)} x{n}" for op, n in ops.most_common(3))
            sides.append(f"only in {label}: {top}")
    return ("not compared, ops one run called and the other did not (another code path: a fused or foreach kernel "
            "on one device and a per-tensor loop on the other, or another branch): " + "; ".join(sides))


def write_comparison(result: RunComparison, folder, a_name: str, b_name: str) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_csv(folder / "compare.csv", COLUMNS, (_row(p) for p in result.pairs))
    writes.write_text(folder / "compare.md", markdown(result, a_name, b_name))
    return folder


def markdown(result: RunComparison, a_name: str, b_name: str, limit: int = 200) -> str:
    lines = [f"# torchport compare: {md_code(a_name)} (A) vs {md_code(b_name)} (B)", "",
             f"- aligned outputs: {len(result.compared)}; failed: {len(result.failed)}; "
             f"only in A: {result.only_a}; only in B: {result.only_b}",
             *(f"- {line}" for line in summary(result, md_code)), f"- rule: {RULE}", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for p in result.pairs[:limit]:
        lines.append("| " + " | ".join(md_cell(c) for c in _row(p)) + " |")
    if len(result.pairs) > limit:
        lines.append(f"\n... {len(result.pairs) - limit} more rows in compare.csv")
    return "\n".join(lines) + "\n"
