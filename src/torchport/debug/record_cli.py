"""`torchport ops record -o OPS.json [--steps N] [--to T] -- python train.py ARGS`: record the aten ops
a script runs (in this process, as __main__), optionally only its first N training steps (counted
at each optimizer.step()), optionally with the run-time patches of `torchport run --to T` so a
CUDA script can be recorded on a machine without CUDA.  OPS.json feeds `torchport ops check`.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

from ..core.errors import UsageError

PYTHONS = {"python", "python3", os.path.basename(sys.executable)}


class _StepsDone(BaseException):
    """Raised from the optimizer hook once the requested steps are recorded (ends the script)."""


def split_command(argv: list) -> tuple:
    """(script, module, args) from `python train.py a b`, `train.py a b` or `python -m pkg a b`."""
    if argv and argv[0] in PYTHONS:
        argv = argv[1:]
    if not argv:
        raise UsageError("ops record needs a command: -- python train.py ARGS")
    if argv[0] == "-m":
        if len(argv) < 2:
            raise UsageError("ops record: -m needs a module name")
        return None, argv[1], argv[2:]
    if not Path(argv[0]).is_file():
        raise UsageError(f"script not found: {argv[0]}")
    return argv[0], None, argv


def record_script(command: list, output, *, steps: Optional[int] = None, target: Optional[str] = None) -> tuple:
    """Run `command` under an OpRecorder; (exit code, recorder, path written)."""
    script, module, args = split_command(command)
    if steps is not None and steps < 1:
        raise UsageError("--steps must be at least 1")
    if target:
        from ..runtime import patch

        patch(target)
    from torch.optim.optimizer import register_optimizer_step_post_hook

    from ..runtime.launch import run_here
    from .recorder import OpRecorder

    recorder = OpRecorder()

    def after_step(optimizer, *a, **k):
        recorder.step()
        if steps is not None and recorder.steps_recorded >= steps:
            raise _StepsDone()

    handle = register_optimizer_step_post_hook(after_step)
    try:
        with recorder:
            try:
                code = run_here(script, module, args, passthrough=(_StepsDone,))
            except _StepsDone:
                code = 0
    finally:
        handle.remove()
    path = recorder.write(output)
    return code, recorder, path
