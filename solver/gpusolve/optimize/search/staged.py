"""The stages of a large model: rack packings checked between solves, and closed choices.

`LazyStages.run` solves a stage, checks every relaxed site's packing (`lazy.py`) and,
where a plan's servers need more racks than it rents, adds the cut and solves again,
hinted with the plan whose racks were raised to the exact count. A site cut
`Tuning.exact_after_cuts` times is packed per rack from then on. `closed` holds the
choices the core search (`first.py`) leaves out of the current solve.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence

from ortools.sat.python import cp_model

from gpusolve.optimize import cpsat, interrupt
from gpusolve.optimize.builder import Expr
from gpusolve.optimize.ir import SolveConfig
from gpusolve.optimize.model import Built
from gpusolve.optimize.packing import RackBin, RelaxedSite, rack_bins
from gpusolve.optimize.patterns import fill_power
from gpusolve.optimize.runner import Prepare, Purchase, RunResult, Stages
from gpusolve.optimize.search import lazy


class LazyStages(Stages):
    """`Stages` with relaxed sites made exact by cuts, and choices closed by the core."""

    def __init__(self, built: Built, config: SolveConfig, prepare: Prepare | None, start: float):
        super().__init__(built, config, prepare, start)
        self.cuts: list[lazy.Cut] = []
        self._relaxed = {rel.site: rel for rel in built.relaxed}
        # Relaxed sites packed exactly (per-rack variables) in every later solve.
        self.exact: set[str] = set(self._relaxed) if self.tuning.exact_after_cuts <= 0 else set()
        # Choice variables fixed to 0 in every solve: those outside the current core.
        self.closed: frozenset[int] = frozenset()

    def _run(
        self,
        objective: Expr,
        hint: dict[int, int],
        gap: float,
        time_s: float,
        purchase: Purchase,
        give_up: int | None,
    ) -> RunResult:
        """Solve, cut, solve again until every relaxed site packs. If time runs out first,
        the better of the repaired plan and the best plan found on the way whose racks
        really hold its servers (`PackedPlans`) is returned as merely feasible, with the
        last relaxed solve's bound (the relaxation and its cuts hold for every plan).

        `give_up` (on the objective): a relaxed optimum at least this ends the stage at its
        first cuts in the same way. The core search passes the bound that already holds
        outside the core: solving the core again cannot prove more, so the time goes to
        the next core; unless the relaxed optimum came within `Tuning.give_up_share` of
        the stage's time, when its repaired plan may be far dearer than a real one."""
        stop = time.perf_counter() + time_s
        bound: float | None = None
        sites = list(self._relaxed.values())
        watch = PackedPlans(self.built, sites, self.tuning.fill_limit) if sites else None
        first_s: float | None = None  # the first relaxed solve's time
        while True:
            model = self.stage_model(objective, hint, purchase)
            began = time.perf_counter()
            solver, status = self.solve(model, gap, stop - began, callback=watch)
            if first_s is None:
                first_s = time.perf_counter() - began
            if not cpsat.solved(status):
                if bound is not None and status == cp_model.UNKNOWN:
                    plans = cheapest_first(objective, hint, watch)
                    return (*self.settle(objective, plans, purchase), bound)
                return solver, status, solver.best_objective_bound
            bound = solver.best_objective_bound
            new = lazy.violated(sites, solver, self.tuning)
            if not new:
                if status == cp_model.FEASIBLE and watch is not None and watch.beats(solver):
                    # An earlier round, before its cuts, found a better real plan.
                    settled = self.settle(objective, [watch.values], purchase)
                    if settled[1] == cp_model.FEASIBLE:
                        return (*settled, bound)
                return solver, status, bound
            self._upgrade(new)
            self.cuts += new
            hint = cpsat.values(self.built, solver)
            for cut in new:
                hint[self._relaxed[cut.site].racks.index] = cut.repair
            beaten = (
                status == cp_model.OPTIMAL
                and give_up is not None
                and bound >= give_up
                and first_s >= self.tuning.give_up_share * time_s
            )
            if beaten or stop - time.perf_counter() <= 0 or interrupt.requested():
                plans = cheapest_first(objective, hint, watch)
                return (*self.settle(objective, plans, purchase), bound)

    def _upgrade(self, new: Sequence[lazy.Cut]) -> None:
        """A site cut `Tuning.exact_after_cuts` times, or whose plan had too many fills to
        pack exactly (`lazy.Cut.exact`), gets per-rack variables from now on: a monotone
        cut can be dodged by swapping one server shape for a similar one."""
        count = Counter(cut.site for cut in self.cuts)
        count.update(cut.site for cut in new)
        limit = self.tuning.exact_after_cuts
        self.exact |= {cut.site for cut in new if cut.exact or count[cut.site] >= limit}

    def _restrict(self, model: cp_model.CpModel) -> None:
        self.built.close(model, self.closed)

    def _extend(self, model: cp_model.CpModel, hint: dict[int, int]) -> dict[int, int]:
        for cut in self.cuts:
            lazy.add_cut(model, self._relaxed[cut.site], cut)
        bins: dict[int, int] = {}  # the hint's per-rack variables at exact sites
        for site in sorted(self.exact):
            rel = self._relaxed[site]
            racks = exact_packing(model, rel)
            if hint:
                bins |= bin_hint(rel, racks, hint, self.tuning.fill_limit)
        return bins

    def settle(
        self, objective: Expr, plans: Sequence[dict[int, int]], purchase: Purchase
    ) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus]:
        """The first of `plans` that holds, evaluated: every variable fixed to it (a
        propagation, not a search), FEASIBLE. A repaired plan can break a site's rack
        count or a budget; when none holds the answer is UNKNOWN, never INFEASIBLE (the
        stage's plan must not be lost)."""
        solver = cp_model.CpSolver()
        for plan in plans:
            model = self.stage_model(objective, plan, purchase)
            solver, status = self.solve(model, 0.0, self.tuning.evaluate_s, fix_hint=True)
            if status == cp_model.OPTIMAL:
                return solver, cp_model.FEASIBLE
        return solver, cp_model.UNKNOWN


