"""Op-by-op accuracy against a reference device.

    with compare_with_reference(model, reference="cpu", reporting=Reporting(log_dir="logs")) as cmp:
        loss = model(x).sum(); loss.backward(); cmp.step()
    print(cmp.report())                      # worst ops first; also in logs/compare_rank<R>.log

Each aten op runs as usual (on the device under test, through any lower dispatch mode), then
again on the reference device from copies of the same inputs, with every mode disabled.  If the
reference lacks a kernel for a low-precision dtype, only floating-point inputs are upcast to
float32 (integers and bools keep their dtype).  `reference_dtype=torch.float32` always computes
the reference in float32 (for a bf16/fp16 run against an fp32 reference).  Random, in-place,
view and allocation ops are skipped by default (OpSelection).  A failure (mismatch above the
dtype's tolerance, or Tolerance's) can be dumped to Reporting's `dump_dir` as a
weights_only-loadable file; `replay(path)` reruns it.
"""
from __future__ import annotations

import os
import sys
import warnings
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional, TextIO, Union, cast

import torch
from torch.utils._python_dispatch import _disable_current_modes

from ..core.words import counted
from .base import ALLOCATION, OpMode, is_inplace_or_view, is_random, op_name, phase
from .metrics import Metrics, nan_max, nan_min, tensor_metrics, tolerances, worst_first

LOW_PRECISION = (torch.float16, torch.bfloat16)


class CompareFailure(AssertionError):
    """fail_fast: an op's output differs from the reference beyond tolerance."""


@dataclass
class OpStats:
    op: str
    compared: int = 0
    failed: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    min_cosine: float = 1.0
    max_mismatch: float = 0.0
    dtypes: Counter = field(default_factory=Counter)
    first_failure: Optional[dict] = None
    modules: Counter = field(default_factory=Counter)

    def add(self, m: Metrics, failed: bool, dtype, module: str) -> None:
        self.compared += 1
        self.failed += failed
        self.max_abs = nan_max((self.max_abs, m.max_abs))
        self.max_rel = nan_max((self.max_rel, m.max_rel))
        self.min_cosine = nan_min((self.min_cosine, m.cosine))
        self.max_mismatch = nan_max((self.max_mismatch, m.mismatch))
        self.dtypes[str(dtype).replace("torch.", "")] += 1
        if failed and len(self.modules) < 16:
            self.modules[module] += 1


def _outputs(out) -> list:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for t in out if isinstance(t, torch.Tensor)]
    return []


def _to_reference(value, device, dtype=None, upcast=False):
    if isinstance(value, torch.Tensor):
        t = value.detach()
        if t.is_floating_point() and (dtype is not None or (upcast and t.dtype in LOW_PRECISION)):
            t = t.to(dtype or torch.float32)
        return t.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_reference(v, device, dtype, upcast) for v in value)
    if isinstance(value, torch.device):
        return torch.device(device)
    return value


def run_on_reference(func, args, kwargs, device, dtype=None):
    """(outputs, upcast?) of `func` on `device` with every dispatch mode disabled."""
    with _disable_current_modes():
        for upcast in (False, True):
            a = _to_reference(args, device, dtype, upcast)
            k = {key: _to_reference(v, device, dtype, upcast) for key, v in kwargs.items()}
            if "device" in k:
                k["device"] = torch.device(device)
            try:
                return func(*a, **k), upcast
            except (RuntimeError, NotImplementedError):
                has_low = any(isinstance(t, torch.Tensor) and t.dtype in LOW_PRECISION for t in _flat(a, k))
                if upcast or not has_low:
                    raise
    raise AssertionError("unreachable")


def effective_dtype(output_dtype, input_dtypes) -> torch.dtype:
    """The precision an op really computed in: the least precise of its output and floating inputs
    (a float32 layer_norm_backward fed bfloat16 gradients is held to bfloat16 tolerances)."""
    if not output_dtype.is_floating_point:
        return output_dtype
    return max([output_dtype, *input_dtypes], key=lambda d: tolerances(d)[0])


