"""Built-in Python conversion checkers, one module per concern, and the one place that assembles them.

`builtin_checkers()` lists every checker convert runs: the modules below, the
shell and config checkers and the distributed-mode planner.  File-phase
checkers run in this order after the walk, so `imports` (which adds imports for
what the others changed) comes last.
"""
from __future__ import annotations

from ..checkers import Checker, found_in


def builtin_checkers(distributed: bool = True) -> list[Checker]:
    """Every built-in checker, in the order they run; `distributed=False` leaves out `convert --distributed`'s
    (converter/multicard.py, not imported then)."""
    from .. import config, shell
    from . import apex, api, devices, env, host, imports, messages, methods, onnx, profiler, reported
    from . import distributed as backends

    found = found_in(onnx, api, methods, devices, backends, messages, host, env, profiler, reported, apex, imports,
                     shell, config)
    if distributed:
        from .. import multicard

        found += found_in(multicard)
    return found


__all__ = ["Checker", "builtin_checkers"]
