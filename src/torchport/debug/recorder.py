"""Operator recording: every aten op a run executes, with its overload, input shapes and dtypes,
the modules that call it (attribute paths), forward/backward and call counts.

    with record_ops(model) as rec:      # model optional: modules are named automatically
        train_step()
        rec.step()
    rec.write("ops.json")               # input of `torchport ops check ops.json --to npu`

Memory stays bounded: counts are aggregated per (op, module, phase), and at most
`max_signatures` distinct input signatures and `max_modules` modules are kept per op.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..core import writes
from .base import OpMode, op_name, phase

SCHEMA_VERSION = 1


def composite_ops() -> frozenset:
    """The ops (as op_name writes them: `aten::logcumsumexp.default`) torch implements in terms of other ops
    (kb/ops/aten.json `composite`)."""
    from ..kb.operators import aten

    return frozenset(f"aten::{name}" if "." in name else f"aten::{name}.default"
                     for name, info in aten()["ops"].items() if info.get("composite"))


_KEYS: dict = {}


def composite_key(func):
    """The dispatch key of `func`'s composite kernel (one written in terms of other ops), or None."""
    name = func.name()
    if name not in _KEYS:
        keys = (torch._C.DispatchKey.CompositeExplicitAutograd, torch._C.DispatchKey.CompositeExplicitAutogradNonFunctional)
        _KEYS[name] = next((k for k in keys if torch._C._dispatch_has_kernel_for_dispatch_key(name, k)), None)
    return _KEYS[name]


def signature(args, kwargs) -> str:
    """'f32[8, 16], f32[16], int' style summary of an op's inputs."""
    parts = []
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, torch.Tensor):
            parts.append(f"{str(a.dtype).replace('torch.', '')}{list(a.shape)}")
        elif isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor):
            parts.append(f"[{len(a)} tensors]")
        else:
            parts.append(type(a).__name__)
    return ", ".join(parts)


class OpRecorder(OpMode):
    def __init__(self, model=None, *, max_signatures: int = 8, max_modules: int = 32, **options):
        super().__init__(model, **options)
        self.max_signatures, self.max_modules = max_signatures, max_modules
        self.counts: Counter[str] = Counter()                # op -> calls
        self.by_phase: Counter[tuple[str, str]] = Counter()  # (op, phase) -> calls
        self.modules: dict = {}        # op -> Counter(module path)
        self.signatures: dict = {}     # op -> Counter(signature)
        self.steps_recorded = 0
        self.via: dict = {}            # op -> Counter(composite op whose kernel called it -> calls)
        self._calling: list = []       # the composite ops running now, innermost last
        self._composites = composite_ops()

    def on_op(self, func, args, kwargs):
        name = op_name(func)
        if self._calling and self._calling[-1] != name:
            self.via.setdefault(name, Counter())[self._calling[-1]] += 1
        self.counts[name] += 1
        self.by_phase[(name, phase())] += 1
        mods = self.modules.setdefault(name, Counter())
        module = self.module
        if module and (module in mods or len(mods) < self.max_modules):
            mods[module] += 1
        sigs = self.signatures.setdefault(name, Counter())
        if len(sigs) < self.max_signatures or sigs:
            sig = signature(args, kwargs)
            if sig in sigs or len(sigs) < self.max_signatures:
                sigs[sig] += 1
        key = composite_key(func) if name in self._composites and name not in self._calling else None
        if key is None:   # a kernel, or a composite calling itself (its own op with other arguments)
            return func(*args, **kwargs)
        # a composite op's kernel calls other ops, which need kernels of their own (logcumsumexp calls
        # _logcumsumexp): its kernel runs with this mode on, so they are recorded too, each with the op that
        # called it
        self._calling.append(name)
        TorchDispatchMode.__enter__(self)
        try:
            return func._op_dk(key, *args, **kwargs)
        finally:
            TorchDispatchMode.__exit__(self, None, None, None)
            self._calling.pop()

    def on_step_end(self) -> None:
        self.steps_recorded += 1

    def to_dict(self) -> dict:
        from ..core.version import __version__

        ops = []
        for name, count in sorted(self.counts.items()):
            ops.append({"op": name, "count": count,
                        "forward": self.by_phase[(name, "forward")], "backward": self.by_phase[(name, "backward")],
                        "modules": [m for m, _ in self.modules.get(name, Counter()).most_common()],
                        "inputs": [s for s, _ in self.signatures.get(name, Counter()).most_common()]}
                       | ({"via": dict(sorted(self.via[name].items()))} if name in self.via else {}))
        return {"schema_version": SCHEMA_VERSION, "tool": {"name": "torchport", "version": __version__},
                "torch": torch.__version__, "rank": self.rank, "steps": self.steps_recorded,
                "total_calls": sum(self.counts.values()), "ops": ops}

    def write(self, path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        writes.write_text(path, json.dumps(self.to_dict(), indent=1) + "\n")
        return path


def record_ops(model=None, **options) -> OpRecorder:
    """A context manager recording every aten op (see OpRecorder)."""
    return OpRecorder(model, **options)
