"""How far apart two tensors are, and the verdicts built on it.

`tensor_metrics(actual, expected, atol, rtol, scale)` gives max abs error, max relative error, cosine
similarity, the share of elements outside atol + rtol*|expected| (mismatch ratio), the shares
within 0.1% and 0.5% relative error, and NaN/Inf disagreement; computed in float64 on the CPU.

Default tolerances (TOLERANCES) are per dtype of the output under test; `msprobe_verdict` is
Huawei msprobe's documented rule for comparing two runs, kept for callers: `torchport compare`
judges by verdict.py instead, since that rule passes a tensor scaled by 2 (cosine 1, small abs error).

NaN is never a pass: `x > limit` is False for NaN, so every test here is written as "passes only if
provably within" (`not x <= limit` fails NaN), and `nan_max` / `worst_first` keep a NaN error
instead of letting max() or sorting drop it.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

# dtype -> (rtol, atol, scale): an element of the output under test fails when
#     |actual - expected| > max(atol, scale * max|expected|) + rtol * |expected|
# rtol and atol are torch.testing.assert_close's per-dtype defaults; `scale` makes the absolute
# part follow the tensor's magnitude, because a kernel computing in float16/bfloat16 errs by a
# fraction of the values it accumulates, not of each element (an element near zero in a layer
# norm or a gradient is not held to 1.6% of itself).  Measured on CPU against a float32 reference:
# bf16 kernels stay under 0.005 of max|expected| except layer_norm_backward (0.033).
TOLERANCES = {torch.float16: (1e-3, 1e-5, 1e-2), torch.bfloat16: (1.6e-2, 1e-5, 5e-2),
              torch.float32: (1.3e-6, 1e-5, 1e-5), torch.float64: (1e-7, 1e-7, 1e-7),
              torch.complex64: (1.3e-6, 1e-5, 1e-5), torch.complex128: (1e-7, 1e-7, 1e-7)}
EPS = 1e-12


def tolerances(dtype) -> tuple:
    """(rtol, atol, scale) for an output dtype; exact (0, 0, 0) for integers and bools."""
    return TOLERANCES.get(dtype, (0.0, 0.0, 0.0))


@dataclass
class Metrics:
    max_abs: float = 0.0
    max_rel: float = 0.0
    cosine: float = 1.0
    mismatch: float = 0.0          # share of elements outside the tolerance
    within_0_1: float = 1.0        # share with relative error <= 0.1%
    within_0_5: float = 1.0        # share with relative error <= 0.5%
    nonfinite_mismatch: bool = False
    shape_mismatch: bool = False
    elements: int = 0

    def to_dict(self) -> dict:
        return {k: (round(v, 10) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def tensor_metrics(actual: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float,
                   scale: float = 0.0) -> Metrics:
    if tuple(actual.shape) != tuple(expected.shape):
        return Metrics(shape_mismatch=True, mismatch=1.0, cosine=0.0, elements=actual.numel())
    a = actual.detach().to("cpu")
    b = expected.detach().to("cpu")
    if a.is_complex() or b.is_complex():
        a, b = torch.view_as_real(a.to(torch.complex128)), torch.view_as_real(b.to(torch.complex128))
    a, b = a.to(torch.float64).reshape(-1), b.to(torch.float64).reshape(-1)
    n = a.numel()
    if n == 0:
        return Metrics()
    fa, fb = torch.isfinite(a), torch.isfinite(b)
    same_nonfinite = (~fa & ~fb) & ((a == b) | (torch.isnan(a) & torch.isnan(b)))
    bad_nonfinite = (fa != fb) | ((~fa & ~fb) & ~same_nonfinite)
    both = fa & fb
    diff = torch.where(both, (a - b).abs(), torch.zeros_like(a))
    rel = diff / b.abs().clamp_min(EPS)
    magnitude = float(b[both].abs().max()) if bool(both.any()) else 0.0
    outside = ~(diff <= max(atol, scale * magnitude) + rtol * b.abs()) & both
    m = Metrics(elements=n)
    m.max_abs = float(diff.max())
    m.max_rel = float(torch.where(both, rel, torch.zeros_like(rel)).max())
    m.nonfinite_mismatch = bool(bad_nonfinite.any())
    m.mismatch = float((outside | bad_nonfinite).sum()) / n
    m.within_0_1 = float(((rel <= 1e-3) & both).sum() + same_nonfinite.sum()) / n
    m.within_0_5 = float(((rel <= 5e-3) & both).sum() + same_nonfinite.sum()) / n
    av, bv = a[both], b[both]
    largest = float(torch.maximum(av.abs().max(), bv.abs().max())) if av.numel() else 0.0
    if largest > 0:  # scaled to at most 1: squares of large values would overflow to inf, and inf/inf is NaN
        av, bv = av / largest, bv / largest
    na, nb = float(av.norm()), float(bv.norm())
    if na == 0.0 and nb == 0.0:
        m.cosine = 1.0
    elif na == 0.0 or nb == 0.0:
        m.cosine = 0.0
    else:
        m.cosine = float((av @ bv) / (na * nb))
    return m


def msprobe_verdict(m: Metrics) -> bool:
    """True = pass.  msprobe's rule for two runs: fail when cosine < 0.99 and max abs error > 0.001,
    or cosine < 0.9, or max abs error > 1, or NaN/Inf where the other run has none.  A NaN metric
    (an error nobody could measure) fails."""
    if m.shape_mismatch or m.nonfinite_mismatch:
        return False
    close = m.cosine >= 0.99 or m.max_abs <= 1e-3
    return close and m.cosine >= 0.9 and m.max_abs <= 1.0


def nan_max(values, default: float = 0.0) -> float:
    """max() that returns NaN when any value is NaN (max() keeps or drops a NaN by its position)."""
    values = list(values)
    if any(math.isnan(v) for v in values):
        return math.nan
    return max(values, default=default)


def nan_min(values, default: float = 0.0) -> float:
    """min() that returns NaN when any value is NaN."""
    values = list(values)
    if any(math.isnan(v) for v in values):
        return math.nan
    return min(values, default=default)


def worst_first(error: float) -> tuple:
    """Sort key for an error where larger is worse: NaN first, then largest first."""
    return (0, 0.0) if math.isnan(error) else (1, -error)
