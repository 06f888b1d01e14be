"""Dump two runs (say, on the GPU and on the target) and compare them op by op.

    with dump("run_gpu", model, tensors=True) as d:     # on one machine
        train_step(); d.step()
    ...                                                  # the same on the other
    torchport compare run_gpu run_npu -o cmp/            # or compare_runs("run_gpu", "run_npu")

A dump folder holds `rank<R>/ops.jsonl` (one line per op output: a device-neutral name
`module/op/phase/call/output`, dtype, shape, statistics) and, with tensors=True, the outputs in
`rank<R>/tensors_<k>.pt` (weights_only-loadable, written every ~64 MB so memory stays bounded).

The two sequences are aligned by sequence matching on (module, op, phase, output): an op that one
run has and the other has not (a different kernel decomposition, an extra cast) does not shift
the rest.  Each aligned pair gets Cosine, MaxAbsErr, MaxRelErr and the share of elements within
0.1% and 0.5% (from tensors when both dumps have them, else from the statistics), msprobe's
verdict, and the first pair that fails is the first divergence.

A dump is untrusted input: each line is checked (types, finite counts; NaN/Inf statistics are kept
and fail their pair), tensor files must be plain names inside the dump folder (no `..`, no absolute
path, no link leading out), and every problem is one UsageError naming the file, line and field.
"""
from __future__ import annotations

import difflib
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import torch
from torch.utils._python_dispatch import _disable_current_modes

from ..core import writes
from ..core.csvfile import write_csv
from ..core.errors import UsageError
from ..core.files import is_within
from ..core.jsonfile import Fields, read_json_lines, short
from ..core.names import md_cell, md_code
from .base import ALLOCATION, OpMode, is_random, op_name, phase
from .metrics import Metrics, msprobe_verdict, nan_max, tensor_metrics

CHUNK_BYTES = 64 << 20


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
    def __init__(self, folder, model=None, *, tensors: bool = False, skip_views: bool = True, **options):
        super().__init__(model, **options)
        self.folder = Path(folder) / f"rank{self.rank}"
        self.tensors, self.skip_views = tensors, skip_views
        self.counter = Counter()
        self._lines = None
        self._chunk: dict = {}
        self._chunk_bytes = 0
        self._chunks = 0
        self.entries = 0

    def __enter__(self):
        if self.enabled:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._lines = open(self.folder / "ops.jsonl", "w", encoding="utf-8")
        return super().__enter__()

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
        with _disable_current_modes():
            for i, t in enumerate(outputs):
                entry = {"name": f"{module}/{name}/{ph}/{call}/{i}", "module": module, "op": name, "phase": ph,
                         "call": call, "output": i, "step": self.step_index, "dtype": str(t.dtype).replace("torch.", ""),
                         "shape": list(t.shape), **_stats(t)}
                if self.tensors:
                    entry["file"] = f"tensors_{self._chunks}.pt"
                    self._chunk[entry["name"]] = t.detach().to("cpu").clone()
                    self._chunk_bytes += t.numel() * t.element_size()
                self._lines.write(json.dumps(entry) + "\n")
                self.entries += 1
            if self._chunk_bytes >= CHUNK_BYTES:
                self._flush_chunk()
        return out

    def _flush_chunk(self) -> None:
        if self._chunk:
            torch.save(self._chunk, self.folder / f"tensors_{self._chunks}.pt")
            self._chunks += 1
        self._chunk, self._chunk_bytes = {}, 0

    def on_step_end(self) -> None:
        self.counter.clear()  # call indices restart per step

    def on_exit(self) -> None:
        self._flush_chunk()
        if self._lines is not None:
            self._lines.close()
            self._lines = None


def dump(folder, model=None, **options) -> RunDumper:
    """A context manager dumping per-op statistics (and tensors=True: the outputs) to `folder`."""
    return RunDumper(folder, model, **options)


# ----------------------------------------------------------------- comparing two dumps
@dataclass
class Pair:
    a: Optional[dict]
    b: Optional[dict]
    metrics: Optional[Metrics] = None
    passed: Optional[bool] = None
    source: str = ""        # "tensors" or "statistics"


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


FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # what `file` may hold: a name in the rank folder


def _entry(value, where: str) -> dict:
    """One ops.jsonl line, checked: the fields comparing reads, with the types the dumper writes.
    min/max/mean are null when the output has no finite element; NaN/Infinity statistics are kept
    (they fail the comparison, see _stat_metrics)."""
    f = Fields(value, where)
    entry = dict(value, name=f.text("name"), module=f.text("module"), op=f.text("op"), phase=f.text("phase"),
                 output=f.count("output"), dtype=f.text("dtype"), shape=f.counts("shape"), nan=f.count("nan"),
                 inf=f.count("inf"), norm=f.number("norm", finite=False), file=f.text("file", None))
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
    return entries


class _Tensors:
    """Loads tensor chunks lazily, one file at a time (file names are checked by _load_entries)."""

    def __init__(self, folder: Path):
        self.folder, self.name, self.data = folder, None, {}

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


