"""What ends a step of `torchport profile`, and the end of the script once the profile is complete.

- `--step-fn SPEC`: a step is one call of the function SPEC names (an inference loop's `predict`);
  SPEC is FUNCTION (defined in the script), MODULE:FUNCTION or MODULE:Class.method.  The function is
  wrapped as soon as its module defines it: a trace function watches that module's top-level lines
  until then (nothing else is traced), so calls made by name or through `from MODULE import f` count.
- otherwise a step ends at each optimizer.step() when the script trains (creates an optimizer or
  steps one), and else, when the first wall-clock window after the script's work begins (its first
  module forward or DataLoader batch) passes without either, a step is a window of `window` seconds,
  ended at the first module forward or DataLoader batch after its time is up (the main thread's
  places where torchport can act).
"""
from __future__ import annotations

import functools
import inspect
import os
import sys
import threading
import time
from typing import Optional, cast

from ..core.errors import UsageError
from ..core.words import counted

DEFAULT_WINDOW = 1.0   # seconds
StepTarget = tuple[str, list[str]]   # --step-fn: (module, [attribute path])


class EndScript(BaseException):
    """Raised inside the script once the profile is complete: it ends the script (not an error)."""


def parse_step_fn(spec: str) -> StepTarget:
    """(module, [attribute path]) from FUNCTION, MODULE:FUNCTION or MODULE:Class.method."""
    module, _, path = spec.rpartition(":")
    names = path.split(".")
    if not all(n.isidentifier() for n in names) or (module and not all(m.isidentifier() for m in module.split("."))):
        raise UsageError(f"--step-fn {spec!r}: give FUNCTION (in the script), MODULE:FUNCTION or MODULE:Class.method")
    return module or "__main__", names


