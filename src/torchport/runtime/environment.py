"""Environment variables: CUDA's mapped to the target's before the vendor stack starts, and the
variables that make child processes (torchrun workers, spawn workers, subprocesses) patch
themselves: TORCHPORT_TARGET & co., and PYTHONPATH pointing at runtime/boot, whose
sitecustomize.py patches a child as soon as it imports torch.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

BOOT = str(Path(__file__).resolve().parent / "boot")
OPTIONS = {"target": "TORCHPORT_TARGET", "policy": "TORCHPORT_POLICY", "on_missing": "TORCHPORT_ON_MISSING",
           "amp_dtype": "TORCHPORT_AMP_DTYPE"}
REPORT_DIR = "TORCHPORT_REPORT_DIR"


def map_cuda_variables(target, environ=None) -> dict:
    """Set the target's variable for each CUDA variable that is set (CUDA_VISIBLE_DEVICES ->
    ASCEND_RT_VISIBLE_DEVICES...), unless the target's is set already.  Returns {var: old value or
    None} for undo."""
    environ = os.environ if environ is None else environ
    changed: dict[str, str | None] = {}
    for cuda_var, target_var in target.env.items():
        if target_var and cuda_var in environ and target_var not in environ:
            changed[target_var] = None
            environ[target_var] = environ[cuda_var]
    return changed


def too_late(target) -> str:
    """A note when the vendor stack was imported before its variables could be set."""
    if target.register and target.register in sys.modules:
        return (f"{target.register} was imported before torchport set {target.visible_devices_env or 'its variables'}: "
                f"device visibility may not follow CUDA_VISIBLE_DEVICES (import torchport.auto first, or use torchport run)")
    return ""


def for_children(options: dict, environ=None) -> dict:
    """Make child processes patch themselves with the same options.  Returns {var: old value or None}."""
    environ = os.environ if environ is None else environ
    changed = {}
    for key, var in OPTIONS.items():
        if options.get(key) is not None and environ.get(var) != options[key]:
            changed[var] = environ.get(var)
            environ[var] = options[key]
    paths = environ.get("PYTHONPATH", "").split(os.pathsep) if environ.get("PYTHONPATH") else []
    if BOOT not in paths:
        changed["PYTHONPATH"] = environ.get("PYTHONPATH")
        environ["PYTHONPATH"] = os.pathsep.join([BOOT, *paths])
    return changed


def restore(changed: dict, environ=None) -> None:
    environ = os.environ if environ is None else environ
    for var, old in changed.items():
        if old is None:
            environ.pop(var, None)
        else:
            environ[var] = old
