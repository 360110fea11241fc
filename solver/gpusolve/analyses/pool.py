"""The sensitivity analysis's parameters over a pool of forked processes, one parameter a
task, and the ways to stop it.

The command's main thread only waits (`stoppable`), so Ctrl-C and SIGTERM end the
analysis at once: no task starts after the stop, the searches running end, the workers
are terminated. The run's inputs reach the workers through the fork, never a pickle (the
rule policies hold compiled CEL programs, which do not pickle).

The workers leave signals to the parent and never outlive it. A forked worker
inherits the parent's Python handlers, which raise KeyboardInterrupt: Ctrl-C to the
process group, or the parent's SIGTERM ending the pool, printed a worker's traceback
about one run in three. So the thread that forks blocks SIGINT and SIGTERM while it does
(the child inherits the mask: no signal lands before the worker has set its own
dispositions), and each worker ignores SIGINT, takes SIGTERM's default, and dies with
its parent: `kill -9` of the parent left the workers waiting on their task queue forever.
On Linux the kernel kills the worker when its parent goes (prctl PR_SET_PDEATHSIG);
elsewhere a thread in the worker watches for its parent to change.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from types import FrameType
from typing import Any, Protocol, TypeVar

from gpusolve.analyses.probing import Outcome, Parameter


class AnyTask(Protocol):
    """What the pool runs: a parameter's task (`Task`, `scenario_sensitivity.ScenarioTask`)."""

    @property
    def parameter(self) -> Parameter: ...

    def analyse(self, inputs: Any) -> Outcome: ...


OnDone = Callable[[Outcome], None]


# A pool worker's copy of the run's inputs (a `CandidateInputs`, or one per scenario), set once by
# `_adopt` when the worker starts.
_WORKER_INPUTS: list[Any] = [None]


_PARENT_SIGNALS = {signal.SIGINT, signal.SIGTERM}
# Linux's prctl option that sends the calling process a signal when its parent exits
# (<linux/prctl.h>).
PR_SET_PDEATHSIG = 1
# How often the fallback watcher looks for its parent, seconds.
PARENT_POLL_S = 0.5


def _adopt(inputs: Any, parent_pid: int) -> None:
    """A worker's start: signals as the parent leaves them to it, death with the parent,
    then the run's inputs. Runs with SIGINT and SIGTERM blocked (`_forking`)."""
    # Ctrl-C reaches the whole process group: the parent alone answers it (`run_tasks`).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The parent ends the pool with SIGTERM (`_terminate`): end at once, no traceback.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    exit_with_parent(parent_pid)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _PARENT_SIGNALS)
    _WORKER_INPUTS[0] = inputs


def exit_with_parent(parent_pid: int) -> None:
    """End this process when `parent_pid`, its parent, exits: the kernel's parent-death
    signal where there is one, else a watching thread; at once if it has already gone."""
    if not parent_death_signal():
        threading.Thread(
            target=_watch_parent, args=(parent_pid,), name="gpusolve-parent", daemon=True
        ).start()
    if os.getppid() != parent_pid:  # gone before the signal was armed
        os._exit(1)


def parent_death_signal() -> bool:
    """Ask Linux to SIGKILL this process when its parent exits; False where it cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _watch_parent(parent_pid: int) -> None:
    # An orphan is re-parented (to init or a subreaper), so its parent id changes.
    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def _pooled(task: AnyTask) -> Outcome:
    return task.analyse(_WORKER_INPUTS[0])


class Stop:
    """Ends an analysis from another thread: no task starts after `stop`, the searches
    running in this process end (`interrupt.request_stop`), the pool's workers are
    terminated."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.pool: ProcessPoolExecutor | None = None

    def stop(self) -> None:
        from gpusolve.optimize import interrupt

        self.requested.set()
        interrupt.request_stop()
        if self.pool is not None:
            _terminate(self.pool)


