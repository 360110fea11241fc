"""Stage 1 of a large model: a warm start, and on the largest models a search over cores.

Without a caller's hint, stage 1 starts from the best plan over a few promising choices
per workload (`warmstart.py`). From `Tuning.core_min_choices` choice variables up,
CP-SAT's own root LP cannot finish within the limit, so stage 1 searches growing cores of
the choices instead (`core.py`), with the LP relaxation's bound (GLOP, `relaxation.py`)
for every plan outside them, and the weaker of two LP bounds, one per side of the
workload the LP splits most (`dichotomy.py`), for every plan; the proof stays exact, a
core is only declared optimal when every plan outside it is proven dearer. Before each
core, its choices at the best plan's sites and the one site the LP charges least for
opening are searched alone (`neighbourhood.py`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ortools.sat.python import cp_model

from gpusolve.optimize import cpsat
from gpusolve.optimize.builder import Expr
from gpusolve.optimize.runner import First, stage_name
from gpusolve.optimize.search import core, dichotomy, lazy, neighbourhood, warmstart
from gpusolve.optimize.search.staged import LazyStages
from gpusolve.optimize.stages import Criterion, fold

if TYPE_CHECKING:
    from gpusolve.optimize.search.opening import Opening
    from gpusolve.optimize.search.relaxation import LpSolution


class Search(LazyStages):
    """`LazyStages` whose stage 1 starts warm and, on the largest models, runs in cores."""

    def first(self, group: Sequence[Criterion], hint: dict[int, int] | None) -> First:
        built, config = self.built, self.config
        head = group[0]
        objective, weights = fold(group)
        lp, floor, opened = relaxation(self, head, hinted=hint is not None)
        if hint is None and config.warm_start:
            values = None if lp is None else lp.values
            time_s = self.tuning.warm_share * self.remaining()
            hint = warmstart.warm_hint(built, objective, time_s, values, self.tuning)
            if not hint and warmstart.wanted(built, self.tuning):
                # No warm start in time (or none holds): the fallback is still a plan to
                # start from, and the answer if the search finds nothing.
                found = self.fallback(group)
                hint = {} if found is None else found.values
        if hint:
            self.cuts += lazy.hinted_cuts(built.relaxed, hint, self.tuning)
        if lp is None or opened is None:
            return self.first_plain(group, objective, weights[0], hint or {})
        solver, status, lead = self.timed(
            stage_name(1, group) + " (cores)",
            lambda: core_search(self, objective, weights[0], head, hint or {}, lp, floor, opened),
        )
        return First(solver, status, None if status == cp_model.INFEASIBLE else int(lead))


def relaxation(
    stages: LazyStages, head: Criterion, *, hinted: bool
) -> tuple[LpSolution | None, float | None, Opening | None]:
    """The LP relaxation's optimum for the leading criterion (normalised), when something
    reads it (the core search, else the warm start), and for the core search also the
    dichotomy's bound (`dichotomy.py`) and the sites' and choices' bounds from their
    sites' own LPs (`opening.py`). None where there is none, or GLOP found none in time."""
    built, config, tuning = stages.built, stages.config, stages.tuning
    in_cores = built.stats["choice_vars"] >= tuning.core_min_choices
    if in_cores:
        share = tuning.core_lp_share
    elif not hinted and config.warm_start and warmstart.wanted(built, tuning):
        share = tuning.warm_share
    else:
        return None, None, None
    # Imported here: OR-Tools' linear solver adds 35 ms to every start-up, and plans below
    # the warm start's size (every shipped example) never need it.
    from gpusolve.optimize.search import opening
    from gpusolve.optimize.search import relaxation as lp_relaxation

    # The translation is dropped on return: on the largest models it would otherwise stay
    # in memory through the whole search.
    translated = lp_relaxation.translate(built.model, head.normalised(), tuning.glop_parameters)
    lp = translated.solve(share * stages.remaining())
    if lp is None or not in_cores:
        return lp, None, None
    opened = opening.bounds(translated, built, lp, tuning.opening_share * stages.remaining())
    floor = dichotomy.bound(
        translated,
        built,
        lp,
        tuning.dichotomy_share * stages.remaining(),
        tuning.dichotomy_min_gain,
    )
    return lp, floor, opened


