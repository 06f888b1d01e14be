"""`import torchport.auto`: run this process's CUDA code on the target, unmodified.

The target comes from TORCHPORT_TARGET, else the first installed vendor stack (torch_npu,
torch_mlu, torch_musa), else xpu or mps when available, else cpu.  Import it before anything
else so CUDA environment variables are mapped before the vendor stack starts.  Patches are
applied once however often this is imported; `torchport.auto.undo()` restores everything.
See torchport.runtime for the options and docs/run.md for what is patched.
"""
from .runtime import active, patch, undo

session = patch()

__all__ = ["session", "undo", "active", "patch"]
