"""Two-stage plans over scenarios: buy once, rent and lay out per scenario.

The model is `model.py`'s; this module solves it: the free two-stage search
(expected or worst case), the second stage alone for a given purchase (`evaluate`), and
the hint solves that start the search on large models (from a known purchase, over the
pairs the LP relaxation buys).
"""

from __future__ import annotations

import dataclasses
import math
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
from gpusolve.optimize.cpsat import STATUS, integral_bound
from gpusolve.optimize.ir import (
    Solution,
    SolveConfig,
    Status,
)
from gpusolve.optimize.model import Built
from gpusolve.optimize.readout import read_solution
from gpusolve.optimize.stages import expr_range, var_bounds
from gpusolve.optimize.twostage.model import (
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
    On large models (`_choices`) two hint solves come first, each within a share of the time
    limit: the model with the `start_from` purchase fixed (the nominal plan's), then the
    model restricted to the pairs its LP relaxation buys (`_hint_core`). The best complete
    plan they find hints the free solve (a partial `hint` leaves CP-SAT to complete the
    racks, which it often fails to do) and stands if the free solve runs out of time
    before it reports one.
    """
    start = time.perf_counter()
    if fixed is not None and not _deliverable(fixed, scenarios):
        return TwoStageResult("infeasible", wall_s=time.perf_counter() - start)
    ts = build_two_stage(scenarios, fixed)
    if any(b.unplaceable for b in ts.built):
        return TwoStageResult("infeasible", wall_s=time.perf_counter() - start)
    costs = [b.net_cost + b.penalties for b in ts.built]
    weights = probability_weights([s.probability for s in scenarios])
    if fixed is not None:
        objective: Expr = wsum_expr([(1, c) for c in costs])
    elif robust == "expected":
        objective = wsum_expr(list(zip(weights, costs, strict=True)))
    else:
        objective = _worst(ts.model, costs)
    if hint is not None:
        _add_hint(ts, hint)
    held: list[_Held] = []  # complete plans the hint solves found, the free solve's fallback
    choices = _choices(ts)
    large = fixed is None and choices >= config.tuning.warm_min_choices  # the hint solves'
    if start_from is not None and large:
        held += _hint_start(ts, start_from, costs, config)
    ts.model.minimize(objective)
    if large:
        lp_objective = objective if robust == "worst" else _lp_objective(scenarios, costs)
        held += _hint_core(ts, start_from, lp_objective, config)
    solver = _solver(config, time.perf_counter() - start, choices)
    found = _Found(start)
    status = STATUS[solver.solve(ts.model, found)]
    bound: int | None
    if status == "unknown" and held:
        # Out of time before the free solve reported its hint: the best hint's plan stands,
        # with the free solve's bound (valid whether or not it found a plan).
        best = min(held, key=lambda h: h.value(robust, weights, costs))
        value = best.value(robust, weights, costs)
        bound = _finite(solver.best_objective_bound, value)
        status, solver, found.last_s = "feasible", best.solver, best.found_s - start
    elif status in ("optimal", "feasible"):
        # The plan's own value, exact: CP-SAT's `objective_value` is a double and may
        # read 17854999.999999996 for 17855000 (test_scenarios, seed 16).
        value = int(solver.value(objective))
        bound = integral_bound(solver.best_objective_bound, maximise=False)
    else:
        return TwoStageResult(status, wall_s=time.perf_counter() - start)
    if fixed is None and robust == "worst":
        # Among the plans with the least worst case, the one with the least expectation.
        for cost in costs:
            ts.model.add(cost <= value)
        _hint_from(ts.model, solver)
        ts.model.minimize(wsum_expr(list(zip(weights, costs, strict=True))))
        second = _solver(config, time.perf_counter() - start, choices)
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


@dataclass(frozen=True)
class _Held:
    """A complete plan of the model that a hint solve found (its solver reads it: the
    clone it solved shares the model's variable indices), and when (perf_counter)."""

    solver: cp_model.CpSolver
    found_s: float

    def value(self, robust: Robust, weights: Sequence[int], costs: Sequence[Expr]) -> int:
        """The plan's value under the free solve's objective (the hint solves minimise
        their own)."""
        values = [int(self.solver.value(c)) for c in costs]
        if robust == "worst":
            return max(values)
        return sum(w * v for w, v in zip(weights, values, strict=True))


def _finite(bound: float, value: int) -> int | None:
    """CP-SAT's bound as an integer, at most the plan's value; None when it has none
    (with no search at all it may be unbounded)."""
    if not math.isfinite(bound):
        return None
    return min(integral_bound(bound, maximise=False), value)


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


def _solver(config: SolveConfig, spent_s: float, choices: int | None = None) -> cp_model.CpSolver:
    """A solver for the free solve of a model whose scenarios have up to `choices` choices
    each (None: a hint solve, CP-SAT's defaults)."""
    tuning = config.tuning
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.1, config.time_limit_s - spent_s)
    if config.work_limit is not None:
        solver.parameters.max_deterministic_time = config.work_limit
    solver.parameters.num_workers = config.workers
    solver.parameters.random_seed = config.seed
    solver.parameters.relative_gap_limit = config.relative_gap
    if choices is not None and choices < tuning.parallel_min_choices:
        # As in the single solver (`cpsat.solver_for`): a second worker only adds its
        # start-up on a model proven in milliseconds.
        solver.parameters.num_workers = 1
    if choices is not None and choices < tuning.warm_min_choices:
        # The single solver's settings (`cpsat.solver_for`): on a model proven in
        # milliseconds, CP-SAT's presolve and probing are most of the time. On large
        # models they help some instances and hurt others (`benchmarks/README.md`).
        solver.parameters.cp_model_presolve = False
        solver.parameters.add_lp_constraints_lazily = False
        solver.parameters.cp_model_probing_level = 0
    interrupt.watch(solver)  # Ctrl-C / SIGTERM stops this search at once
    return solver


# Share of the time limit the solve from `start` may take.
_START_SHARE = 0.2


def _hint_start(
    ts: TwoStage, start: FirstStage, costs: Sequence[Expr], config: SolveConfig
) -> list[_Held]:
    """Hint the model with the cheapest second stages on the `start` purchase, when it
    meets every scenario (the clone shares the model's variable indices)."""
    if any(n and key not in ts.servers for key, n in start.servers.items()):
        return []
    clone = ts.model.clone()
    for key, var in ts.servers.items():
        clone.add(var == start.servers.get(key, 0))
    clone.minimize(wsum_expr([(1, c) for c in costs]))
    share = dataclasses.replace(config, time_limit_s=_START_SHARE * config.time_limit_s)
    solver = _solver(share, 0.0)
    if solver.solve(clone) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return []
    _hint_from(ts.model, solver)
    return [_Held(solver, time.perf_counter())]


# Share of the time limit the LP relaxation and the solve over its core may take together.
_CORE_SHARE = 0.2
# A server count the LP sets above this buys at that (SKU, site): GLOP's tolerance is 1e-7.
_LP_BUYS = 1e-6
# The LP's weights out of this many, not PROBABILITY_SCALE: GLOP answers ABNORMAL on money
# x 10^4 (`benchmarks/README.md`, two-stage section), and the LP only ranks the pairs.
_LP_PROBABILITY_SCALE = 100


def _lp_objective(scenarios: Sequence[Scenario], costs: Sequence[Expr]) -> Expr:
    weights = probability_weights([s.probability for s in scenarios], _LP_PROBABILITY_SCALE)
    return wsum_expr(list(zip(weights, costs, strict=True)))


def _choices(ts: TwoStage) -> int:
    """The most choices any one scenario has: the size the single solver's thresholds read.

    The hint solves (from `start_from`, over the LP's core) pay where the single solver's
    warm start does, from `Tuning.warm_min_choices` choices: below, the free solve takes
    milliseconds and a hint solve as long (`benchmarks/README.md`)."""
    return max(len(b.owned) + len(b.cloud) for b in ts.built)


def _hint_core(
    ts: TwoStage,
    start: FirstStage | None,
    lp_objective: Expr,
    config: SolveConfig,
) -> list[_Held]:
    """Hint the model with its best plan that buys only where its LP relaxation buys or
    `start` does (the core), solved first within `_CORE_SHARE` of the time limit.

    The free solve spends most of its time on plans it could have ruled out: the core is a
    few (SKU, site) pairs of hundreds, and its optimum is within about 1 % of the free one
    (`benchmarks/README.md`). It is a hint, not a restriction: the free solve still
    searches, and proves, over every pair."""
    # Imported here, as in `search/first.py`: OR-Tools' linear solver adds to every
    # start-up, and only large two-stage models read the LP.
    from gpusolve.optimize.search import relaxation

    deadline = time.perf_counter() + _CORE_SHARE * config.time_limit_s
    lp = relaxation.translate(ts.model, lp_objective).solve(deadline - time.perf_counter())
    if lp is None:
        return []
    core = {key for key, var in ts.servers.items() if lp.values[var.index] > _LP_BUYS}
    if start is not None:
        core |= {key for key, n in start.servers.items() if n}
    core |= _nearest(ts, core, len(core))  # as many again: where the plan may move
    left = dataclasses.replace(config, time_limit_s=deadline - time.perf_counter())
    if len(core) == len(ts.servers) or left.time_limit_s <= 0:
        return []  # nothing left out (the free solve is the core's), or no time
    clone = ts.model.clone()  # with its hints, if any, and the same variable indices
    for key, var in ts.servers.items():
        if key not in core:
            clone.add(var == 0)
    solver = _solver(left, 0.0)
    if solver.solve(clone) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return []
    _hint_from(ts.model, solver)
    return [_Held(solver, time.perf_counter())]


def _nearest(ts: TwoStage, core: set[tuple[str, str]], count: int) -> set[tuple[str, str]]:
    """The `count` pairs outside `core` with the least regret in any scenario (`_regrets`).
    The LP's reduced costs would rank them too, but they are mostly 0 (a degenerate LP:
    the cost sits on the servers and racks, not on the choices) and their order is noise
    (`benchmarks/README.md`, two-stage section: what each order found)."""
    regret: dict[tuple[str, str], float] = {}
    for built in ts.built:
        for key, share in _regrets(built).items():
            if key not in core:
                regret[key] = min(regret.get(key, share), share)
    return set(sorted(regret, key=lambda key: (regret[key], key))[:count])


def _regrets(built: Built) -> dict[tuple[str, str], float]:
    """Per (SKU, site), the least over its choices of how much dearer the choice is alone
    (`warmstart.priced_choices`: its servers, racks and site as if nothing else were
    bought) than its workload's cheapest choice alone, relative to that cheapest."""
    from gpusolve.optimize.search.warmstart import priced_choices

    pair = {o.var.index: (o.option.sku, o.placement.site) for o in built.owned}
    out: dict[tuple[str, str], float] = {}
    for items in priced_choices(built).values():
        floor = min(cost for cost, _, _ in items)
        for cost, _, var in items:
            key = pair.get(var.index)
            if key is not None:  # a rental: no pair
                share = (cost - floor) / max(1, abs(floor))
                out[key] = min(out.get(key, share), share)
    return out


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
    tco = int(solver.value(built.net_cost + built.penalties))
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


def hedged_tco(
    result: TwoStageResult,
    scenarios: Sequence[Scenario],
    robust: str,
    penalties: bool = False,
) -> int:
    """The TCO the hedge weighs (with `penalties`, plus the soft-rule penalties: what it
    minimises): expected (rounded), or the worst scenario's."""
    costs = [result.outcomes[s.name].costs for s in scenarios]
    values = [(c.tco + (c.penalties if penalties else 0)) if c is not None else 0 for c in costs]
    if robust == "worst":
        return max(values)
    return round(sum(s.probability * v for s, v in zip(scenarios, values, strict=True)))