def _flat(args, kwargs):
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, (list, tuple)):
            yield from v
        else:
            yield v


@dataclass(frozen=True)
class Tolerance:
    """Bounds replacing the per-dtype defaults: an output fails where an element is outside
    atol + rtol·|reference|.  Both None: each dtype's defaults; one given: the other is its dtype's default."""

    atol: Optional[float] = None
    rtol: Optional[float] = None


@dataclass(frozen=True)
class OpSelection:
    """Which ops are compared.  `only`: these and no other (whatever their kind); `skip`: not these.  Names
    are 'aten::addmm', 'aten::addmm.default', 'aten.addmm' or 'addmm'.  Random ops (dropout's bernoulli_),
    in-place, out= and view ops are skipped unless include_random / include_inplace; allocation ops always."""

    only: Optional[Iterable[str]] = None
    skip: Iterable[str] = ()
    include_random: bool = False
    include_inplace: bool = False

    def __post_init__(self) -> None:   # tuples: a generator or a list given is read once, a lone name is one name
        if self.only is not None:
            object.__setattr__(self, "only", _names(self.only))
        object.__setattr__(self, "skip", _names(self.skip or ()))


@dataclass(frozen=True)
class Reporting:
    """Where results go besides the object: `log_dir` gets compare_rank<R>.log (each failure, then the
    report), `dump_dir` one file per failure for replay(); the first `max_failures_logged` failures are kept
    (cmp.failures) and logged; the report is printed on stderr at exit unless `quiet`."""

    log_dir: Optional[Union[str, os.PathLike]] = None
    dump_dir: Optional[Union[str, os.PathLike]] = None
    max_failures_logged: int = 1000
    quiet: bool = False


def _names(names: Iterable[str]) -> tuple:
    return (names,) if isinstance(names, str) else tuple(names)


# the keywords before the three groups, still taken with a DeprecationWarning: old keyword -> (group keyword, field)
_OLD_KEYWORDS = {"atol": ("tolerance", "atol"), "rtol": ("tolerance", "rtol"), "ops": ("selection", "only"),
                 "skip_ops": ("selection", "skip"), "compare_random": ("selection", "include_random"),
                 "compare_inplace": ("selection", "include_inplace"), "log_dir": ("reporting", "log_dir"),
                 "dump_dir": ("reporting", "dump_dir"), "max_failures_logged": ("reporting", "max_failures_logged"),
                 "quiet": ("reporting", "quiet")}
_GROUPS = {"tolerance": Tolerance, "selection": OpSelection, "reporting": Reporting}


def _with_old_keywords(groups: dict, options: dict) -> dict:
    """`groups` (keyword -> value) with the old keywords in `options` moved into them (and out of `options`),
    with one DeprecationWarning naming the new spelling; a group of the wrong type is a TypeError."""
    for keyword, value in groups.items():
        if not isinstance(value, _GROUPS[keyword]):
            kind = _GROUPS[keyword].__name__
            raise TypeError(f"compare_with_reference: {keyword}= takes a torchport.debug.{kind}, "
                            f"not {type(value).__name__} (e.g. {keyword}={kind}())")
    olds = [k for k in options if k in _OLD_KEYWORDS]
    if not olds:
        return groups
    moved: dict = {}      # group keyword -> {field: value}
    for old in olds:
        keyword, name = _OLD_KEYWORDS[old]
        moved.setdefault(keyword, {})[name] = options.pop(old)
    new = ", ".join(f"{keyword}={_GROUPS[keyword].__name__}("
                    + ", ".join(f"{name}={value!r}" for name, value in fields.items()) + ")"
                    for keyword, fields in moved.items())
    warnings.warn(f"compare_with_reference: {', '.join(o + '=' for o in olds)} "
                  f"{'is' if len(olds) == 1 else 'are'} deprecated; write {new} "
                  f"(from torchport.debug import {', '.join(_GROUPS[k].__name__ for k in moved)})",
                  DeprecationWarning, stacklevel=_outside_this_module())
    return {keyword: replace(value, **moved.get(keyword, {})) for keyword, value in groups.items()}


