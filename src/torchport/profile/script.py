"""`torchport profile [--to T] [--steps N] -o DIR -- python train.py ARGS`: profile a script's first
wait + warmup + N training steps (a step ends at each optimizer.step()), in this process, then end it.
"""
from __future__ import annotations

from typing import Optional

from ..core.errors import UsageError


def profile_script(command: list, output, *, target: Optional[str] = None, steps: int = 3, wait: int = 1,
                   warmup: int = 1) -> tuple:
    """(exit code, Profiler).  With a target, the run-time patches of `torchport run --to T` are
    applied first and the target's device activity is profiled."""
    if steps < 1 or wait < 0 or warmup < 0:
        raise UsageError("--steps must be at least 1, --wait and --warmup at least 0")
    from ..runtime.launch import run_steps
    from .profiler import Profiler

    if target:  # the vendor stack registers its profiler activity when it is imported: patch first
        from ..runtime import patch

        patch(target)
    profiler = Profiler(output, target=target, wait=wait, warmup=warmup, active=steps)

    def on_step() -> bool:
        profiler.step()
        return profiler.steps >= profiler.total_steps

    return run_steps(command, profiler, on_step, target), profiler