def _difference(x: Optional[float], y: Optional[float]) -> Optional[float]:
    """|x - y| of a statistic: None when neither run has it (no finite element), NaN when only one has
    it or either is NaN or infinite (inf - inf is NaN): a difference nobody can measure."""
    if x is None and y is None:
        return None
    if x is None or y is None:
        return math.nan
    return abs(x - y)


def _stat_metrics(a: dict, b: dict) -> Metrics:
    """Metrics from statistics only: errors of min/max/mean/norm, cosine unknown (1 when the norms agree).
    Different NaN or Inf element counts are a NaN/Inf mismatch.  A statistic that is NaN or infinite
    in either run (both NaN included) makes the errors NaN, and a NaN error fails the pair: equal
    NaNs are no evidence that the outputs agree."""
    if a["shape"] != b["shape"]:
        return Metrics(shape_mismatch=True, cosine=0.0, mismatch=1.0)
    m = Metrics(elements=1)
    m.nonfinite_mismatch = a["nan"] != b["nan"] or a["inf"] != b["inf"]
    diffs = [_difference(a[k], b[k]) for k in ("min", "max", "mean")]
    m.max_abs = nan_max(d for d in diffs if d is not None)
    norm = b["norm"]
    scale = norm if math.isnan(norm) else max(abs(norm), 1e-12)
    m.max_rel = _difference(a["norm"], norm) / scale
    m.cosine = 1.0 - m.max_rel  # a bound, not a cosine: equal norms and extremes say little about direction
    m.within_0_1 = float(m.max_rel <= 1e-3)
    m.within_0_5 = float(m.max_rel <= 5e-3)
    return m


def compare_runs(a_folder, b_folder, *, rank: int = 0, verdict=msprobe_verdict) -> RunComparison:
    """Align the op sequences of two dumps and compare each pair (A: the reference, e.g. the GPU run)."""
    a_entries, b_entries = _load_entries(a_folder, rank), _load_entries(b_folder, rank)
    key = lambda e: (e["module"], e["op"], e["phase"], e["output"])  # noqa: E731 - the alignment key
    matcher = difflib.SequenceMatcher(None, [key(e) for e in a_entries], [key(e) for e in b_entries], autojunk=False)
    ta, tb = _Tensors(Path(a_folder) / f"rank{rank}"), _Tensors(Path(b_folder) / f"rank{rank}")
    result = RunComparison()
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for ea, eb in zip(a_entries[i1:i2], b_entries[j1:j2]):
                x, y = ta.get(ea), tb.get(eb)
                if x is not None and y is not None:
                    m, source = tensor_metrics(y, x, 0.0, 0.0), "tensors"
                else:
                    m, source = _stat_metrics(eb, ea), "statistics"
                result.pairs.append(Pair(ea, eb, m, verdict(m), source))
        else:
            result.pairs += [Pair(e, None) for e in a_entries[i1:i2]] + [Pair(None, e) for e in b_entries[j1:j2]]
            result.only_a += i2 - i1
            result.only_b += j2 - j1
    return result


# ----------------------------------------------------------------- writers
COLUMNS = ("A name", "B name", "dtype", "shape", "Cosine", "MaxAbsErr", "MaxRelErr", "Within0.1%", "Within0.5%",
           "source", "Result")


def _row(p: Pair) -> tuple:
    e = p.a or p.b
    if p.metrics is None:
        return (p.a["name"] if p.a else "", p.b["name"] if p.b else "", e["dtype"], e["shape"], "", "", "", "", "", "",
                "only in A" if p.a else "only in B")
    m = p.metrics
    return (p.a["name"], p.b["name"], e["dtype"], e["shape"], f"{m.cosine:.6f}", f"{m.max_abs:.6g}", f"{m.max_rel:.6g}",
            f"{m.within_0_1:.4f}", f"{m.within_0_5:.4f}", p.source, "pass" if p.passed else "FAIL")


def write_comparison(result: RunComparison, folder, a_name: str, b_name: str) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_csv(folder / "compare.csv", COLUMNS, (_row(p) for p in result.pairs))
    writes.write_text(folder / "compare.md", markdown(result, a_name, b_name))
    return folder


def markdown(result: RunComparison, a_name: str, b_name: str, limit: int = 200) -> str:
    first = result.first_divergence
    lines = [f"# torchport compare: {md_code(a_name)} (A) vs {md_code(b_name)} (B)", "",
             f"- aligned op outputs: {len(result.compared)}; failed (msprobe rule): {len(result.failed)}; "
             f"only in A: {result.only_a}; only in B: {result.only_b}",
             f"- first divergence: {md_code(first.a['name'])} (B: {md_code(first.b['name'])})" if first else
             "- no divergence" if result.compared else "- nothing aligned: unverified", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for p in result.pairs[:limit]:
        lines.append("| " + " | ".join(md_cell(c) for c in _row(p)) + " |")
    if len(result.pairs) > limit:
        lines.append(f"\n... {len(result.pairs) - limit} more rows in compare.csv")
    return "\n".join(lines) + "\n"