def _outside_this_module() -> int:
    """The stacklevel of the first caller outside this module (the user's line, through compare_with_reference
    or not)."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_globals.get("__name__") == __name__:
        frame, level = frame.f_back, level + 1
    return level


class CompareWithReference(OpMode):
    """Each op compared with `reference` (a device; `reference_dtype`: compute it in that dtype); `tolerance`,
    `selection` and `reporting` as their types say; `fail_fast`: raise CompareFailure at the first failure.
    `options`: OpMode's (enabled, ranks, start_step, end_step)."""

    def __init__(self, model=None, *, reference: str = "cpu", reference_dtype=None, tolerance: Tolerance = Tolerance(),
                 selection: OpSelection = OpSelection(), reporting: Reporting = Reporting(), fail_fast: bool = False,
                 **options):
        groups = _with_old_keywords({"tolerance": tolerance, "selection": selection, "reporting": reporting},
                                    options)
        super().__init__(model, **options)
        self.reference, self.reference_dtype, self.fail_fast = reference, reference_dtype, fail_fast
        self.tolerance, self.selection, self.reporting = groups["tolerance"], groups["selection"], groups["reporting"]
        self.only = {_normalize(o) for o in self.selection.only} if self.selection.only else None
        self.skip = {_normalize(o) for o in self.selection.skip}
        self.log_dir = Path(self.reporting.log_dir) if self.reporting.log_dir else None
        self.dump_dir = Path(self.reporting.dump_dir) if self.reporting.dump_dir else None
        self.stats: dict = {}            # op -> OpStats
        self.skipped: Counter[str] = Counter()   # op -> count
        self.errors: Counter[str] = Counter()    # op -> reference run raised
        self.failures: list = []         # the first reporting.max_failures_logged failures, in order
        self.first_failure: Optional[dict] = None
        self._log: Optional[TextIO] = None

    # ----------------------------------------------------------------- selection
    def wants(self, func, name: str) -> bool:
        base = func._schema.name
        if self.only is not None:
            return name in self.only or base in self.only
        if name in self.skip or base in self.skip or base in ALLOCATION:
            return False
        if is_random(func) and not self.selection.include_random:
            return False
        return not (is_inplace_or_view(func) and not self.selection.include_inplace)

    def tolerance_for(self, dtype) -> tuple:
        """(atol, rtol, scale) for an output of `dtype`: the dtype's defaults, or the Tolerance given."""
        rtol, atol, scale = tolerances(dtype)
        given = self.tolerance
        if given.atol is not None or given.rtol is not None:
            return (given.atol if given.atol is not None else atol), (given.rtol if given.rtol is not None else rtol), 0.0
        return atol, rtol, scale

    # ----------------------------------------------------------------- the comparison
    def on_op(self, func, args, kwargs):
        out = func(*args, **kwargs)
        name = op_name(func)
        if not self.wants(func, name):
            self.skipped[name] += 1
            return out
        try:
            ref, upcast = run_on_reference(func, args, kwargs, self.reference, self.reference_dtype)
        except Exception as e:  # noqa: BLE001 - a reference that cannot run the op is reported, not fatal
            self.errors[name] += 1
            self._write_log(f"reference error {name} at {self.module or '(top)'}: {type(e).__name__}: {e}")
            return out
        stats = self.stats.setdefault(name, OpStats(name))
        inputs = [t.dtype for t in _flat(args, kwargs) if isinstance(t, torch.Tensor) and t.is_floating_point()]
        for i, (got, want) in enumerate(zip(_outputs(out), _outputs(ref))):
            m = tensor_metrics(got, want, *self.tolerance_for(effective_dtype(got.dtype, inputs)))
            failed = m.shape_mismatch or m.mismatch != 0  # NaN != 0: a NaN ratio fails
            stats.add(m, failed, got.dtype, self.module)
            if failed:
                self._failed(func, name, i, m, args, kwargs, out, ref, upcast)
        return out

    def _failed(self, func, name, index, m, args, kwargs, out, ref, upcast) -> None:  # noqa: PLR0913
        record = {"op": name, "output": index, "module": self.module or "(top)", "phase": phase(),
                  "step": self.step_index, "call": self.calls, "rank": self.rank, "upcast_reference": upcast,
                  "reference_dtype": str(self.reference_dtype).replace("torch.", "") if self.reference_dtype else None,
                  **m.to_dict()}
        if self.first_failure is None:
            self.first_failure = record
        stats = self.stats[name]
        if stats.first_failure is None:
            stats.first_failure = record
        if len(self.failures) < self.reporting.max_failures_logged:
            self.failures.append(record)
            self._write_log(_failure_line(record))
        if self.dump_dir is not None:
            record["dump"] = str(dump_op(self.dump_dir, record, func, args, kwargs, out, ref))
        if self.fail_fast:
            raise CompareFailure(_failure_line(record))

    # ----------------------------------------------------------------- results
    @property
    def failed_ops(self) -> list:
        return [s for s in self.stats.values() if s.failed]

    def summary(self) -> list:
        """OpStats, failed ops first, then by mismatch ratio and max relative error (NaN first)."""
        return sorted(self.stats.values(),
                      key=lambda s: (-s.failed, worst_first(s.max_mismatch), worst_first(s.max_rel), s.op))

    def report(self, limit: int = 40) -> str:
        rows = self.summary()
        total = sum(s.compared for s in rows)
        failed = sum(s.failed for s in rows)
        lines = [f"torchport compare_with_reference (rank {self.rank}, reference {self.reference}): "
                 f"{counted(total, 'op output')} compared in {counted(len(rows), 'op')}, {failed} failed, "
                 f"{counted(sum(self.skipped.values()), 'call')} skipped, "
                 f"{counted(sum(self.errors.values()), 'reference error')}"]
        if self.first_failure:
            lines.append("first failure: " + _failure_line(self.first_failure))
        lines += ["", "| op | compared | failed | max abs | max rel | min cosine | max mismatch | dtypes | failing modules |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for s in rows[:limit]:
            lines.append(f"| {s.op} | {s.compared} | {s.failed} | {s.max_abs:.3g} | {s.max_rel:.3g} | "
                         f"{s.min_cosine:.6f} | {s.max_mismatch:.3g} | {', '.join(sorted(s.dtypes))} | "
                         f"{', '.join(m for m, _ in s.modules.most_common(3))} |")
        return "\n".join(lines) + "\n"

    def _write_log(self, line: str) -> None:
        if self.log_dir is None:
            return
        if self._log is None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_dir / f"compare_rank{self.rank}.log", "a", encoding="utf-8")
        self._log.write(line + "\n")
        self._log.flush()

    def on_exit(self) -> None:
        text = self.report()
        if self.log_dir is not None:
            self._write_log(text)
            cast(TextIO, self._log).close()   # _write_log opened it
            self._log = None
        if not self.reporting.quiet:
            sys.stderr.write(text)


