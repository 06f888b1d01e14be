"""A simulated process ends cleanly after a backward pass.

Backward on the simulated device runs on autograd's device thread.  Each `backward()` stashes a copy of the
caller's contextvars in the autograd graph task (torch/autograd/graph.py `_engine_run_backward`), and the device
thread may drop the graph task's last reference just after `backward()` has returned.  Releasing that Python
object takes the GIL; if the main thread has meanwhile begun to finalize the interpreter, Python ends the device
thread with pthread_exit, which aborts the process ("terminate called without an active exception"), after all
its work was done.  Seen in 4 of 8 runs of tests/fixtures/sim/lacking_ops.py under gdb (torch 2.13.0, the
device thread's backtrace: GraphTask dispose -> ThreadLocalState -> SafePyObject decref -> take_gil ->
pthread_exit).

`settle_backward()` keeps the last stashed context and, at exit, before the interpreter finalizes, waits (up to
a second, releasing the GIL) until the graph task has let it go.
"""
from __future__ import annotations

import atexit
import sys
import time

_LAST: list = []
WAIT_SECONDS = 1.0


def settle_backward() -> None:
    """Install the wait (once per process)."""
    import torch

    stash = torch._C._stash_obj_in_tls
    if getattr(stash, "_torchport_settle", False):
        return

    def remembering_stash(key, obj):
        if key == "context":
            _LAST[:] = [obj]
        return stash(key, obj)

    remembering_stash._torchport_settle = True  # type: ignore[attr-defined]  # marks the installed wrapper
    torch._C._stash_obj_in_tls = remembering_stash
    atexit.register(_wait_for_graph_tasks)


def _wait_for_graph_tasks() -> None:
    if not _LAST:
        return
    context = _LAST[0]
    # held by _LAST, `context` and getrefcount's argument: anything more is a graph task not yet released
    deadline = time.monotonic() + WAIT_SECONDS
    while sys.getrefcount(context) > 3 and time.monotonic() < deadline:
        time.sleep(0.001)
