"""`torchport debug dump` and `torchport debug nan`: run an unmodified Python script (the command after
`--`) in this process as `__main__`, under a RunDumper or a NanInfTracker.

A step ends at each optimizer.step() once the script trains (it created or stepped an optimizer);
before that, and in a script that never does (inference), at the end of each forward of a module
called at top level.  With a step range only those steps are dumped or watched, and the script is
ended after the last one.  Any spelling of this interpreter may start the command (`python3.11`,
`/usr/bin/env python`, its path; core.command); another Python, a program that is not Python and a
file that does not compile as Python are refused in one line.
"""
from __future__ import annotations

import functools
import re
import shutil
from pathlib import Path
from typing import Optional

from ..core.command import interpreter_words, require_this_interpreter
from ..core.errors import UsageError

STEPS = re.compile(r"(\d+)(?:(-)(\d*))?")


class _Done(BaseException):
    """Raised inside the script after the last step asked for: it ends the script (not an error)."""


def parse_steps(text: Optional[str]) -> tuple:
    """(first, last or None) from `A-B`, `A-` (from A on) or `A` (only step A); steps count from 0."""
    if text is None:
        return 0, None
    match = STEPS.fullmatch(text.strip())
    if not match:
        raise UsageError(f"--steps {text!r}: give A-B (steps A to B, counted from 0), A- or A")
    first = int(match.group(1))
    last = first if not match.group(2) else int(match.group(3)) if match.group(3) else None
    if last is not None and last < first:
        raise UsageError(f"--steps {text}: the last step comes before the first")
    return first, last


def check_command(command: list, name: str) -> None:
    """A one-line UsageError unless `command` runs a Python script or module in this interpreter."""
    if not command:
        raise UsageError(f"{name} needs a command after --: torchport {name} ... -- python train.py ARGS")
    require_this_interpreter(command, name)
    rest = command[interpreter_words(command):]
    if not rest or rest[0] == "-m":
        return
    script = Path(rest[0])
    if not script.is_file():
        if not interpreter_words(command) and shutil.which(rest[0]):
            raise UsageError(f"{rest[0]} is a program, not a Python script: `torchport {name}` runs Python in its "
                             "own process (-- python train.py ARGS)")
        raise UsageError(f"script not found: {rest[0]}")
    source = script.read_bytes()
    first_line = source.split(b"\n", 1)[0]
    if first_line.startswith(b"#!") and b"python" not in first_line:
        raise UsageError(f"{script} is not a Python script ({first_line.decode('utf-8', 'replace').strip()}): "
                         f"`torchport {name}` runs Python in its own process")
    try:
        compile(source, str(script), "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as e:
        where = f" (line {e.lineno}: {e.msg})" if isinstance(e, SyntaxError) and e.lineno else ""
        raise UsageError(f"{script} is not a Python script{where}: `torchport {name}` runs Python in its own "
                         "process") from None


class _StepClock:
    """Calls `mode.step()` where a step ends (see the module docstring) and ends the script after `last`."""

    def __init__(self, mode, last: Optional[int]):
        self.mode, self.last = mode, last
        self.training = False
        self.forwards = self.optimizer_steps = 0   # the steps each rule ended
        self._undo: list = []

    def _tick(self) -> None:
        if self.training:
            self.optimizer_steps += 1
        else:
            self.forwards += 1
        self.mode.step()
        if self.last is not None and self.mode.step_index > self.last:
            raise _Done()

    def _after_optimizer(self, *_args, **_kwargs) -> None:
        self.training = True
        self._tick()

    def _after_root(self, _module) -> None:
        if not self.training:
            self._tick()

    def __enter__(self):
        import torch
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._undo.append(register_optimizer_step_post_hook(self._after_optimizer).remove)
        optimizer, original = torch.optim.Optimizer, torch.optim.Optimizer.__dict__["__init__"]
        clock = self

        @functools.wraps(original)
        def __init__(opt, *args, **kwargs):
            original(opt, *args, **kwargs)
            clock.training = True

        optimizer.__init__ = __init__
        self._undo.append(lambda: setattr(optimizer, "__init__", original))
        self.mode.tracker.on_root_end = self._after_root
        self._undo.append(lambda: setattr(self.mode.tracker, "on_root_end", None))
        return self

    def __exit__(self, *exc):
        while self._undo:
            self._undo.pop()()
        return False

    def describe(self) -> str:
        if not self.training:
            return "top-level module forward (no optimizer)"
        if not self.forwards:
            return "optimizer.step()"
        return (f"optimizer.step(); the first {self.forwards} were top-level module forwards, before the script "
                "created an optimizer")


def run_script(command: list, mode, name: str, *, last: Optional[int] = None, target: Optional[str] = None,
               amp_dtype: Optional[str] = None, simulate: bool = False) -> tuple:
    """Run `command` under `mode` (an OpMode); (exit code, what a step was).  `amp_dtype`: what CUDA's float16
    autocast becomes on the target (`torchport run --amp-dtype`); `simulate`: on torchport's simulated target."""
    check_command(command, name)
    from ..runtime.launch import run_patched, split_command

    script, module, args = split_command(command)
    clock = _StepClock(mode, last)
    code = run_patched(script, module, args, target=target, amp_dtype=amp_dtype, simulate=simulate,
                       passthrough=(_Done,), instruments=lambda: (clock, mode))
    return code, clock.describe()


def dump_script(command: list, output, *, tensors: bool = False, steps: Optional[str] = None,
                target: Optional[str] = None, amp_dtype: Optional[str] = None, simulate: bool = False) -> tuple:
    """`debug dump`: (exit code, RunDumper, what a step was)."""
    first, last = parse_steps(steps)
    from .runs import RunDumper

    dumper = RunDumper(output, tensors=tensors, start_step=first, end_step=last)
    code, step = run_script(command, dumper, "debug dump", last=last, target=target, amp_dtype=amp_dtype,
                            simulate=simulate)
    return code, dumper, step


def nan_script(command: list, *, steps: Optional[str] = None, check_every: int = 256,
               target: Optional[str] = None, amp_dtype: Optional[str] = None, simulate: bool = False) -> tuple:
    """`debug nan`: (exit code, NanInfTracker, what a step was)."""
    if check_every < 1:
        raise UsageError("--check-every must be at least 1")
    first, last = parse_steps(steps)
    from .nan import NanInfTracker

    tracker = NanInfTracker(check_every=check_every, start_step=first, end_step=last)
    code, step = run_script(command, tracker, "debug nan", last=last, target=target, amp_dtype=amp_dtype,
                            simulate=simulate)
    return code, tracker, step