def core_search(
    stages: LazyStages,
    objective: Expr,
    weight: int,
    head: Criterion,
    hint: dict[int, int],
    lp: LpSolution,
    floor: float | None,
    opened: Opening,
) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus, int]:
    """Stage 1 over growing cores (`core.py`): the solver holding the best plan, the status
    for the whole model, and a bound on the normalised leading criterion of every plan.

    Every core keeps the warm start's candidates (`warmstart.candidates`) and the choices
    of the best plan so far, which is its hint. Before a core is solved, its choices at
    the best plan's sites and one more (`neighbourhood.py`) are searched alone. `floor` is
    a bound on every plan known beforehand (`dichotomy.py`); the bound returned is never
    below it. The status is OPTIMAL when a core's optimum is proven to beat every plan
    outside it (or is within the caller's gap of the bound), FEASIBLE when the time ran
    out with a plan."""
    built, tuning = stages.built, stages.tuning
    order = core.ranked(built, lp, opened.choices)
    choices = [var.index for var in built.choice_vars()]
    keep = {var.index for var in warmstart.candidates(built, lp.values, tuning)}
    keep |= {index for index in choices if hint.get(index) == 1}
    gap = stages.config.relative_gap
    bound = math.ceil(lp.bound if floor is None else max(lp.bound, floor))
    best: tuple[cp_model.CpSolver, int, int] | None = None  # solver, folded, leading value
    searched: set[frozenset[str]] = set()  # site sets already searched alone

    def improve(solver: cp_model.CpSolver) -> None:
        nonlocal best, hint
        folded = int(solver.value(objective))
        if best is None or folded < best[1]:
            best = (solver, folded, int(solver.value(head.normalised())))
            # A time-limited core can end on a worse plan (a repaired rack packing).
            hint = cpsat.values(built, solver)
            keep.update(index for index in choices if hint[index] == 1)

    current = core.core(order, 0.0, keep)
    while True:
        if best is not None:
            kept = neighbourhood.sites(built, hint, opened.sites, best[2] - lp.bound)
            if kept is not None and kept not in searched:
                searched.add(kept)
                stages.closed = current.closed | neighbourhood.elsewhere(built, kept)
                time_s = tuning.neighbourhood_share * stages.remaining()
                solver, status, _ = stages.run(objective, hint, gap, time_s)
                if cpsat.solved(status):
                    improve(solver)
        stages.closed = current.closed
        # The folded objective is weight x the leading criterion + less than weight.
        outside = current.outside(lp.bound)
        give_up = weight * math.ceil(outside) if math.isfinite(outside) else None
        solver, status, raw = stages.run(objective, hint, gap, stages.remaining(), give_up=give_up)
        inside: float | None = None  # bound on the leading criterion within the core
        if cpsat.solved(status):
            improve(solver)
        if status == cp_model.OPTIMAL:
            inside = int(solver.value(head.normalised()))
        elif status != cp_model.INFEASIBLE and math.isfinite(raw):
            inside = cpsat.integral_bound(raw, False) // weight
        if status == cp_model.INFEASIBLE and current.least_out is None:
            return solver, status, bound  # the core is the whole model
        here = current.bound(lp.bound, inside)
        if math.isfinite(here):
            bound = max(bound, int(here))
        if best is not None and (
            (status == cp_model.OPTIMAL and current.proves(best[2], lp.bound))
            or best[2] - bound <= gap * max(1, abs(best[2]))
        ):
            return best[0], cp_model.OPTIMAL, best[2]
        exact = None if best is None else best[2] - lp.bound
        threshold = core.next_threshold(order, current, exact, tuning.core_growth)
        if threshold is None or stages.remaining() <= 0:
            break
        current = core.core(order, threshold, keep)
    if best is None:
        return solver, cp_model.UNKNOWN, bound
    return best[0], cp_model.FEASIBLE, bound
