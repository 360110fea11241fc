"""CP-SAT's parameters for one stage, and reading its answers (statuses, bounds, values).

The settings depart from CP-SAT's defaults where the models' shape asks for it; the
measurements behind each are in `benchmarks/README.md` ("Why the search is tuned as it
is").
"""

from __future__ import annotations

import math

from ortools.sat.python import cp_model

from gpusolve.optimize import interrupt
from gpusolve.optimize.ir import SolveConfig, Status
from gpusolve.optimize.model import Built

STATUS: dict[cp_model.CpSolverStatus, Status] = {
    cp_model.OPTIMAL: "optimal",
    cp_model.FEASIBLE: "feasible",
    cp_model.INFEASIBLE: "infeasible",
    cp_model.UNKNOWN: "unknown",
    cp_model.MODEL_INVALID: "model_invalid",
}


def solver_for(
    built: Built, config: SolveConfig, gap: float, time_s: float, fix_hint: bool = False
) -> cp_model.CpSolver:
    """A solver set up for one stage of `built`, stoppable by Ctrl-C / SIGTERM."""
    tuning = config.tuning
    choices = built.stats["choice_vars"]
    solver = cp_model.CpSolver()
    params = solver.parameters
    # A model of a few hundred choices is proven in milliseconds; a second worker only
    # adds its start-up and a second copy of the root LP.
    workers = 1 if choices < tuning.parallel_min_choices else config.workers
    params.num_workers = workers
    params.random_seed = config.seed
    # The model is presolved by construction (dominance pruning, maximal fills, tight
    # bounds); CP-SAT's presolve costs time and leaves an LP bound that stalls.
    params.cp_model_presolve = False
    # Every linear row in the LP from the start and no root probing: the full LP's bound
    # arrives at once instead of after many lazy rounds.
    params.add_lp_constraints_lazily = False
    params.cp_model_probing_level = 0
    # Let the root LP run to its optimum in one call (`Tuning.root_lp_iterations`).
    params.root_lp_iterations = tuning.root_lp_iterations
    # LNS copies the whole model per neighbourhood (`Tuning.lns_max_choices`).
    params.use_lns = choices < tuning.lns_max_choices
    if workers == 2 and tuning.two_workers_share_tree:
        # Both workers search one tree, each its own branches (`Tuning.two_workers_share_tree`).
        params.shared_tree_num_workers = 2
    params.max_time_in_seconds = max(time_s, 0.001)
    if config.work_limit is not None:
        # The deterministic limit: the same model stops at the same point on any load.
        params.max_deterministic_time = config.work_limit
    params.relative_gap_limit = gap
    params.fix_variables_to_their_hinted_value = fix_hint
    interrupt.watch(solver)
    return solver


def solved(status: cp_model.CpSolverStatus) -> bool:
    """Whether the stage holds a plan."""
    return status in (cp_model.OPTIMAL, cp_model.FEASIBLE)


def integral_bound(raw: float, maximise: bool) -> int:
    """CP-SAT reports the bound as a float; all coefficients are integral, so the true
    bound on an integer objective rounds inwards."""
    return math.floor(raw + 1e-6) if maximise else math.ceil(raw - 1e-6)


def values(built: Built, solver: cp_model.CpSolver) -> dict[int, int]:
    """Every model variable's value in the solver's plan, by proto index."""
    return {var.index: int(solver.value(var)) for var in built.all_vars()}
