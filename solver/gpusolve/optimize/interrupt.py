"""Ctrl-C and SIGTERM during a solve: stop the search, keep the best plan found so far.

CP-SAT runs in C++ and holds the main thread for the whole solve, so Python's own
KeyboardInterrupt would wait for the time limit (8 s and an "optimal" plan in the issue).
Instead the command runs the planner in a worker thread (`run_interruptibly`); the main
thread only waits, so its signal handler runs at once and asks every running CP-SAT
solver to stop (`CpSolver.stop_search`, thread-safe). The stages then see no time left
(`remaining`), return the best plan they hold, and the command marks it interrupted.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")

_requested = threading.Event()
_searched = threading.Event()  # a CP-SAT search has started in this run
_active: weakref.WeakSet[Any] = weakref.WeakSet()
_lock = threading.Lock()
_announce: list[Callable[[], None]] = []  # told once when the first search starts
# `time.monotonic()` by which every search of the command ends (`--time-limit` is a limit for
# the whole command): set by the command, inherited by the pool's forked workers.
_deadline: list[float | None] = [None]
# After a stop request the worker reads out its plan (tenths of a second at 40x120x40);
# if it is still busy after this long (a long Python stage), give up without a plan.
GRACE_S = 10.0


def stop_at(deadline: float | None) -> None:
    """Every search started from now on ends by `deadline` (`time.monotonic()`), whatever
    its own limit; None lifts it. The command sets it before its first search and lifts it
    when it returns."""
    _deadline[0] = deadline


def seconds_left() -> float:
    """Seconds until the deadline (infinite without one); at least a millisecond, the
    solvers' own minimum."""
    deadline = _deadline[0]
    return math.inf if deadline is None else max(0.001, deadline - time.monotonic())


def past_deadline() -> bool:
    deadline = _deadline[0]
    return deadline is not None and time.monotonic() >= deadline


def requested() -> bool:
    """True once Ctrl-C or SIGTERM arrived during this run."""
    return _requested.is_set()


def reset() -> None:
    """Forget a stop request: the next run starts clean. `run_interruptibly` does this on
    entry; a library caller that solves outside it (tests, notebooks) calls it itself,
    or a request left from an earlier run stops its first search at once."""
    _requested.clear()
    _searched.clear()
    with _lock:
        _active.clear()
        _announce.clear()


def watch(solver: Any, *, announce: bool = True, deadline: bool = True) -> None:
    """Called before every solve: a stop request reaches the solver while it runs, and a
    CP-SAT solver's time limit is cut to the command's deadline (`stop_at`). `solver` is a
    CP-SAT solver or anything else with a thread-safe `stop_search()` (the HiGHS backend's
    stop flag, `milp/highs.py`, which reads the deadline itself).

    CP-SAT would otherwise install its own SIGINT handler for the solve (a process-wide
    one, shared by every solver): it stops only the stage running, the next stage runs
    on (the 8 s of the issue), and one solver ending while another runs in the worker
    thread left it calling an empty std::function (SIGABRT). Ours is the only handler.
    `deadline` False keeps the solver's own limit: a short completion that must run even
    past the deadline (`fallback.py`).
    """
    params = getattr(solver, "parameters", None)
    if params is not None:
        params.catch_sigint_signal = False
        if deadline:
            params.max_time_in_seconds = min(params.max_time_in_seconds, seconds_left())
    _searched.set()
    with _lock:
        _active.add(solver)
        tell = _announce[:] if announce else []
        if announce:
            _announce.clear()
    if _requested.is_set():
        # stop_search() on a solver that has not started is forgotten when it starts: a
        # search begun after the stop request gets no time instead.
        if params is not None:
            params.max_time_in_seconds = 0.0
        solver.stop_search()
    for call in tell:
        call()


def request_stop() -> bool:
    """Stop every running search; False when none has started (nothing worth keeping)."""
    _requested.set()
    with _lock:
        solvers = list(_active)
    for solver in solvers:
        solver.stop_search()  # a no-op on a solver whose solve has returned
    return _searched.is_set()


def _give_up() -> None:
    """Exit 130 now. The worker may be inside CP-SAT's C++; finalising the interpreter
    around it can abort (std::bad_function_call, SIGABRT), so the process ends at once."""
    sys.stdout.flush()
    print("gpusolve: interrupted before any plan was found", file=sys.stderr, flush=True)
    os._exit(130)


def run_interruptibly(
    work: Callable[[], T],
    on_search: Callable[[], None] | None = None,
    tick: Callable[[], None] | None = None,
) -> T:
    """Run `work` with SIGINT and SIGTERM stopping its solves instead of killing it.

    A signal before any search started (candidates, model building), a second signal, or
    a worker still busy `GRACE_S` after the first gives up at once: exit 130 without a
    plan. `on_search` is called once, when the first search of the plan itself starts (after
    the warm start, whose plan it holds as a hint); `tick`, every 50 ms on the waiting thread
    (a progress display).
    Outside the main thread (signals cannot be caught there) `work` simply runs.
    """
    if threading.current_thread() is not threading.main_thread():
        return work()
    reset()
    with _lock:
        _announce[:] = [on_search] if on_search else []
    stopped_at: list[float] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if _requested.is_set() or not request_stop():
            _give_up()
        stopped_at.append(time.monotonic())

    def every_50_ms() -> None:
        if stopped_at and time.monotonic() - stopped_at[0] > GRACE_S:
            _give_up()
        if tick is not None:
            tick()

    return in_worker_thread(work, on_signal, "gpusolve-solve", tick=every_50_ms)


def in_worker_thread(
    work: Callable[[], T],
    on_signal: Callable[[int, FrameType | None], None],
    name: str,
    *,
    tick: Callable[[], None] | None = None,
    on_break: Callable[[threading.Thread], None] | None = None,
) -> T:
    """`work` in a thread while the calling (main) thread only waits with `on_signal` as
    its SIGINT and SIGTERM handler, so a signal is handled at once and never inside a
    CP-SAT search. `tick` runs every 50 ms; `on_break(worker)` runs when the handler
    raises KeyboardInterrupt, which then propagates. The previous handlers come back
    whatever happens; an exception in `work` is re-raised here."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the main thread, which re-raises it
            box["error"] = exc

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    worker = threading.Thread(target=target, name=name, daemon=True)
    try:
        worker.start()
        while worker.is_alive():
            worker.join(0.05)
            # A CP-SAT solve that still catches SIGINT itself (the tiny ones in lazy.py)
            # resets the process's handler to SIG_DFL when it ends: take it back.
            signal.signal(signal.SIGINT, on_signal)
            if tick is not None:
                tick()
    except KeyboardInterrupt:
        if on_break is not None:
            on_break(worker)
        raise
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]
