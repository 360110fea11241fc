"""CP-SAT and HiGHS on the same model at once, the winner decided by rules on each solver's
own load-independent work, never by which finished first.

Neither solver is the faster on every schedule: on the shipped example (a real catalogue, a
few workloads, exact rack packing) CP-SAT proves the optimum 3-5x sooner, on the generated
market instances of the benchmarks HiGHS does, by a factor growing with the periods
(benchmarks/README.md, "Procurement over time"). Racing them (CP-SAT on one worker, HiGHS
on the two threads it has alone) gives each schedule nearly the faster of the two.

A race that stopped at the first proof would answer with whichever solver the machine's
load favoured, and where several schedules tie at the optimum the two may pick different
ones. So the winner follows from work each solver counts for itself (CP-SAT's deterministic
time on one worker, HiGHS's limit checks at its fixed thread count), in this order:

1. HiGHS, when it proves within `HIGHS_QUICK_WORK` (the market instances it closes at or
   near the root);
2. else CP-SAT, when it proves within `CPSAT_WORK` (the example's kind);
3. else HiGHS, when it proves within the work limit;
4. else the cheaper of the two incumbents (HiGHS's on a tie), with the better bound.

A solver is stopped as soon as the rules can no longer pick it: CP-SAT when HiGHS proves
quickly, HiGHS at its quick budget when CP-SAT has proved, CP-SAT at its share. Past its
quick budget HiGHS waits for CP-SAT's answer before it searches on (it can win then only
where CP-SAT does not prove): the two share the cores only for the quick budget. The cost
of the determinism is a wait bounded by those budgets (HiGHS proving after its quick budget
waits for CP-SAT's share to run out). A wall-clock limit or a stop request still ends both
at once, and then the answer depends on the load, as any wall-clock limit's does.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Literal

from ortools.sat.python import cp_model

from gpusolve.optimize.cpsat import STATUS, integral_bound
from gpusolve.optimize.ir import SolveConfig, Status
from gpusolve.optimize.milp.highs import (
    CHECKS_PER_WORK,
    Found,
    MilpAnswer,
    Stop,
    solve_milp,
)
from gpusolve.optimize.milp.solve import ALONE_THREADS, checked, hints
from gpusolve.optimize.milp.translate import Milp

# Work units (`SolveConfig.work_limit`'s: about a second of one idle core). HiGHS proves the
# market schedules of the benchmarks it proves at all in 2-10 limit checks (M x 4 and x 12)
# and needs 200-230 on the shipped example's, which CP-SAT proves in under 3 units; one unit
# (25 checks) tells the two kinds apart. CP-SAT's share is the time worth waiting for its
# proof on the kind of schedule it is good at before HiGHS, which proves the rest sooner, is
# left alone (benchmarks/README.md, "Procurement over time").
HIGHS_QUICK_WORK = 1.0
CPSAT_WORK = 10.0

Solver = Literal["HiGHS", "CP-SAT"]
PROVEN: tuple[Status, ...] = ("optimal", "infeasible")


@dataclass(frozen=True)
class Raced:
    status: Status
    values: cp_model.CpSolver | None  # reads the winning solution (None: none found)
    bound: int | None
    work: float  # in `SolveConfig.work_limit`'s unit: the winner's, or both at their limits
    solver: str  # who answered: "HiGHS", "CP-SAT"


@dataclass(frozen=True)
class Ran:
    """What one solver of a race ended with, in the rules' terms."""

    status: Status
    objective: int | None  # of its incumbent (None: none)
    work: float


def winner(highs: Ran, cp_sat: Ran, quick_work: float) -> Solver:
    """The rules of the module's docstring: whose answer the race returns."""
    if highs.status in PROVEN and highs.work <= quick_work:
        return "HiGHS"
    if cp_sat.status in PROVEN:
        return "CP-SAT"
    if highs.status in PROVEN:
        return "HiGHS"
    if cp_sat.objective is not None and (
        highs.objective is None or cp_sat.objective < highs.objective
    ):
        return "CP-SAT"
    return "HiGHS"


class _Best:
    """The best objective and bound either solver has reported, told to `found` when
    they improve (the two callbacks run on the two solver threads)."""

    def __init__(self, found: Found | None) -> None:
        self.found = found
        self.lock = threading.Lock()
        self.objective: int | None = None
        self.bound: int | None = None

    def report(self, objective: int, bound: int) -> None:
        with self.lock:
            better = self.objective is None or objective < self.objective
            if better:
                self.objective = objective
            if self.bound is None or bound > self.bound:
                self.bound = bound
            if better and self.found is not None:
                self.found(objective, self.bound)


class _CpSatProgress(cp_model.CpSolverSolutionCallback):
    def __init__(self, best: _Best) -> None:
        super().__init__()
        self.best = best

    def on_solution_callback(self) -> None:
        self.best.report(int(self.objective_value), int(self.best_objective_bound))


