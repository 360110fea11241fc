"""Solve a translated MILP (`translate.Milp`) with HiGHS, under limits that do not depend on
the machine's load.

HiGHS has no deterministic clock, and its LP iteration count does not reach its callbacks;
what does, at points fixed by the model, the seed and the options (one thread), is each of
its limit checks: the MIP interrupt callback, called through the root's cut rounds and
heuristics and at every node. The checks are its work clock here: `SolveConfig.work_limit`
(CP-SAT's unit, about a second of one idle core) times `CHECKS_PER_WORK`, so the same model
stops at the same check on an idle or a loaded machine. The wall clock (`time_limit_s`) stays
an outer bound. A stop request (Ctrl-C, SIGTERM: `interrupt.py`) reaches the search through
the same callback. highspy is imported only here, when a schedule is solved.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gpusolve.optimize import interrupt
from gpusolve.optimize.ir import SolveConfig, Status
from gpusolve.optimize.milp.translate import INF, Milp

# Limit checks per unit of work. Measured per second of one core's CPU time on the schedule
# benchmarks (benchmarks/README.md, "Procurement over time"): 50-92 on S instances, ~25 on
# the shipped example, 2-3 on M instances whose root LP dominates; 25 keeps a unit near a
# second where the search is in its tree, and longer where a root is long.
CHECKS_PER_WORK = 25

# Called with each better solution's (objective, bound) as the search finds it.
Found = Callable[[int, int], None]


@dataclass(frozen=True)
class MilpAnswer:
    """HiGHS's answer in the planner's terms: values per column (CP-SAT variable index)."""

    status: Status
    values: tuple[int, ...] | None
    objective: int | None  # of `values`, offset included
    bound: int | None
    nodes: int
    checks: int  # limit checks: the work clock (module docstring)
    work: float


class Stop:
    """What `interrupt.watch` holds for a HiGHS search: `stop_search` from any thread
    sets a flag the MIP interrupt callback reads; `at(checks)`, a stop decided by the
    check count (a race's rule, `race.py`)."""

    def __init__(self) -> None:
        self.requested = threading.Event()

    def stop_search(self) -> None:
        self.requested.set()

    def at(self, checks: int) -> bool:
        return False


class _Clock:
    """HiGHS's limit checks, counted; over `budget`, the search stops."""

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.checks = 0

    def spent(self) -> bool:
        self.checks += 1
        return self.checks > self.budget


def _quiet_highs() -> Any:
    import highspy

    class Quiet(highspy.Highs):
        # highspy prints a banner on stdout when callbacks are enabled with output on.
        def enableCallbacks(self) -> None:
            self.setOptionValue("output_flag", False)
            super().enableCallbacks()  # type: ignore[no-untyped-call]

    return Quiet()  # type: ignore[no-untyped-call]


def _lp(m: Milp) -> Any:
    import highspy
    import numpy as np

    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = len(m.cost), len(m.rows)
    lp.col_cost_ = np.array(m.cost, dtype=float)
    lp.col_lower_ = np.array([-inf if v == -INF else v for v in m.lower], dtype=float)
    lp.col_upper_ = np.array([inf if v == INF else v for v in m.upper], dtype=float)
    lp.row_lower_ = np.array([-inf if r[2] == -INF else r[2] for r in m.rows], dtype=float)
    lp.row_upper_ = np.array([inf if r[3] == INF else r[3] for r in m.rows], dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = np.cumsum([0] + [len(r[0]) for r in m.rows]).astype(np.int32)
    lp.a_matrix_.index_ = np.array([j for r in m.rows for j in r[0]], dtype=np.int32)
    lp.a_matrix_.value_ = np.array([a for r in m.rows for a in r[1]], dtype=float)
    lp.integrality_ = [highspy.HighsVarType.kInteger] * len(m.cost)
    lp.offset_ = float(m.offset)
    return lp


def _options(h: Any, config: SolveConfig, threads: int) -> None:
    h.setOptionValue("mip_rel_gap", float(config.relative_gap))
    # A fixed thread count: the checks, and so the answer, are then the same every run.
    _use_threads(threads)
    h.setOptionValue("threads", threads)
    h.setOptionValue("random_seed", int(config.seed))
    wall_s = min(config.time_limit_s, interrupt.seconds_left())
    if math.isfinite(wall_s):
        h.setOptionValue("time_limit", float(max(wall_s, 0.001)))


# The thread count HiGHS's process-wide scheduler was started with, and the thread that
# started it (None: not yet).
_scheduler: list[tuple[int, int] | None] = [None]
_scheduler_lock = threading.Lock()


def _use_threads(threads: int) -> None:
    """HiGHS starts one scheduler per process, with the first run's thread count, from
    the thread of that run, and refuses a run asking for another count, or from another
    thread (an error, no solution). One HiGHS search runs at a time here (a race has one),
    so the scheduler is restarted when the count or the calling thread changes."""
    import highspy

    here = (threads, threading.get_ident())
    with _scheduler_lock:
        if _scheduler[0] not in (None, here):
            highspy.Highs.resetGlobalScheduler(True)
        _scheduler[0] = here


def _callbacks(h: Any, stop: Stop, clock: _Clock, found: Found | None) -> None:
    def on_interrupt(e: Any) -> None:
        if clock.spent() or stop.requested.is_set() or stop.at(clock.checks):
            e.interrupt()

    h.cbMipInterrupt.subscribe(on_interrupt)
    if found is not None:

        def on_improved(e: Any) -> None:
            out = e.data_out
            found(round(out.objective_function_value), _integral(out.mip_dual_bound))

        h.cbMipImprovingSolution.subscribe(on_improved)


def _integral(bound: float) -> int:
    # The objective is integral, so a bound a hair under an integer proves that integer.
    return math.ceil(bound - 1e-6) if math.isfinite(bound) else -(2**62)


def _start(h: Any, values: Mapping[int, int]) -> None:
    """A start over some columns (HiGHS completes the rest with a small sub-MIP)."""
    import numpy as np

    index = np.array(list(values), dtype=np.int32)
    h.setSolution(len(index), index, np.array(list(values.values()), dtype=float))


def solve_milp(
    m: Milp,
    config: SolveConfig,
    found: Found | None = None,
    start: Mapping[int, int] | None = None,
    stop: Stop | None = None,
    threads: int = 1,
) -> MilpAnswer:
    """The cheapest solution of `m` HiGHS finds within `config`'s limits, from `start`
    (values by column) where given, stopped early by `stop`, on `threads` threads; status
    "model_invalid" where HiGHS cannot tell infeasible from unbounded (the caller asks
    CP-SAT)."""
    import highspy

    undecided = (
        highspy.HighsModelStatus.kUnboundedOrInfeasible,
        highspy.HighsModelStatus.kUnbounded,
        highspy.HighsModelStatus.kModelError,
        highspy.HighsModelStatus.kSolveError,
    )
    h = _quiet_highs()
    h.passModel(_lp(m))
    _options(h, config, threads)
    stop = stop or Stop()
    work = config.work_limit if config.work_limit is not None else math.inf
    clock = _Clock(work * CHECKS_PER_WORK)
    _callbacks(h, stop, clock, found)
    if start:
        _start(h, start)
    interrupt.watch(stop)
    ran = h.run()
    info = h.getInfo()
    model_status = h.getModelStatus()
    if ran == highspy.HighsStatus.kError:
        # HiGHS refused to run (an option, its scheduler): CP-SAT answers instead.
        return MilpAnswer("model_invalid", None, None, None, 0, clock.checks, 0.0)
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    values = tuple(round(v) for v in h.getSolution().col_value) if has_solution else None
    nodes = int(info.mip_node_count)
    if model_status == highspy.HighsModelStatus.kOptimal:
        status: Status = "optimal"
    elif model_status == highspy.HighsModelStatus.kInfeasible:
        status = "infeasible"
    elif model_status in undecided:
        status = "model_invalid"
    else:
        status = "feasible" if has_solution else "unknown"
    bound = _integral(info.mip_dual_bound) if math.isfinite(info.mip_dual_bound) else None
    objective = m.objective(values) if values is not None else None
    checks = clock.checks
    return MilpAnswer(status, values, objective, bound, nodes, checks, checks / CHECKS_PER_WORK)
