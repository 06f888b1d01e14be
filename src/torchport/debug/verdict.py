"""Whether two runs agree on one aligned output: the verdict of `torchport compare`.

The error the verdict reads is relative to the reference run A, with a floor:

    from tensors:     error = rms(B - A) / max(rms(A), floor)
    from statistics:  error = max over min, max, mean of |B_s - A_s| / max(|A_s|, rms(A), floor),
                      and |rms(B) - rms(A)| / max(rms(A), floor)
    floor = noise(dtype) * (the largest rms(A) of the same step and phase: forward, backward, param, grad)

The floor follows magnitudes, never a fixed number: a small gradient is held to its own scale (a
fixed absolute tolerance such as 1e-5 lets a 33% error in a gradient of 1e-6 pass), and only a
tensor far below everything else its step computed in that phase (a conv bias's gradient in front of
a batch norm, zero but for rounding) is measured against that floor instead of against itself.
The error over the whole tensor (not the worst element) is what is judged: in bfloat16 a ReLU whose
input rounds to the other side of 0 lets one gradient element through in one run only, which is no
divergence.  The worst element, |B - A| / max(|A|, rms(A), floor), is shown as MaxRelErr.

A pair passes only when provably within (a NaN error fails): shapes equal, NaN/Inf at the same places
(tensors) or in the same numbers (statistics), error <= tolerance.  The tolerance and the noise share
are those of the least precise floating dtype either run has produced up to this pair: what a bfloat16
op gets wrong flows into every op after it, float32 ones included.
"""
from __future__ import annotations

import math
from typing import Any, Optional

import torch

from .metrics import Metrics, nan_max, tensor_metrics

# dtype name -> (tolerance, noise share of the floor).  Measured on the CPU, 3 SGD steps (momentum 0.9,
# cross entropy) of two nets (conv + batch norm + residual blocks; conv + transformer layer), each
# float32 run against runs in other dtypes, every op output, parameter and gradient, tensors and
# statistics: the worst error was 2.6e-3 for float64 vs float32 (float32's own error: a batch norm's
# gradient), 0.042 for float16, 0.163 for bfloat16 (a conv's weight gradient, a sum that cancels) and
# 0.128 for bf16 autocast; without the floor a conv bias's gradient in front of a batch norm (rounding
# noise) was 1 even in float64 vs float32.  rms(B - A) reached 5.2e-5 (float32), 4.2e-3 (float16) and
# 1.1e-2 (bfloat16) of its step's largest rms: tolerance * noise covers it.  Other dtypes (integers,
# bools, float8) leave the precision as it is.  A GPU run with TF32 matmuls or convolutions
# (PyTorch's default for cuDNN convolutions) is not a float32 run: give compare `--rtol`.
RUN_TOLERANCES = {"float64": (1e-6, 1e-3), "complex128": (1e-6, 1e-3), "float32": (1e-2, 1e-2),
                  "complex64": (1e-2, 1e-2), "float16": (0.15, 0.1), "bfloat16": (0.3, 0.1)}
MOST_PRECISE = RUN_TOLERANCES["float64"]
# Two runs that both compute in float32 (the usual pair: a GPU run and a target's, or two legal kernels) differ
# only by reduction order and the like.  Measured on the CPU, 4 SGD steps (momentum 0.9) of a conv + batch norm +
# MLP net, every op output, parameter and gradient, the same code with 2 threads against 1 (tests/test_debug_verdict.py
# `test_reduction_order_noise_and_a_bf16_round_trip`): the worst error was 6.6e-6 (tensors) and 6.0e-6 (statistics),
# while a bfloat16 round trip of one weight before step 2 made that weight itself differ by 1.5e-3: 1e-4 lies a
# factor of 15 from each.  TF32 (cuDNN convolutions' default on NVIDIA GPUs) and HF32 (Ascend convolutions' default)
# are not float32: such a run differs by ~1e-3 and needs `--rtol 1e-2` (compare says so when every failure is small).
SAME_DTYPE_TOLERANCES = {"float32": (1e-4, 1e-2), "complex64": (1e-4, 1e-2)}
REDUCED_FLOAT32 = 1e-2   # what TF32/HF32 runs need: the float32 tolerance against float64 (RUN_TOLERANCES)
TINY = 1e-30         # the floor of an all-zero step
WITHIN = (1e-3, 5e-3)


def precision(dtype: Optional[str], previous: Optional[tuple] = None) -> Optional[tuple]:
    """(tolerance, noise) of the less precise of `previous` and `dtype` (unknown dtypes keep `previous`)."""
    own = RUN_TOLERANCES.get(dtype) if dtype is not None else None
    if own is None or (previous is not None and previous[0] >= own[0]):
        return previous
    return own


def least_precise(dtype: str, previous: Optional[str] = None) -> Optional[str]:
    """The less precise floating dtype of `dtype` and `previous` (a name; unknown dtypes keep `previous`)."""
    if dtype not in RUN_TOLERANCES:
        return previous
    if previous is None or RUN_TOLERANCES[dtype][0] > RUN_TOLERANCES[previous][0]:
        return dtype
    return previous


