"""Built-in Python conversion checkers, one module per concern, and the one place that assembles them.

`builtin_checkers()` lists every checker convert runs: the modules below, the
shell and config checkers and the distributed-mode planner.  File-phase
checkers run in this order after the walk, so `imports` (which adds imports for
what the others changed) comes last.
"""
from __future__ import annotations

from ..checkers import Checker, found_in


def builtin_checkers() -> list:
    """Every built-in checker, in the order they run."""
    from .. import config, multicard, shell
    from . import api, devices, distributed, env, host, imports, messages, methods, profiler, reported

    return found_in(api, methods, devices, distributed, messages, host, env, profiler, reported, imports,
                    shell, config, multicard)


__all__ = ["Checker", "builtin_checkers"]
