"""After migration: which ops a model uses, and where the target's numerics diverge.  Imports torch.

- `record_ops(model)`: every aten op with overload, input shapes, module path, forward/backward,
  counts -> OPS.json for `torchport ops check` (CLI: `torchport ops record`).
- `compare_with_reference(model, reference="cpu", ...)`: each op rerun on a reference device,
  per-op errors, a summary worst-first, dumps of failures, `replay(dump)`; its options in three
  groups: `Tolerance`, `OpSelection`, `Reporting`.
- `NanInfTracker(model)`: the first op making NaN/Inf from finite inputs, batched checks.
- `dump(folder, model, tensors=...)` and `compare_runs(a, b)`: two runs aligned op by op and step by
  step, with parameters and gradients, judged by relative error (verdict.py; CLI: `torchport debug dump
  -o DIR -- python train.py`, `torchport compare A B`).  `torchport debug nan -- python train.py` runs
  the NaN/Inf tracker on an unmodified script (script.py).

All are TorchDispatchMode context managers sharing step(), start_step/end_step, ranks
(RANK/LOCAL_RANK) and enabled=False; modules are named by attribute path.  See docs/debug.md.
"""
from .compare import (
    CompareFailure,
    CompareWithReference,
    OpSelection,
    Reporting,
    Tolerance,
    compare_with_reference,
    replay,
)
from .metrics import TOLERANCES, msprobe_verdict, tensor_metrics
from .nan import NanInfDetected, NanInfTracker
from .recorder import OpRecorder, record_ops
from .runs import RunDumper, compare_runs, dump, write_comparison

__all__ = ["record_ops", "OpRecorder", "compare_with_reference", "CompareWithReference", "CompareFailure", "replay",
           "Tolerance", "OpSelection", "Reporting",
           "NanInfTracker", "NanInfDetected", "dump", "RunDumper", "compare_runs", "write_comparison",
           "tensor_metrics", "msprobe_verdict", "TOLERANCES"]
