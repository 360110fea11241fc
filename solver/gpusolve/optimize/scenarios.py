"""Two-stage plans over scenarios: buy once, rent and lay out per scenario.

The model is `twostage_build.py`'s; this module solves it: the free two-stage search
(expected or worst case), the second stage alone for a given purchase (`evaluate`), and
the hints that start the search from a known purchase.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ortools.sat.python import cp_model

from gpusolve.optimize import interrupt
from gpusolve.optimize.builder import (
    Expr,
    Var,
    wsum_expr,
)
from gpusolve.optimize.ir import (
    Solution,
    SolveConfig,
    Status,
)
from gpusolve.optimize.model import Built
from gpusolve.optimize.readout import read_solution
from gpusolve.optimize.solve import _STATUS, expr_range, var_bounds
from gpusolve.optimize.twostage_build import (
    PROBABILITY_SCALE,
    FirstStage,
    Scenario,
    TwoStage,
    build_two_stage,
    probability_weights,
    scenario_errors,
)
from gpusolve.optimize.validate import assert_consistent

# The model's names, re-exported: callers plan with this module alone.
__all__ = [
    "PROBABILITY_SCALE",
    "FirstStage",
    "Robust",
    "Scenario",
    "TwoStageResult",
    "evaluate",
    "probability_weights",
    "scenario_errors",
    "solve_two_stage",
]

Robust = Literal["expected", "worst"]


@dataclass(frozen=True)
class TwoStageResult:
    status: Status
    first: FirstStage | None = None
    outcomes: dict[str, Solution] = field(default_factory=dict)  # per scenario name
    objective_value: int | None = None  # weighted (x PROBABILITY_SCALE) or worst case
    best_bound: int | None = None
    wall_s: float = 0.0
    # When the search first held the plan it returns (seconds from the call's start): the
    # rest of `wall_s` went to proving it (benchmarks/scenarios.py reports both).
    found_s: float | None = None


# --------------------------------------------------------------------------- solve


def solve_two_stage(
    scenarios: Sequence[Scenario],
    config: SolveConfig,
    robust: Robust = "expected",
    *,
    fixed: FirstStage | None = None,
    hint: TwoStageResult | None = None,
    start_from: FirstStage | None = None,
) -> TwoStageResult:
    """The best first stage for the scenarios, each scenario's second stage with it.

    With `fixed`, the first stage is given and each scenario's second stage is simply
    its cheapest (the objective is their plain sum: scenarios are independent then).
    `start_from` is a purchase to begin from (the nominal plan's): the same model with it fixed
    is solved first, and its complete solution hints the free solve (a partial `hint`
    leaves CP-SAT to complete the racks, which it often fails to do).
    """
    start = time.perf_counter()
    if fixed is not None and not _deliverable(fixed, scenarios):
        return TwoStageResult("infeasible", wall_s=time.perf_counter() - start)
    ts = build_two_stage(scenarios, fixed)
    if any(b.unplaceable for b in ts.built):
        return TwoStageResult("infeasible", wall_s=time.perf_counter() - start)
    costs = [b.tco + b.penalties for b in ts.built]
    weights = probability_weights([s.probability for s in scenarios])
    if hint is not None:
        _add_hint(ts, hint)
    if start_from is not None and fixed is None:
        _hint_start(ts, start_from, costs, config)
    if fixed is not None:
        objective: Expr = wsum_expr([(1, c) for c in costs])
    elif robust == "expected":
        objective = wsum_expr(list(zip(weights, costs, strict=True)))
    else:
        objective = _worst(ts.model, costs)
    ts.model.minimize(objective)
    solver = _solver(config, time.perf_counter() - start)
    found = _Found(start)
    status = _STATUS[solver.solve(ts.model, found)]
    if status not in ("optimal", "feasible"):
        return TwoStageResult(status, wall_s=time.perf_counter() - start)
    value, bound = int(solver.objective_value), int(solver.best_objective_bound)
    if fixed is None and robust == "worst":
        # Among the plans with the least worst case, the one with the least expectation.
        for cost in costs:
            ts.model.add(cost <= value)
        _hint_from(ts.model, solver)
        ts.model.minimize(wsum_expr(list(zip(weights, costs, strict=True))))
        second = _solver(config, time.perf_counter() - start)
        second_status = second.solve(ts.model)
        if second_status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            solver = second
    wall = time.perf_counter() - start
    outcomes = {
        s.name: _read(b, solver, status, wall) for s, b in zip(scenarios, ts.built, strict=True)
    }
    first = FirstStage({k: int(solver.value(v)) for k, v in ts.servers.items()})
    first = FirstStage({k: n for k, n in first.servers.items() if n})
    return TwoStageResult(status, first, outcomes, value, bound, wall, found.last_s)


class _Found(cp_model.CpSolverSolutionCallback):
    """Records when the last (best) plan of a search arrived."""

    def __init__(self, start: float) -> None:
        super().__init__()
        self.start = start
        self.last_s: float | None = None

    def on_solution_callback(self) -> None:
        self.last_s = time.perf_counter() - self.start


def _deliverable(fixed: FirstStage, scenarios: Sequence[Scenario]) -> bool:
    """A purchase holding a SKU some scenario cannot buy cannot meet that scenario."""
    return all(
        sku in s.instance.skus for s in scenarios for (sku, _), n in fixed.servers.items() if n
    )


def _worst(model: cp_model.CpModel, costs: Sequence[Expr]) -> Var:
    domains = var_bounds(model)
    hi = max((expr_range(c, domains)[1] for c in costs), default=0)
    worst = model.new_int_var(0, max(hi, 0), "worst")
    for cost in costs:
        model.add(worst >= cost)
    return worst


def _solver(config: SolveConfig, spent_s: float) -> cp_model.CpSolver:
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.1, config.time_limit_s - spent_s)
    solver.parameters.num_workers = config.workers
    solver.parameters.random_seed = config.seed
    solver.parameters.relative_gap_limit = config.relative_gap
    interrupt.watch(solver)  # Ctrl-C / SIGTERM stops this search at once
    return solver


# Share of the time limit the solve from `start` may take.
_START_SHARE = 0.2


def _hint_start(
    ts: TwoStage, start: FirstStage, costs: Sequence[Expr], config: SolveConfig
) -> None:
    """Hint the model with the cheapest second stages on the `start` purchase, when it
    meets every scenario (the clone shares the model's variable indices)."""
    if any(n and key not in ts.servers for key, n in start.servers.items()):
        return
    clone = ts.model.clone()
    for key, var in ts.servers.items():
        clone.add(var == start.servers.get(key, 0))
    clone.minimize(wsum_expr([(1, c) for c in costs]))
    share = dataclasses.replace(config, time_limit_s=_START_SHARE * config.time_limit_s)
    solver = _solver(share, 0.0)
    if solver.solve(clone) in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        _hint_from(ts.model, solver)


def _hint_from(model: cp_model.CpModel, solver: cp_model.CpSolver) -> None:
    model.clear_hints()  # type: ignore[no-untyped-call]
    for index in range(len(model.proto.variables)):
        var = model.get_int_var_from_proto_index(index)
        model.add_hint(var, solver.value(var))


def _add_hint(ts: TwoStage, hint: TwoStageResult) -> None:
    """Start from a known plan: its purchase and each scenario's choices (partial: the
    racks are left to the solver's own completion)."""
    if hint.first is None:
        return
    for key, var in ts.servers.items():
        ts.model.add_hint(var, hint.first.servers.get(key, 0))
    for s, built in zip(ts.scenarios, ts.built, strict=True):
        outcome = hint.outcomes.get(s.name)
        if outcome is None:
            continue
        chosen = {(c.option, c.site) for c in outcome.choices}
        for o in built.owned:
            ts.model.add_hint(o.var, int((o.option.key, o.placement.site) in chosen))
        for c in built.cloud:
            ts.model.add_hint(c.var, int((c.option.key, None) in chosen))


def _read(built: Built, solver: cp_model.CpSolver, status: Status, wall: float) -> Solution:
    """One scenario's plan, checked against its own instance like any single plan."""
    tco = int(solver.value(built.tco + built.penalties))
    solution = read_solution(built, solver, status, tco, tco, wall)
    assert_consistent(built.instance, solution)
    return solution


def evaluate(
    first: FirstStage, scenarios: Sequence[Scenario], config: SolveConfig
) -> dict[str, Solution | None]:
    """How a purchase fares in each scenario, its rentals and layouts re-chosen there;
    None where it cannot meet the scenario at all."""
    together = solve_two_stage(scenarios, config, fixed=first)
    if together.status in ("optimal", "feasible"):  # one model for all: the usual case
        return dict(together.outcomes)
    out: dict[str, Solution | None] = {}
    for s in scenarios:
        result = solve_two_stage([s], config, fixed=first)
        out[s.name] = result.outcomes.get(s.name) if result.status != "infeasible" else None
    return out