class PackedPlans(cp_model.CpSolverSolutionCallback):
    """The best plan a solve finds whose relaxed sites really hold its servers: a solve
    that runs out of time can end on a plan whose repair is dearer than plans found on
    the way."""

    def __init__(self, built: Built, sites: Sequence[RelaxedSite], fill_limit: int) -> None:
        super().__init__()
        self.built = built
        self.sites = sites
        self.fill_limit = fill_limit
        self.objective = math.inf
        self.values: dict[int, int] = {}

    def on_solution_callback(self) -> None:
        objective = self.objective_value
        if objective >= self.objective:
            return
        for rel in self.sites:
            counts = [int(self.value(d)) for d in rel.demand]
            if not lazy.packs(rel, counts, int(self.value(rel.racks)), self.fill_limit):
                return
        self.objective = objective
        self.values = {var.index: int(self.value(var)) for var in self.built.all_vars()}

    def beats(self, solver: cp_model.CpSolver) -> bool:
        return self.objective < solver.objective_value


def cheapest_first(
    objective: Expr, repaired: dict[int, int], watch: PackedPlans | None
) -> list[dict[int, int]]:
    """A repaired plan and the best really packed plan a solve found, cheaper first."""
    if watch is None or not watch.values:
        return [repaired]
    value = lazy.evaluate(objective, repaired)
    return [watch.values, repaired] if watch.objective < value else [repaired, watch.values]


def exact_packing(model: cp_model.CpModel, rel: RelaxedSite) -> tuple[RackBin, ...]:
    """Make a relaxed site exact in one model: its servers fit in per-rack bins, at most
    R of them open. The relaxation's rows stay (they keep the LP bound)."""
    bins = rack_bins(
        model, rel.site, rel.shapes, rel.rack_w, rel.rack_units, rel.per_rack, rel.racks_ub
    )
    model.add(sum(rack.open for rack in bins) <= rel.racks)
    for h, demand in enumerate(rel.demand):
        model.add(sum(rack.counts[h] for rack in bins) >= demand)
    return bins


def bin_hint(
    rel: RelaxedSite, bins: Sequence[RackBin], hint: dict[int, int], fill_limit: int
) -> dict[int, int]:
    """The per-rack variables of a site packed exactly, for a hint that places servers
    there: a packing of its counts, heaviest rack first as `rack_bins` orders them. Empty
    when the packing needs more racks than the hint rents. Without it a hinted plan can
    go unfound: the search would have to place the racks itself."""
    counts = [lazy.evaluate(d, hint) for d in rel.demand]
    racks = sorted(
        lazy.packing(rel, counts, fill_limit),
        key=lambda rack: fill_power(rel.shapes, rack),
        reverse=True,
    )
    if len(racks) > min(len(bins), hint.get(rel.racks.index, 0)) or any(
        n > cap for rack in racks for n, cap in zip(rack, rel.per_rack, strict=True)
    ):
        return {}
    values: dict[int, int] = {}
    for j, rack_bin in enumerate(bins):
        rack = racks[j] if j < len(racks) else (0,) * len(rel.shapes)
        values[rack_bin.open.index] = int(j < len(racks))
        values |= {c.index: n for c, n in zip(rack_bin.counts, rack, strict=True)}
    return values
