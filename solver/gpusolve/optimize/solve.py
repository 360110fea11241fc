"""Solve a built model lexicographically and read the answer into an `ir.Solution`.

Notation (the model is built in `model.py`):
    x_j in {0, 1}   choice j: one option of one workload, at one site or in the cloud;
                    every workload takes exactly one choice
    n_{k,s}         servers of SKU k bought at site s; u_s, the site is used
    R_s             racks rented at site s (patterns, per-rack bins or a relaxation)
    C(x)            an integer money expression (whole CNY): capex, rent, energy,
                    bandwidth, cloud, minus residual value, plus soft-rule penalties

Objective, lexicographic (`stages.criteria`):
    1. the instance's objective: min TCO, min capex (cloud rental counts as spend),
       min monthly spend, or max throughput;
    2. TCO + penalties, unless 1 already is TCO;
    3. tie-breaks: min racks, max memory headroom, min servers, min rank (input order).
Consecutive criteria fold into one integer objective while the weights stay exact
(`stages.group`, `stages.fold`); each group is one solve ("stage").

Stage 1 solves the first group: the cost and its proof. Later stages each get a capped
share of the time (`Tuning.later_stage_share`) and keep every earlier criterion at most
its optimum (one-sided bounds propagate far better than equalities); tie-break-only
stages also keep the purchase fixed (`stages.purchase`), a small search. A later stage
that runs out of time still returns a plan at the proven cost. Models large enough
(relaxed rack packings, 500+ or 50,000+ choices) run through the large-instance search
(`search.for_model`): same stages, a warm start, rack-packing cuts, and cores.

The reported objective, bound and status are stage 1's; a stage-1 incumbent that is only
feasible (time limit) is returned as is. A stage 1 that stops without a plan answers with
the fallback (`fallback.py`: all-rent or a greedy plan, checked on the model), merely
feasible, with stage 1's bound, never with "no plan" when one of those holds. Float
objectives are never built (CP-SAT would switch to a floating-point objective that can
misreport OPTIMAL, or-tools#3639).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ortools.sat.python import cp_model

from gpusolve.optimize import cpsat, interrupt, search
from gpusolve.optimize.builder import BuildOptions
from gpusolve.optimize.ir import Instance, Solution, SolveConfig
from gpusolve.optimize.model import Built, build
from gpusolve.optimize.readout import read_solution
from gpusolve.optimize.runner import First, Prepare, StageRecord, Stages, stage_name
from gpusolve.optimize.stages import (
    Criterion,
    criteria,
    fold,
    group,
    primary,
    purchase,
    tiebreak_only,
)

if TYPE_CHECKING:
    from gpusolve.optimize.fallback import Fallback

# The criteria are read from here too (tests, benchmarks).
__all__ = [
    "Criterion",
    "Outcome",
    "criteria",
    "fold",
    "group",
    "primary",
    "relative_gap",
    "solve",
    "solve_built",
]
_STATUS = cpsat.STATUS


@dataclass(frozen=True)
class Outcome:
    """A solution plus the raw variable values behind it (for hints and cuts), and what
    each stage took."""

    solution: Solution
    values: dict[int, int]  # proto index -> value; empty when no solution
    stages: tuple[StageRecord, ...] = ()


def solve(
    instance: Instance, config: SolveConfig | None = None, options: BuildOptions | None = None
) -> Solution:
    """The best plan for `instance` under `config` (normal mode: requirements are hard)."""
    config = config or SolveConfig()
    start = time.perf_counter()
    built = build(instance, options)
    return solve_built(built, config, started=start).solution


def solve_built(
    built: Built,
    config: SolveConfig,
    *,
    prepare: Prepare | None = None,
    hint: dict[int, int] | None = None,
    started: float | None = None,
) -> Outcome:
    """Run the lexicographic stages on a built (normal-mode) model.

    `prepare` adds request-specific constraints (no-good cuts) to each stage's clone;
    `hint` is a complete or partial previous solution by proto index.
    """
    start = time.perf_counter() if started is None else started
    # 1. The order of criteria, folded into solves.
    groups = group(criteria(built), config.tuning.fold_limit)
    # 2. The exact stages, or the large-instance search when the model's size asks for it.
    large = search.for_model(built, config, prepare, start)
    stages = large or Stages(built, config, prepare, start)
    # 3. Stage 1: the objective, proven (or the best plan in time).
    first = stages.first(groups[0], hint)
    found = _fallback(stages, groups[0], first)
    if found is not None:
        return _read_fallback(stages, groups[0][0], first, found, start)
    if not cpsat.solved(first.status):
        return _unsolved(groups[0][0], first, stages, start)
    # 4. Later stages: the tie-breaks among stage 1's optima.
    best = first.solver
    if first.status == cp_model.OPTIMAL:
        best = _later_stages(stages, groups, best)
    # 5. The plan, read out.
    return _read(stages, groups[0][0], first, best, start)


def _later_stages(
    stages: Stages, groups: Sequence[Sequence[Criterion]], best: cp_model.CpSolver
) -> cp_model.CpSolver:
    """Settle every group after the first, each with a capped share of the time, each
    keeping the earlier optima; stop at the first that finds no plan."""
    built, config = stages.built, stages.config
    stages.fixed += [(item, int(best.value(item.expr))) for item in groups[0]]
    for number, later in enumerate(groups[1:], start=2):
        budget = min(stages.remaining(), config.tuning.later_stage_share * config.time_limit_s)
        if budget <= 0:
            break
        objective, _ = fold(later)
        local = purchase(built, best) if tiebreak_only(later) else []
        solver, status, _ = stages.run(
            objective,
            cpsat.values(built, best),
            0.0,
            budget,
            local,
            what=stage_name(number, later),
        )
        if not cpsat.solved(status):
            break
        best = solver
        stages.fixed += [(item, int(solver.value(item.expr))) for item in later]
    return best


def _fallback(stages: Stages, group: Sequence[Criterion], first: First) -> Fallback | None:
    """The fallback plan where it is the answer: stage 1 stopped without a plan (not
    proven infeasible; after Ctrl-C only one already held, nothing more is searched), or
    with a dearer one than a fallback the search already holds (the large search looks for
    it before its first solve)."""
    held = stages.fallback_found()
    if first.status == cp_model.UNKNOWN:
        return held if interrupt.requested() else stages.fallback(group)
    if first.status != cp_model.FEASIBLE or held is None:
        return None
    found = int(first.solver.value(group[0].expr))
    return held if held.rank < (-found if group[0].maximise else found) else None


def _read_fallback(
    stages: Stages, head: Criterion, first: First, found: Fallback, start: float
) -> Outcome:
    """The fallback plan, merely feasible, with the bound stage 1 proved (the leading
    criterion's own least value when it proved none: a bound all the same)."""
    lead = first.lead or 0
    bound = head.hi - lead if head.maximise else head.lo + lead
    wall = time.perf_counter() - start
    solution = read_solution(found.built, found.solver, "feasible", found.head, bound, wall)
    solution = dataclasses.replace(solution, fallback=found.kind)
    return Outcome(solution, found.values, tuple(stages.records))


def _unsolved(head: Criterion, first: First, stages: Stages, start: float) -> Outcome:
    """No plan in time: the bound proven so far still tells the user how good a plan can
    be."""
    lead = first.lead if first.status == cp_model.UNKNOWN else None
    known = None if lead is None else (head.hi - lead if head.maximise else head.lo + lead)
    wall = time.perf_counter() - start
    solution = Solution(status=_STATUS[first.status], best_bound=known, wall_s=wall)
    return Outcome(solution, {}, tuple(stages.records))


def _read(
    stages: Stages, head: Criterion, first: First, best: cp_model.CpSolver, start: float
) -> Outcome:
    """The plan of the last stage, with stage 1's objective, bound and status."""
    built = stages.built
    value = int(first.solver.value(head.expr))
    lead = first.lead or 0
    bound = head.hi - lead if head.maximise else head.lo + lead
    wall = time.perf_counter() - start
    solution = read_solution(built, best, _STATUS[first.status], value, bound, wall)
    return Outcome(solution, cpsat.values(built, best), tuple(stages.records))


def relative_gap(solution: Solution) -> float | None:
    """|objective - bound| / max(1, |objective|), CP-SAT's own definition of the gap."""
    if solution.objective_value is None or solution.best_bound is None:
        return None
    diff = abs(solution.objective_value - solution.best_bound)
    return diff / max(1, abs(solution.objective_value))
