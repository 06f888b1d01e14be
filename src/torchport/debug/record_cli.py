"""`torchport ops record -o OPS.json [--steps N] [--to T] -- python train.py ARGS`: record the aten ops
a script runs (in this process, as __main__), optionally only its first N training steps (counted
at each optimizer.step()), optionally with the run-time patches of `torchport run --to T` so a
CUDA script can be recorded on a machine without CUDA.  OPS.json feeds `torchport ops check`.
Any spelling of this interpreter may start the command (`python3.11`, `/usr/bin/env python`, its
path); another Python is refused, since the script runs here (core.command).
"""
from __future__ import annotations

from typing import Optional

from ..core.command import require_this_interpreter
from ..core.errors import UsageError


def record_script(command: list, output, *, steps: Optional[int] = None, target: Optional[str] = None) -> tuple:
    """Run `command` under an OpRecorder; (exit code, recorder, path written)."""
    if steps is not None and steps < 1:
        raise UsageError("--steps must be at least 1")
    require_this_interpreter(command, "ops record")
    from ..runtime.launch import run_steps
    from .recorder import OpRecorder

    recorder = OpRecorder()

    def on_step() -> bool:
        recorder.step()
        return steps is not None and recorder.steps_recorded >= steps

    code = run_steps(command, recorder, on_step, target)
    return code, recorder, recorder.write(output)
