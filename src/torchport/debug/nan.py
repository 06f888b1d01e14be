"""NaN/Inf tracking: the first op whose output holds NaN or Inf while its inputs did not, with its
module path, phase (forward/backward) and step.

    with NanInfTracker(model) as tracker:
        loss = model(x).sum(); loss.backward(); tracker.step()
    print(tracker.first)      # {"op": "aten::sqrt.default", "module": "blocks.2.norm", "phase": "backward", ...}

No host sync per tensor: each op adds two device-side flags (inputs finite, outputs finite); the
flags are stacked and read once every `check_every` ops, at each step() and at exit.  Only then,
and only when something went wrong, is the batch searched for the first culprit.  After it is found
only the output flags are kept, so `nonfinite_outputs` counts every op call with a non-finite output
whatever `check_every` is.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch.utils._python_dispatch import _disable_current_modes

from .base import OpMode, op_name, phase


class NanInfDetected(FloatingPointError):
    """raise_on_nan: a NaN/Inf was produced from finite inputs."""


def _floats(values) -> list:
    out = []
    for v in values:
        if isinstance(v, torch.Tensor):
            if v.is_floating_point() or v.is_complex():
                out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(_floats(v))
    return out


# Ops whose output is uninitialised memory (torch.empty & co.): it may hold NaN bit patterns by chance.
UNINITIALISED = frozenset({"aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
                           "aten::new_empty_strided", "aten::empty_permuted"})


def _all_finite(tensors: list, device) -> torch.Tensor:
    if not tensors:
        return torch.ones((), dtype=torch.bool, device=device)
    flags = [torch.isfinite(t).all() for t in tensors]
    return torch.stack([f.to(device) for f in flags]).all() if len(flags) > 1 else flags[0].to(device)


class NanInfTracker(OpMode):
    def __init__(self, model=None, *, check_every: int = 256, raise_on_nan: bool = False, **options):
        super().__init__(model, **options)
        self.check_every, self.raise_on_nan = check_every, raise_on_nan
        self.first: Optional[dict] = None     # the first op that made NaN/Inf from finite inputs
        self.nonfinite_outputs = 0            # op calls with NaN/Inf in an output (from any input), all of them
        self.checks = 0                       # host reads of the flags
        self._pending: list = []              # (inputs_ok, outputs_ok, info)

    def on_op(self, func, args, kwargs):
        out = func(*args, **kwargs)
        if func._schema.name in UNINITIALISED:  # whatever bytes the memory held: NaN there means nothing
            return out
        outs = _floats([out] if isinstance(out, torch.Tensor) else out if isinstance(out, (list, tuple)) else [])
        if outs:
            device = outs[0].device
            # once the culprit is found, inputs need no flag: only the count of non-finite outputs goes on
            ins = _floats(list(args) + list(kwargs.values())) if self.first is None else []
            info = (op_name(func), self.module or "(top)", phase(), self.step_index, self.calls)
            self._pending.append((_all_finite(ins, device), _all_finite(outs, device), info))
            if len(self._pending) >= self.check_every:
                self.flush()
        return out

    def flush(self) -> None:
        """Read the pending flags (one sync per device) and find the culprit, if any."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        with _disable_current_modes():
            self.checks += 1
            outs_ok = torch.stack([o.to("cpu") for _, o, _ in pending])
            if bool(outs_ok.all()):
                return
            ins_ok = torch.stack([i.to("cpu") for i, _, _ in pending])
            self.nonfinite_outputs += int((~outs_ok).sum())
            culprits = (ins_ok & ~outs_ok).nonzero()
        if culprits.numel() and self.first is None:
            op, module, ph, step, call = pending[int(culprits[0])][2]
            self.first = {"op": op, "module": module, "phase": ph, "step": step, "call": call}
            if self.raise_on_nan:
                raise NanInfDetected(self.describe())

    def describe(self) -> str:
        if self.first is None:
            return "no op produced NaN/Inf from finite inputs"
        f = self.first
        return (f"first NaN/Inf from finite inputs: {f['op']} in {f['module']} ({f['phase']}, step {f['step']}, "
                f"call {f['call']})")

    def on_step_end(self) -> None:
        self.flush()

    def on_exit(self) -> None:
        self.flush()
