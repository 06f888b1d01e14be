"""torch.compile on a simulated device: the graph runs with an eager backend.

Inductor generates code per device type and knows no simulated one (`KeyError: 'npu'` from its device
registry); the vendors ship their own inductor backends, which need the hardware.  So the simulator
turns torch.compile's default backend (inductor) into "aot_eager": Dynamo captures the graph and
AOTAutograd traces forward and backward, as on the device, and the ops run eagerly on the simulated
device (its op list and device checks apply).  A backend the program names itself is kept.
Said once on stderr.
"""
from __future__ import annotations

import functools
import sys

BACKEND = "aot_eager"
_said = False


def install(device: str) -> None:
    """Wrap torch.compile (once per process)."""
    import torch

    if getattr(torch.compile, "_torchport_sim", False):
        return
    original = torch.compile

    @functools.wraps(original)
    def compile(model=None, *args, **kwargs):   # noqa: A001 - torch.compile's own name
        global _said
        if kwargs.get("backend", "inductor") == "inductor":
            kwargs["backend"] = BACKEND
            kwargs.pop("mode", None)      # inductor's modes and options mean nothing to aot_eager
            kwargs.pop("options", None)
            if not _said:
                _said = True
                print(f"torchport sim: torch.compile uses the '{BACKEND}' backend on the simulated {device} "
                      f"(inductor has no code generator for it; the graph's ops run eagerly on the device)",
                      file=sys.stderr)
        return original(model, *args, **kwargs)

    compile._torchport_sim = True  # type: ignore[attr-defined]  # marks the installed wrapper
    torch.compile = compile