@contextlib.contextmanager
def _forking() -> Iterator[None]:
    """SIGINT and SIGTERM blocked in this thread while it forks the workers: they inherit
    the mask and unblock once their own dispositions are set (`_adopt`). The parent's
    signals are still handled, by its main thread."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _PARENT_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _terminate(pool: ProcessPoolExecutor) -> None:
    # The executor's public API only cancels tasks not yet started; a parameter's task
    # can run for seconds.
    for process in list(getattr(pool, "_processes", {}).values()):
        process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)


class Stopped(Exception):
    """The analysis was stopped (`Stop`) before it finished."""


def run_tasks(
    tasks: Sequence[AnyTask],
    workers: int,
    inputs: Any = None,
    on_done: OnDone = lambda _: None,
    stop: Stop | None = None,
) -> list[Outcome]:
    """Every task's outcome, in the tasks' order: over a process pool of `workers` (one
    task per parameter), in this process when one worker or one task is enough or where
    processes cannot fork (the inputs reach the workers through the fork, not a pickle)."""
    stop = stop or Stop()
    forks = "fork" in multiprocessing.get_all_start_methods()
    if workers <= 1 or len(tasks) <= 1 or not forks:
        results = []
        for task in tasks:
            if stop.requested.is_set():
                raise Stopped
            results.append(task.analyse(inputs))
            on_done(results[-1])
        return results
    found: dict[int, Outcome] = {}
    pool = ProcessPoolExecutor(
        max_workers=min(workers, len(tasks)),
        mp_context=multiprocessing.get_context("fork"),
        initializer=_adopt,
        initargs=(inputs, os.getpid()),
    )
    stop.pool = pool
    try:
        # The longest first: an efficiency parameter generates the candidates at every
        # probe and takes several times a price's time, so it must not start last.
        order = sorted(range(len(tasks)), key=lambda i: tasks[i].parameter.kind != "efficiency")
        with _forking():  # a fork-context pool starts its workers at the first submit
            futures = {pool.submit(_pooled, tasks[i]): i for i in order}
        for future in as_completed(futures):
            found[futures[future]] = future.result()
            on_done(found[futures[future]])
    except BaseException as exc:
        _terminate(pool)  # a failed task or a stop: end the others now
        if stop.requested.is_set():
            raise Stopped from exc
        raise
    pool.shutdown()
    return [found[i] for i in range(len(tasks))]


def map_pool(tasks: Sequence[Any], workers: int, inputs: Any) -> list[Any]:
    """`task.analyse(inputs)` of every task over a forked process pool, in the tasks' order
    (the inputs through the fork, as `run_tasks`'); here where processes cannot fork."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return [t.analyse(inputs) for t in tasks]
    executor = ProcessPoolExecutor(
        max_workers=min(workers, len(tasks)),
        mp_context=multiprocessing.get_context("fork"),
        initializer=_adopt,
        initargs=(inputs, os.getpid()),
    )
    with executor, _forking():
        return list(executor.map(_pooled, tasks))


def default_workers() -> int:
    return max(
        1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    )


def progress_bar(total: int, enabled: bool) -> Any:
    """A progress bar on stderr (tqdm), drawn only on a terminal: logs and pipes stay clean."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc="gpusolve: sensitivity",
        unit="parameter",
        file=sys.stderr,
        disable=not enabled or not sys.stderr.isatty(),
        leave=False,
    )


T = TypeVar("T")


# After a stop, how long the analysis may take to notice before the command exits anyway.
STOP_GRACE_S = 5.0


def stoppable(work: Callable[[], T], stop: Stop) -> T:
    """`work` in a thread while this (main) thread answers Ctrl-C and SIGTERM: `stop`, then
    KeyboardInterrupt here. The main thread only waits, so the signal is handled at once
    and never inside a CP-SAT search, whose own handling of SIGINT ends that search and
    carries on (a solve that catches SIGINT itself even resets the handler; it is put
    back every 50 ms, as `interrupt.run_interruptibly` does). Off the main thread (no
    signals there) `work` simply runs."""
    from gpusolve.optimize.interrupt import in_worker_thread

    if threading.current_thread() is not threading.main_thread():
        return work()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    def on_break(worker: threading.Thread) -> None:
        stop.stop()
        worker.join(STOP_GRACE_S)  # out of CP-SAT before the interpreter exits

    return in_worker_thread(work, on_signal, "gpusolve-sensitivity", on_break=on_break)
