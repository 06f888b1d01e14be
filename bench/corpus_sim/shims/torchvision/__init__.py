"""Harness stand-in for torchvision (bench/corpus_sim only, never shipped to users).

PyPI's torchvision wheels are CUDA builds whose C ops do not load against the CPU build of torch
that this machine has, so the real projects' imports of torchvision cannot be satisfied here.  This
package provides, in plain torch, only what the corpus projects import: ops.nms, ops.batched_nms,
ops.box_iou and ops.misc.FrozenBatchNorm2d.
"""
from . import ops  # noqa: F401  (as the real package does)
