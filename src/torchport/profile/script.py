"""`torchport profile [--to T] [--steps N] [--step-fn F | --window S] -o DIR -- python script.py ARGS`:
profile a script's first wait + warmup + N steps in this process, then end it.  What a step is
(an optimizer.step(), a call of --step-fn, a wall-clock window) is steps.StepClock's business.
Any spelling of this interpreter may start the command; another Python is refused (core.command).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..core.command import require_this_interpreter
from ..core.errors import UsageError


@dataclass(frozen=True)
class ProfileRequest:
    """One profiled run: `command` (python script.py ARGS) with the run-time patches of `target` (None: as it
    is), its first `wait` + `warmup` + `steps` steps profiled into the folder `output`; a step is an
    optimizer.step(), a call of `step_fn`, or a `window` of seconds (steps.StepClock); `amp_dtype` and
    `simulate` as `torchport run` takes them."""

    command: tuple
    output: str
    target: Optional[str] = None
    steps: int = 3
    wait: int = 1
    warmup: int = 1
    step_fn: Optional[str] = None
    window: Optional[float] = None
    amp_dtype: Optional[str] = None
    simulate: bool = False


def profile_script(request: ProfileRequest) -> tuple:
    """(exit code, Profiler).  With a target, the run-time patches of `torchport run --to T` are
    applied first and the target's device activity is profiled.  When nothing was profiled,
    `profiler.result` is None and `profiler.why_empty` says why."""
    command, output, target, steps = list(request.command), request.output, request.target, request.steps
    wait, warmup, step_fn, window = request.wait, request.warmup, request.step_fn, request.window
    amp_dtype, simulate = request.amp_dtype, request.simulate
    if steps < 1 or wait < 0 or warmup < 0:
        raise UsageError("--steps must be at least 1, --wait and --warmup at least 0")
    require_this_interpreter(command, "profile")
    from ..runtime.launch import run_patched, split_command
    from .profiler import Profiler
    from .steps import EndScript, StepClock

    script, module, args = split_command(command)
    made: dict = {}

    def instruments():   # after the patches: the vendor stack registers its profiler activity when imported
        made["profiler"] = Profiler(output, target=target, wait=wait, warmup=warmup, active=steps)
        made["clock"] = StepClock(made["profiler"], step_fn=step_fn, window=window)
        return made["profiler"], made["clock"]

    code = run_patched(script, module, args, target=target, amp_dtype=amp_dtype, simulate=simulate,
                       passthrough=(EndScript,), instruments=instruments)
    profiler, clock = made["profiler"], made["clock"]
    profiler.why_empty = None if profiler.result is not None else clock.why_no_profile()
    return code, profiler
