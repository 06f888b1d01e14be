"""Zero-edit migration at run time: make unmodified CUDA code run on the target.

    import torchport.auto                 # target from TORCHPORT_TARGET or the installed vendor stack
    torchport run --to npu train.py ...   # the same, for a script, with a report and child processes

`patch()` maps CUDA environment variables, imports the vendor stack, then applies the patches of
`runtime.patches` (the torch.cuda namespace, device arguments, tensor/module methods, torch.load,
collectives, DDP, AMP, profiler) once per process; `undo()` restores every patched object.
Policies (docs/run.md): `policy` says who is told about the target by torch.cuda.is_available()
(project | always | real); `on_missing` says what a CUDA API with no counterpart does:
neutral (observing calls such as memory statistics return a neutral value, the rest fail),
warn (the rest are skipped, returning None) or raise (everything fails).  This package imports torch; the static tools never import it.
"""
from __future__ import annotations

import atexit
import importlib
import importlib.util
import os
import threading
from typing import Optional

from ..backends import load_target, target_names
from ..core.errors import UsageError
from . import environment
from .callers import POLICIES
from .session import Session, TorchportUnsupported, TorchportWarning

ON_MISSING = ("neutral", "warn", "raise")   # the first is the default (docs/run.md)
AMP_DTYPES = ("float16", "bfloat16")        # what CUDA's float16 autocast may become (--amp-dtype)
_LOCK = threading.Lock()
_SESSION: Optional[Session] = None
_ENV_CHANGES: dict = {}


def detect_target() -> str:
    """The first installed vendor stack (by name), else an available built-in device (xpu, mps), else cpu."""
    for name in target_names(kinds=("vendor",)):
        if importlib.util.find_spec(load_target(name).register) is not None:
            return name
    import torch

    for name in target_names(kinds=("builtin",)):
        module = getattr(torch, name, None) if name == "xpu" else getattr(torch.backends, name, None)
        if module is not None and module.is_available():
            return name
    return "cpu"


def _device_and_backend(target, torch) -> tuple:
    device = target.device
    if not device:  # device-agnostic target: whatever accelerator this machine has
        acc = torch.accelerator.current_accelerator() if hasattr(torch, "accelerator") else None
        device = acc.type if acc is not None else "cpu"
    backend = target.backend
    if target.backend_expr and torch.distributed.is_available():
        try:
            backend = torch.distributed.get_default_backend_for_device(device)
        except (RuntimeError, ValueError, AttributeError):
            backend = "gloo"
    return device, backend


def patch(target: Optional[str] = None, *, policy: Optional[str] = None, on_missing: Optional[str] = None,
          amp_dtype: Optional[str] = None, inherit: bool = True) -> Session:
    """Patch this process for `target` (once: a second call returns the same session).  Options left
    None come from TORCHPORT_TARGET / TORCHPORT_POLICY / TORCHPORT_ON_MISSING / TORCHPORT_AMP_DTYPE, then the
    defaults; `amp_dtype` is what CUDA's float16 autocast becomes (default: the target's AMP dtype)."""
    global _SESSION
    with _LOCK:
        name = target or os.environ.get("TORCHPORT_TARGET") or None
        if _SESSION is not None:
            if name and name != _SESSION.target.name and load_target(name).name != _SESSION.target.name:
                raise UsageError(f"already patched for {_SESSION.target.name}: call torchport.runtime.undo() first")
            return _SESSION
        policy = policy or os.environ.get("TORCHPORT_POLICY") or "project"
        on_missing = on_missing or os.environ.get("TORCHPORT_ON_MISSING") or ON_MISSING[0]
        if policy not in POLICIES:
            raise UsageError(f"policy must be one of {', '.join(POLICIES)} (got '{policy}')")
        if on_missing not in ON_MISSING:
            raise UsageError(f"on_missing must be one of {', '.join(ON_MISSING)} (got '{on_missing}')")
        amp_dtype = amp_dtype or os.environ.get("TORCHPORT_AMP_DTYPE") or None
        if amp_dtype is not None and amp_dtype not in AMP_DTYPES:
            raise UsageError(f"amp_dtype must be one of {', '.join(AMP_DTYPES)} (got '{amp_dtype}')")
        t = load_target(name or detect_target())
        late = environment.too_late(t)
        changes = environment.map_cuda_variables(t)   # before the vendor stack reads them
        import torch

        if t.register:
            try:
                importlib.import_module(t.register)
            except ImportError as e:
                environment.restore(changes)
                hint = f"; without the hardware, simulate it: `torchport sim --to {t.name} -- ...`" \
                    if t.name in ("npu", "mlu", "musa") else ""
                raise UsageError(f"{t.register} is not installed or does not load ({e}): "
                                 f"{t.title} needs {t.torch_install or t.register}{hint}") from None
        device, backend = _device_and_backend(t, torch)
        host_note = ""
        if not t.device and device == "cpu":  # device-agnostic code on a machine without an accelerator
            host_note = f"no accelerator on this machine: {t.name} runs as the cpu target"
            t = load_target("cpu")
            device, backend = _device_and_backend(t, torch)
        session = Session(t, torch, device, backend, policy, on_missing)
        session.amp_dtype = amp_dtype
        for note in (late, host_note):
            if note:
                session.stats.notes.append(note)
        from .patches import apply_all

        try:
            apply_all(session)
        except Exception:
            session.patcher.undo()
            environment.restore(changes)
            raise
        if inherit:
            changes.update(environment.for_children({"target": t.name, "policy": policy, "on_missing": on_missing,
                                                     "amp_dtype": amp_dtype}))
        _ENV_CHANGES.clear()
        _ENV_CHANGES.update(changes)
        _SESSION = session
        if os.environ.get(environment.REPORT_DIR):
            atexit.register(_write_report, session)
        return session


def _write_report(session: Session) -> None:
    folder = os.environ.get(environment.REPORT_DIR)
    if folder:
        try:
            session.stats.write(folder)
        except OSError:
            pass


def undo() -> None:
    """Restore everything `patch` changed (attributes, environment).  The counters stay readable."""
    global _SESSION
    with _LOCK:
        if _SESSION is None:
            return
        _SESSION.patcher.undo()
        environment.restore(_ENV_CHANGES)
        _ENV_CHANGES.clear()
        _SESSION = None


def active() -> Optional[Session]:
    """The current session, or None when this process is not patched."""
    return _SESSION


__all__ = ["patch", "undo", "active", "detect_target", "Session", "TorchportUnsupported", "TorchportWarning",
           "POLICIES", "ON_MISSING", "AMP_DTYPES"]