class StepClock:
    """Calls `profiler.step()` where a step ends and raises EndScript when the profiler has all its steps."""

    def __init__(self, profiler, *, step_fn: Optional[str] = None, window: Optional[float] = None):
        if window is not None and not window > 0:
            raise UsageError("--window must be a positive number of seconds")
        self.profiler = profiler
        self.step_fn = step_fn
        self.target: Optional[StepTarget] = parse_step_fn(step_fn) if step_fn else None
        self.window = window or DEFAULT_WINDOW
        self.mode = "function" if step_fn else "auto"   # auto becomes "optimizer" or "window"
        self.wrapped = False        # --step-fn: the function was found and wrapped
        self.calls = 0              # --step-fn: its calls that returned
        self._depth = 0
        self._deadline: Optional[float] = None
        self._forward_hook = None
        self._undo: list = []       # what __exit__ puts back
        self._owner = (os.getpid(), threading.get_ident())
        if self.target and self.target[0] != "__main__":
            loaded = sys.modules.get(self.target[0])
            if loaded is not None and self._lookup(vars(loaded)) is None:  # imported already: it will not change
                raise UsageError(f"--step-fn {step_fn}: {self.target[0]} has no function {'.'.join(self.target[1])}")

    def describe(self) -> str:
        """What one step is, for the summary ("one step = one ...")."""
        if self.mode == "function":
            return f"call of {self.step_fn} (--step-fn)"
        if self.mode == "window":
            return f"{self.window:g} s wall-clock window (the script made no optimizer in its first window)"
        return "optimizer.step()"

    def why_no_profile(self) -> str:
        p = self.profiler
        if self.mode == "function" and not self.wrapped:
            module, names = cast(StepTarget, self.target)   # "function" mode: --step-fn was given
            if module == "__main__" or module in sys.modules:
                return f"--step-fn {self.step_fn}: {'the script' if module == '__main__' else module} never defined " \
                       f"{'.'.join(names)} at module level"
            return (f"--step-fn {self.step_fn}: the script never imported {module} (a script run with -m is "
                    "__main__: name its functions without MODULE:)")
        if self.mode == "optimizer" and p.steps == 0:
            return "the script created an optimizer but made no optimizer.step(): mark its step function with --step-fn"
        if self.mode == "auto" and self._deadline is None:
            return ("the script made no optimizer.step(), no module forward and no DataLoader batch (which end "
                    "wall-clock windows): mark its step function with --step-fn")
        if self.mode == "auto":
            return (f"the script ended within its first {self.window:g} s window, with no optimizer.step(): give "
                    "a shorter --window, or mark its step function with --step-fn")
        done = f"{counted(self.calls, 'call')} of {self.step_fn}" if self.mode == "function" else counted(p.steps, "step")
        return (f"the script ended after {done}; a profiled step needs {p.wait + p.warmup + 1} ({p.wait} --wait + "
                f"{p.warmup} --warmup + 1)")

    # ------------------------------------------------------------------ hooks
    def __enter__(self):
        import torch
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self.profiler.step_by = self.describe()
        # a script that ends before its first window or step ends is profiled whole only when nothing chose
        # what a step is (no --step-fn, no optimizer): a 10-call inference loop
        self.profiler.whole_run_ok = lambda: self.mode == "auto"
        if self.mode == "function":
            self._watch_for_function()
            return self
        self._undo.append(register_optimizer_step_post_hook(self._after_optimizer).remove)
        self._forward_hook = torch.nn.modules.module.register_module_forward_hook(self._after_work)
        self.profiler.on_batch = self._after_work
        optimizer, original = torch.optim.Optimizer, torch.optim.Optimizer.__dict__["__init__"]
        clock = self

        @functools.wraps(original)
        def __init__(opt, *args, **kwargs):
            original(opt, *args, **kwargs)
            clock._training()

        optimizer.__init__ = __init__
        self._undo.append(lambda: setattr(optimizer, "__init__", original))
        return self

    def __exit__(self, *exc):
        self._drop_window_hooks()
        while self._undo:
            self._undo.pop()()
        if sys.gettrace() == self._find:  # the function was never defined
            sys.settrace(None)
        self.profiler.step_by = self.describe()
        return False

    def _drop_window_hooks(self) -> None:
        self.profiler.on_batch = None
        if self._forward_hook is not None:
            self._forward_hook.remove()
            self._forward_hook = None

    def _tick(self) -> None:
        self.profiler.step()
        if self.profiler.steps >= self.profiler.total_steps:
            raise EndScript()

    def _training(self) -> None:
        """An optimizer was created or stepped: steps are optimizer steps (unless windows were chosen)."""
        if self.mode == "auto":
            self.mode = "optimizer"
            self.profiler.step_by = self.describe()
            self._drop_window_hooks()

    def _after_optimizer(self, *_args, **_kwargs) -> None:
        self._training()
        if self.mode == "optimizer":
            self._tick()

    def _after_work(self, *_args) -> None:
        """After a module forward or a DataLoader batch: end the window when its time is up."""
        if (os.getpid(), threading.get_ident()) != self._owner or self.mode == "optimizer":
            return None
        now = time.perf_counter()
        if self._deadline is None:
            self._deadline = now + self.window
        elif now >= self._deadline:
            if self.mode == "auto":
                self.mode = "window"
                self.profiler.step_by = self.describe()
            self._tick()
            self._deadline = time.perf_counter() + self.window  # after the step began: a window is never shorter
        return None

    # ------------------------------------------------------------------ --step-fn
    def _watch_for_function(self) -> None:
        module, _ = cast(StepTarget, self.target)   # "function" mode: --step-fn was given
        loaded = sys.modules.get(module) if module != "__main__" else None
        if loaded is not None and self._wrap(vars(loaded)):
            return
        sys.settrace(self._find)

    def _find(self, frame, event, arg):
        """Global trace function: follow the top-level code of the module that defines the function."""
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == self.target[0]:
            return self._line
        return None

    def _line(self, frame, event, arg):
        if self._wrap(frame.f_globals):
            sys.settrace(None)
            return None
        return self._line

    def _lookup(self, namespace: dict):
        """(owner class or None, attribute name, what is there) of the function in `namespace`, or None."""
        first, *path = cast(StepTarget, self.target)[1]   # --step-fn was given
        if not path:
            raw = namespace.get(first)
            return (None, first, raw) if inspect.isfunction(getattr(raw, "__func__", raw)) else None
        owner = namespace.get(first)  # Class.method: the class, then the attribute on it
        for name in path[:-1]:
            owner = inspect.getattr_static(owner, name, None) if owner is not None else None
        raw = inspect.getattr_static(owner, path[-1], None) if owner is not None else None
        return (owner, path[-1], raw) if inspect.isfunction(getattr(raw, "__func__", raw)) else None

    def _wrap(self, namespace: dict) -> bool:
        """Replace the function in `namespace` (a module's globals) by a counting wrapper, once it exists."""
        found = self._lookup(namespace)
        if found is None:
            return False
        owner, name, raw = found
        kind = type(raw) if isinstance(raw, (staticmethod, classmethod)) else None
        wrapper = kind(self._counting(raw.__func__)) if kind else self._counting(raw)
        if owner is None:
            namespace[name] = wrapper
            self._undo.append(lambda: namespace.__setitem__(name, raw))
        else:
            setattr(owner, name, wrapper)
            self._undo.append(lambda: setattr(owner, name, raw))
        self.wrapped = True
        return True

    def _counting(self, function):
        clock = self

        @functools.wraps(function)
        def step_function(*args, **kwargs):
            if clock._depth:  # a recursive call is part of the step under way
                return function(*args, **kwargs)
            clock._depth += 1
            try:
                result = function(*args, **kwargs)
            finally:
                clock._depth -= 1
            clock.calls += 1
            clock._tick()
            return result

        return step_function
