"""Running one function over many files, in worker processes when the work pays for them.

Each worker process builds its state once (`init(*init_args)`, stored by the
caller in a module global) and then handles chunks of items.  Small runs stay
in this process: starting workers costs more than it saves.
"""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

Item = TypeVar("Item")
Result = TypeVar("Result")

PARALLEL_MIN_BYTES = 1_500_000  # below this much work, workers cost more than they save


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS/Windows
        return os.cpu_count() or 1


def _serve(conn: Connection, init: Callable[..., object], init_args: tuple[Any, ...],
           work: Callable[[Any], object]) -> None:
    """A worker: build its state, then answer each chunk it is sent with its results until it is sent None.
    Ctrl-C is left to the parent, which stops the workers: no traceback per worker."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        init(*init_args)
        while True:
            job = conn.recv()
            if job is None:
                return
            indexes, items = job
            conn.send((indexes, [work(item) for item in items]))
    except EOFError:  # the parent went away
        return
    except BaseException as e:  # noqa: BLE001 - the parent raises it
        try:
            conn.send(("raise", e))
        except Exception:  # noqa: BLE001 - not picklable: say what it was
            conn.send(("raise", RuntimeError(f"{type(e).__name__}: {e}")))


def run(items: list[Item], init: Callable[..., object], init_args: tuple[Any, ...], work: Callable[[Item], Result],
        n_jobs: int, weight: Callable[[Item], int], progress: Optional[Callable[[int, int], object]] = None,
        min_bytes: Optional[int] = None) -> list[Result]:
    """[work(item) for item in items], in item order; `weight(item)` estimates an item's cost in bytes."""
    weights = [weight(item) for item in items]
    total = sum(weights)
    n_jobs = max(1, n_jobs)
    threshold = PARALLEL_MIN_BYTES if min_bytes is None else min_bytes
    if n_jobs == 1 or total < threshold or len(items) < 8:
        init(*init_args)
        done_here: list[Result] = []
        for item in items:
            done_here.append(work(item))
            if progress:
                progress(len(done_here), len(items))
        return done_here
    # Round-robin the costly items over many chunks so every worker gets a share of them.
    order = sorted(range(len(items)), key=lambda i: -weights[i])
    n_chunks = n_jobs * 8
    chunks = [c for c in ([i for i in order[k::n_chunks]] for k in range(n_chunks)) if c]
    return _in_workers(items, chunks, init, init_args, work, min(n_jobs, len(chunks)), progress)


def _in_workers(items: list[Item], chunks: list[list[int]], init: Callable[..., object], init_args: tuple[Any, ...],
                work: Callable[[Item], Result], n_jobs: int,
                progress: Optional[Callable[[int, int], object]]) -> list[Result]:
    """The chunks handed out to worker processes, each over a pipe of its own.  No lock is shared, so stopping
    (Ctrl-C, an error) is killing the workers: a multiprocessing.Pool can hang in terminate() while a worker
    is writing a large result."""
    import multiprocessing  # only parallel runs pay for importing it
    from multiprocessing.connection import wait

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() and sys.platform != "darwin" else "spawn"
    ctx = multiprocessing.get_context(method)
    results: list[Any] = [None] * len(items)   # each filled in by the chunk that holds it
    workers = []
    done = 0
    try:
        for _ in range(n_jobs):
            here, there = ctx.Pipe()
            process = ctx.Process(target=_serve, args=(there, init, init_args, work),  # type: ignore[attr-defined]
                                  daemon=True)
            process.start()
            there.close()
            workers.append((process, here))
        pending = list(chunks)
        busy = set()
        for _process, conn in workers:
            if pending:
                chunk = pending.pop(0)
                conn.send((chunk, [items[i] for i in chunk]))
                busy.add(conn)
        while busy:
            for ready in wait(list(busy)):
                conn = ready  # type: ignore[assignment]  # wait() returns the connections it was given
                try:
                    answer = conn.recv()
                except EOFError:
                    raise RuntimeError("a worker process ended without its results") from None
                if answer[0] == "raise":
                    raise answer[1]
                indexes, part = answer
                for i, r in zip(indexes, part):
                    results[i] = r
                done += len(indexes)
                if progress:
                    progress(done, len(items))
                if pending:
                    chunk = pending.pop(0)
                    conn.send((chunk, [items[i] for i in chunk]))
                else:
                    busy.discard(conn)
                    conn.send(None)
        for process, conn in workers:
            process.join()
            conn.close()
        return results
    finally:
        for process, conn in workers:
            if process.is_alive():
                process.kill()
                process.join()
            conn.close()
