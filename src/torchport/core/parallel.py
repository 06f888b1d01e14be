"""Running one function over many files, in worker processes when the work pays for them.

Each worker process builds its state once (`init(*init_args)`, stored by the
caller in a module global) and then handles chunks of items.  Small runs stay
in this process: starting workers costs more than it saves.
"""
from __future__ import annotations

import os
import sys
from typing import Callable, Optional

PARALLEL_MIN_BYTES = 1_500_000  # below this much work, workers cost more than they save


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS/Windows
        return os.cpu_count() or 1


def _worker_start(init: Callable, *init_args) -> None:
    """A worker leaves Ctrl-C to the parent, which stops the pool: no traceback per worker, no hang."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    init(*init_args)


def _chunk(args):
    work, indexes, items = args
    return indexes, [work(item) for item in items]


def run(items: list, init: Callable, init_args: tuple, work: Callable, n_jobs: int,
        weight: Callable, progress: Optional[Callable] = None, min_bytes: Optional[int] = None) -> list:
    """[work(item) for item in items], in item order; `weight(item)` estimates an item's cost in bytes."""
    weights = [weight(item) for item in items]
    total = sum(weights)
    n_jobs = max(1, n_jobs)
    threshold = PARALLEL_MIN_BYTES if min_bytes is None else min_bytes
    if n_jobs == 1 or total < threshold or len(items) < 8:
        init(*init_args)
        done_here = []
        for item in items:
            done_here.append(work(item))
            if progress:
                progress(len(done_here), len(items))
        return done_here
    # Round-robin the costly items over many chunks so every worker gets a share of them.
    order = sorted(range(len(items)), key=lambda i: -weights[i])
    n_chunks = n_jobs * 8
    chunks = [[i for i in order[k::n_chunks]] for k in range(n_chunks)]
    chunks = [c for c in chunks if c]
    import multiprocessing  # only parallel runs pay for importing it

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() and sys.platform != "darwin" else "spawn"
    ctx = multiprocessing.get_context(method)
    results: list = [None] * len(items)
    done = 0
    with ctx.Pool(n_jobs, _worker_start, (init, *init_args)) as pool:
        for indexes, part in pool.imap_unordered(_chunk, [(work, c, [items[i] for i in c]) for c in chunks]):
            for i, r in zip(indexes, part):
                results[i] = r
            done += len(indexes)
            if progress:
                progress(done, len(items))
    return results