def pair_precision(a: Optional[str], b: Optional[str]) -> tuple:
    """(tolerance, noise) for a pair when run A has produced `a` and run B `b` as their least precise dtypes so
    far: the same-dtype tolerance when they match (SAME_DTYPE_TOLERANCES), else the less precise one's."""
    if a is not None and a == b and a in SAME_DTYPE_TOLERANCES:
        return SAME_DTYPE_TOLERANCES[a]
    return precision(a, precision(b)) or MOST_PRECISE


def _rms_of(entry: dict) -> float:
    """rms of an ops.jsonl entry's finite elements, from its norm and shape (NaN or Inf kept)."""
    n = math.prod(entry["shape"])
    return entry["norm"] / (math.exp(0.5 * math.log(n)) if n > 1 else 1.0)  # log takes any int: no overflow


def entry_rms(entry: dict) -> float:
    """_rms_of, 0 when not finite: the magnitude an entry adds to its step's scale."""
    value = _rms_of(entry)
    return value if math.isfinite(value) else 0.0


def _flat64(t: torch.Tensor) -> torch.Tensor:
    t = t.detach().to("cpu")
    if t.is_complex():
        t = torch.view_as_real(t.to(torch.complex128))
    return t.to(torch.float64).reshape(-1)


def _rms(x: torch.Tensor) -> float:
    """Root mean square of finite float64 values, scaled first so that squares cannot overflow."""
    if x.numel() == 0:
        return 0.0
    largest = float(x.abs().max())
    return largest * float((x / largest).pow(2).mean().sqrt()) if largest > 0 else 0.0


def tensor_errors(actual: torch.Tensor, expected: torch.Tensor, floor: float) -> tuple:
    """(Metrics, error) of `actual` (run B) against `expected` (run A), on the elements finite in both.
    Metrics.max_rel is the worst element's error, the within shares count elements by it (the same
    NaN or Inf at the same place agrees), cosine is the true one (metrics.tensor_metrics)."""
    m = tensor_metrics(actual, expected, 0.0, 0.0)
    if m.shape_mismatch:
        m.max_abs = m.max_rel = math.nan
        return m, math.nan
    if m.elements == 0:
        return m, 0.0
    a, b = _flat64(actual), _flat64(expected)
    both = torch.isfinite(a) & torch.isfinite(b)
    same = ~both & ((a == b) | (torch.isnan(a) & torch.isnan(b)))
    a, b = a[both], b[both]
    scale = max(_rms(b), floor, TINY)
    rel = (a - b).abs() / b.abs().clamp_min(scale)
    m.max_rel = float(rel.max()) if rel.numel() else 0.0
    m.within_0_1 = float((rel <= WITHIN[0]).sum() + same.sum()) / m.elements
    m.within_0_5 = float((rel <= WITHIN[1]).sum() + same.sum()) / m.elements
    return m, _rms(a - b) / scale


def _difference(x: Optional[float], y: Optional[float]) -> Optional[float]:
    """|x - y| of a statistic: None when neither run has it (no finite element), NaN when only one has
    it or either is NaN or infinite (inf - inf is NaN): a difference nobody can measure."""
    if x is None and y is None:
        return None
    if x is None or y is None:
        return math.nan
    return abs(x - y)


def statistic_errors(actual: dict, expected: dict, floor: float) -> tuple:
    """(Metrics, error) of run B's statistics (`actual`) against run A's (`expected`), ops.jsonl
    entries.  Cosine and the within shares cannot be known from statistics: NaN.  A statistic that is
    NaN or infinite in either run, or present in one only, makes the error NaN; different NaN or Inf
    counts are a NaN/Inf mismatch."""
    a, b = actual, expected
    unknown: dict[str, Any] = dict(cosine=math.nan, within_0_1=math.nan, within_0_5=math.nan)   # Metrics' floats
    if a["shape"] != b["shape"]:
        return Metrics(shape_mismatch=True, mismatch=1.0, max_abs=math.nan, max_rel=math.nan, **unknown), math.nan
    m = Metrics(elements=math.prod(b["shape"]), **unknown)
    m.nonfinite_mismatch = a["nan"] != b["nan"] or a["inf"] != b["inf"]
    scale = max(entry_rms(b), floor, TINY)
    diffs = [(_difference(a[k], b[k]), b[k]) for k in ("min", "max", "mean")]
    diffs.append((_difference(_rms_of(a), _rms_of(b)), 0.0))
    diffs = [(d, abs(ref)) for d, ref in diffs if d is not None]
    m.max_abs = nan_max(d for d, _ in diffs)
    m.max_rel = nan_max(d / max(ref, scale) for d, ref in diffs)
    return m, m.max_rel


def passes(m: Metrics, error: float, tol: float) -> bool:
    """The verdict: True only when provably within (a NaN error fails)."""
    return not (m.shape_mismatch or m.nonfinite_mismatch) and error <= tol