def _failure_line(r: dict) -> str:
    return (f"{r['op']} output {r['output']} in {r['module']} ({r['phase']}, step {r['step']}, call {r['call']}): "
            f"mismatch {r['mismatch']:.3g}, max abs {r['max_abs']:.3g}, max rel {r['max_rel']:.3g}, "
            f"cosine {r['cosine']:.6f}" + (" [shape differs]" if r.get("shape_mismatch") else ""))


def _normalize(name: str) -> str:
    name = name.replace("aten.", "aten::", 1) if name.startswith("aten.") else name
    return name if "::" in name else f"aten::{name}"


def compare_with_reference(model=None, **options) -> CompareWithReference:
    """A context manager comparing every op with the reference device (see CompareWithReference)."""
    return CompareWithReference(model, **options)


# ----------------------------------------------------------------- dumps and replay
def _encode(value):
    """Inputs and outputs in a form torch.load(weights_only=True) accepts."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu").clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_encode(v) for v in value) if isinstance(value, list) else tuple(_encode(v) for v in value)
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str, torch.dtype, torch.Size)):
        return value
    if isinstance(value, torch.device):
        return {"__torch__": "device", "value": str(value)}
    name = next((n for n in ("contiguous_format", "channels_last", "preserve_format", "channels_last_3d", "strided",
                             "sparse_coo") if value is getattr(torch, n, None)), None)
    return {"__torch__": name or "unsupported", "value": repr(value)}


def _decode(value, device):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, list):
        return [_decode(v, device) for v in value]
    if isinstance(value, tuple):
        return tuple(_decode(v, device) for v in value)
    if isinstance(value, dict):
        kind = value.get("__torch__")
        if kind == "device":
            return torch.device(device)
        if kind and kind != "unsupported":
            return getattr(torch, kind)
        if kind == "unsupported":
            raise ValueError(f"the dump holds an argument that cannot be rebuilt: {value['value']}")
        return {k: _decode(v, device) for k, v in value.items()}
    return value


def dump_op(folder: Path, record: dict, func, args, kwargs, out, ref) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    safe = record["op"].replace("::", ".").replace("/", "_")
    path = folder / f"rank{record['rank']}_step{record['step']}_call{record['call']}_{safe}.pt"
    torch.save({"op": record["op"], "record": {k: v for k, v in record.items() if k != "dump"},
                "args": _encode(list(args)), "kwargs": _encode(dict(kwargs)),
                "device_outputs": _encode(_outputs(out)), "reference_outputs": _encode(_outputs(ref))}, path)
    return path


@dataclass
class ReplayResult:
    op: str
    metrics: list            # Metrics per output
    passed: bool
    record: dict

    def __str__(self):
        state = "passes" if self.passed else "fails"
        worst = min(self.metrics, key=lambda m: worst_first(m.mismatch)) if self.metrics else Metrics()
        return f"{self.op} {state} on replay: mismatch {worst.mismatch:.3g}, max abs {worst.max_abs:.3g}"


def resolve_op(name: str):
    """torch.ops.aten.addmm.default for 'aten::addmm.default'."""
    ns, _, rest = name.partition("::")
    base, _, overload = rest.partition(".")
    packet = getattr(getattr(torch.ops, ns), base)
    return getattr(packet, overload or "default")


def replay(dump_path, op=None, *, reference: str = "cpu", atol: Optional[float] = None,
           rtol: Optional[float] = None) -> ReplayResult:
    """Rerun a dumped op (or `op`, any callable taking the same arguments) on `reference` and compare
    it with the device outputs stored in the dump."""
    data = torch.load(dump_path, weights_only=True)
    func = op if op is not None else resolve_op(data["op"])
    args, kwargs = _decode(data["args"], reference), _decode(data["kwargs"], reference)
    dtype = data["record"].get("reference_dtype")
    out, _ = run_on_reference(func, args, kwargs, reference, getattr(torch, dtype) if dtype else None)
    metrics, passed = [], True
    for got, want in zip(data["device_outputs"], _outputs(out)):
        r, a, scale = tolerances(got.dtype)
        if atol is not None or rtol is not None:
            a, r, scale = (atol if atol is not None else a), (rtol if rtol is not None else r), 0.0
        m = tensor_metrics(got, want, a, r, scale)
        metrics.append(m)
        passed = passed and not m.shape_mismatch and m.mismatch == 0
    return ReplayResult(data["op"], metrics, passed, data["record"])
