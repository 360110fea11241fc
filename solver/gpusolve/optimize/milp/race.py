"""CP-SAT and HiGHS on the same model at once, one core each: the first proof ends both.

Neither solver is the faster on every schedule: on the shipped example (a real catalogue, a
few workloads, exact rack packing) CP-SAT proves the optimum 3-5x sooner, on the generated
market instances of the benchmarks HiGHS does, by a factor growing with the periods
(benchmarks/README.md, "Procurement over time"). Racing them costs a second core and gives
each schedule the faster of the two.

What stays deterministic: each solver stops at its own load-independent limit (CP-SAT's
deterministic time, HiGHS's node budget), so a race that ends without a proof returns the
same schedule, bound and status on any load (the cheaper of the two incumbents, HiGHS's on a
tie). A proof by either is the same optimum (TCO and status) whichever proves first; only
where the optimum is tied between several schedules may the winner's choice among them
depend on which solver finished first.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ortools.sat.python import cp_model

from gpusolve.optimize.cpsat import STATUS, integral_bound
from gpusolve.optimize.ir import SolveConfig, Status
from gpusolve.optimize.milp.highs import Found, MilpAnswer, Stop, solve_milp
from gpusolve.optimize.milp.solve import checked, hints
from gpusolve.optimize.milp.translate import Milp


@dataclass(frozen=True)
class Raced:
    status: Status
    values: cp_model.CpSolver | None  # reads the winning solution (None: none found)
    bound: int | None
    work: float  # in `SolveConfig.work_limit`'s unit: the prover's, or both at their limits
    solver: str  # who answered: "HiGHS", "CP-SAT"


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


def race(
    model: cp_model.CpModel,
    milp: Milp,
    cp_solver: cp_model.CpSolver,
    config: SolveConfig,
    found: Found | None = None,
) -> Raced:
    """`model` by `cp_solver` (set up by the caller) and its translation `milp` by HiGHS,
    in two threads; the first proof (optimal or infeasible) stops the other."""
    best = _Best(found)
    start = hints(model)
    highs_stop = Stop()
    highs: list[MilpAnswer] = []
    cp_status: list[cp_model.CpSolverStatus] = []

    def run_highs() -> None:
        highs.append(solve_milp(milp, config, best.report, start, highs_stop, threads=1))
        if highs[0].status in ("optimal", "infeasible"):
            cp_solver.stop_search()

    def run_cp_sat() -> None:
        cp_status.append(cp_solver.solve(model, _CpSatProgress(best)))
        if STATUS[cp_status[0]] in ("optimal", "infeasible"):
            highs_stop.stop_search()

    threads = [threading.Thread(target=f, daemon=True) for f in (run_highs, run_cp_sat)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return _outcome(model, highs[0], STATUS[cp_status[0]], cp_solver)


def _cp_bound(solver: cp_model.CpSolver) -> int | None:
    raw = solver.best_objective_bound
    return integral_bound(raw, maximise=False) if abs(raw) < 2**62 else None


def _outcome(
    model: cp_model.CpModel, h: MilpAnswer, cp: Status, solver: cp_model.CpSolver
) -> Raced:
    cp_work = solver.response_proto.deterministic_time
    # The work is the winner's when one proved (the loser's share depends on the load);
    # both ran to their own limits otherwise.
    if cp in ("optimal", "infeasible"):
        work = cp_work
    elif h.status in ("optimal", "infeasible"):
        work = h.work
    else:
        work = h.work + cp_work
    cp_bound = _cp_bound(solver) if cp in ("optimal", "feasible", "unknown") else None
    bounds = [b for b in (h.bound, cp_bound) if b is not None]
    bound = max(bounds) if bounds else None
    if cp == "infeasible" or (h.status == "infeasible" and cp != "optimal"):
        return Raced("infeasible", None, None, work, "CP-SAT" if cp == "infeasible" else "HiGHS")
    cp_objective = int(solver.objective_value) if cp in ("optimal", "feasible") else None
    highs_objective = h.objective if h.values is not None else None
    # The winner: a proof first, then the cheaper incumbent, HiGHS's on a tie.
    use_cp = cp == "optimal" or (
        h.status != "optimal"
        and cp_objective is not None
        and (highs_objective is None or cp_objective < highs_objective)
    )
    proved = cp == "optimal" or h.status == "optimal"
    status: Status = "optimal" if proved else "feasible"
    if use_cp:
        return Raced(status, solver, bound, work, "CP-SAT")
    if h.values is None:
        return Raced("unknown", None, bound, work, "HiGHS")
    values = checked(model, h.values)
    if values is None:
        # HiGHS's values break a row as CP-SAT reads it (a tolerance): CP-SAT's own answer.
        if cp_objective is None:
            return Raced("unknown", None, bound, work, "CP-SAT")
        return Raced("optimal" if cp == "optimal" else "feasible", solver, bound, work, "CP-SAT")
    return Raced(status, values, bound, work, "HiGHS")