class _HighsStop(Stop):
    """HiGHS's stop in a race: past its quick budget, it waits for CP-SAT's answer, then
    stops if CP-SAT proved (rule 2 then picks CP-SAT whatever HiGHS does), else goes on.

    Past its quick budget HiGHS can win only where CP-SAT does not prove within its share
    (rules 3 and 4), so searching on beside CP-SAT would only take the cores CP-SAT's proof
    needs (on the 2-core CI machine, HiGHS's two threads and CP-SAT's one share two cores).
    Waiting changes no answer: each solver's search, and so the rules, follow from its own
    work alone."""

    def __init__(self, quick_checks: float) -> None:
        super().__init__()
        self.quick_checks = quick_checks
        self.cp_sat_proved = threading.Event()
        self.cp_sat_ended = threading.Event()

    def at(self, checks: int) -> bool:
        if checks <= self.quick_checks:
            return False
        self.cp_sat_ended.wait()
        return self.cp_sat_proved.is_set() or self.requested.is_set()


def race(
    model: cp_model.CpModel,
    milp: Milp,
    cp_solver: cp_model.CpSolver,
    config: SolveConfig,
    found: Found | None = None,
) -> Raced:
    """`model` by `cp_solver` (set up by the caller; one worker and CP-SAT's share of the
    work are set here) and its translation `milp` by HiGHS, in two threads; the answer by
    the rules of the module's docstring."""
    limit = config.work_limit if config.work_limit is not None else math.inf
    quick_work = min(HIGHS_QUICK_WORK, limit)
    params = cp_solver.parameters
    params.num_workers = 1  # one worker's deterministic time is deterministic
    params.max_deterministic_time = min(CPSAT_WORK, limit)
    best = _Best(found)
    start = hints(model)
    highs_stop = _HighsStop(quick_work * CHECKS_PER_WORK)
    highs: list[MilpAnswer] = []
    cp_status: list[cp_model.CpSolverStatus] = []

    def run_highs() -> None:
        highs.append(solve_milp(milp, config, best.report, start, highs_stop, ALONE_THREADS))
        h = highs[0]
        if h.status in PROVEN and h.work <= quick_work:
            cp_solver.stop_search()

    def run_cp_sat() -> None:
        try:
            cp_status.append(cp_solver.solve(model, _CpSatProgress(best)))
            if STATUS[cp_status[0]] in PROVEN:
                highs_stop.cp_sat_proved.set()
        finally:
            highs_stop.cp_sat_ended.set()  # HiGHS never waits on a CP-SAT that has ended

    threads = [threading.Thread(target=f, daemon=True) for f in (run_highs, run_cp_sat)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return _outcome(model, highs[0], STATUS[cp_status[0]], cp_solver, quick_work)


def _cp_bound(solver: cp_model.CpSolver) -> int | None:
    raw = solver.best_objective_bound
    return integral_bound(raw, maximise=False) if abs(raw) < 2**62 else None


def _outcome(
    model: cp_model.CpModel,
    h: MilpAnswer,
    cp: Status,
    solver: cp_model.CpSolver,
    quick_work: float,
) -> Raced:
    cp_ran = Ran(
        cp,
        int(solver.objective_value) if cp in ("optimal", "feasible") else None,
        solver.response_proto.deterministic_time,
    )
    highs_ran = Ran(h.status, h.objective if h.values is not None else None, h.work)
    who = winner(highs_ran, cp_ran, quick_work)
    cp_bound = _cp_bound(solver) if cp in ("optimal", "feasible", "unknown") else None
    bounds = [b for b in (h.bound, cp_bound) if b is not None]
    bound = max(bounds) if bounds else None
    proved = (cp_ran if who == "CP-SAT" else highs_ran).status in PROVEN
    work = (cp_ran if who == "CP-SAT" else highs_ran).work
    if not proved:
        work = h.work + cp_ran.work  # both ran to their limits
    if who == "CP-SAT":
        return _cp_sat_answer(cp_ran, solver, bound, work)
    if h.status == "infeasible":
        return Raced("infeasible", None, None, work, "HiGHS")
    if h.values is None:
        return Raced("unknown", None, bound, work, "HiGHS")
    values = checked(model, h.values)
    if values is None:
        # HiGHS's values break a row as CP-SAT reads it (a tolerance): CP-SAT's own answer.
        return _cp_sat_answer(cp_ran, solver, bound, work)
    return Raced("optimal" if proved else "feasible", values, bound, work, "HiGHS")


def _cp_sat_answer(cp: Ran, solver: cp_model.CpSolver, bound: int | None, work: float) -> Raced:
    if cp.status == "infeasible":
        return Raced("infeasible", None, None, work, "CP-SAT")
    if cp.objective is None:
        return Raced("unknown", None, bound, work, "CP-SAT")
    status: Status = "optimal" if cp.status == "optimal" else "feasible"
    return Raced(status, solver, bound, work, "CP-SAT")
