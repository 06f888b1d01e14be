"""What every debug tool shares: a TorchDispatchMode that sees each aten op with its module path
and phase (forward/backward), a step counter with a [start_step, end_step] window, rank selection
from RANK / LOCAL_RANK, an `enabled` switch, and the op categories skipped by default.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .modules import ModuleTracker

# Allocation ops whose output is uninitialised or trivially known: nothing to compare.
ALLOCATION = frozenset({"aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
                        "aten::new_empty_strided", "aten::empty_permuted", "aten::zeros", "aten::ones",
                        "aten::full", "aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::scalar_tensor",
                        "aten::lift_fresh", "aten::detach", "aten::_local_scalar_dense", "aten::set_",
                        "aten::_to_copy", "aten::copy_"})


# Namespaces of ops that only keep books (record_function markers), not compute.
BOOKKEEPING = frozenset({"profiler"})


def op_name(func) -> str:
    """'aten::addmm.default' for torch.ops.aten.addmm.default."""
    return f"{func._schema.name}.{func._overloadname}"


def is_random(func) -> bool:
    return torch.Tag.nondeterministic_seeded in func.tags


def is_inplace_or_view(func) -> bool:
    return func._schema.is_mutable or func.is_view or torch.Tag.inplace in func.tags


def current_rank() -> int:
    for var in ("RANK", "LOCAL_RANK"):
        value = os.environ.get(var)
        if value is not None and value.strip().lstrip("-").isdigit():
            return int(value)
    return 0


def phase() -> str:
    return "backward" if torch._C._current_graph_task_id() != -1 else "forward"


class OpMode(TorchDispatchMode):
    """Base of the recorder, the comparer, the NaN tracker and the dumper: subclasses implement
    `on_op(func, args, kwargs, out)` and get `self.module`, `self.phase`, `self.step_index`."""

    def __init__(self, model=None, *, enabled: bool = True, ranks: Optional[Iterable[int]] = None,
                 start_step: int = 0, end_step: Optional[int] = None):
        super().__init__()
        models = () if model is None else (model if isinstance(model, (list, tuple)) else (model,))
        self.tracker = ModuleTracker(models)
        self.rank = current_rank()
        self.enabled = bool(enabled) and (ranks is None or self.rank in set(ranks))
        self.start_step, self.end_step = start_step, end_step
        self.step_index = 0
        self.calls = 0  # ops seen in the active window
        self._pid = os.getpid()

    # ----------------------------------------------------------------- steps
    @property
    def in_window(self) -> bool:
        return self.step_index >= self.start_step and (self.end_step is None or self.step_index <= self.end_step)

    def step(self) -> None:
        """Mark the end of a training step (call it after optimizer.step())."""
        self.on_step_end()
        self.step_index += 1

    def on_step_end(self) -> None:  # for subclasses
        pass

    # ----------------------------------------------------------------- dispatch
    @property
    def module(self) -> str:
        return self.tracker.current

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self.in_window or func.namespace in BOOKKEEPING or os.getpid() != self._pid:
            return func(*args, **kwargs)  # a forked child (a DataLoader worker) keeps the mode: not its ops
        self.calls += 1
        return self.on_op(func, args, kwargs)

    def on_op(self, func, args, kwargs):
        return func(*args, **kwargs)

    def __enter__(self):
        if not self.enabled:
            return self
        self.tracker.__enter__()
        return super().__enter__()

    def __exit__(self, *exc):
        if not self.enabled:
            return False
        try:
            return super().__exit__(*exc)
        finally:
            self.tracker.__exit__(*exc)
            self.on_exit()

    def on_exit(self) -> None:  # for subclasses
        pass
