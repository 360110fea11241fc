"""Solve a built model lexicographically and read the answer into an `ir.Solution`.

The full order: the objective; then, unless the objective already is TCO, TCO plus
penalties (a budget-constrained throughput plan should not waste money, a min-capex plan
should not pick the dearer of two equal-capex plans); then the tie-breaks that make the
plan unique and stable: fewer racks, more memory headroom, fewer servers, and a
deterministic rank (input order of options and fills).

Consecutive criteria are folded into one integer objective whenever the weights stay
below 2^52 (each weight exceeds the whole range of the criteria after it, so the folded
optimum is the lexicographic one and the leading criterion stays exact). The first solve
takes the objective and whatever follows it that fits, usually the rack count: folding
costs the first solve little, because its LP bound still steers the search, while a
separate "minimise racks at the optimal cost" solve has to prove optimality over the whole
optimal face (measured 6-26 s per stage on 10x30x10 instances whose cost was proven in
0.5-4 s). Groups that do not fit run as later solves on fresh clones, with every earlier
criterion bounded by its optimum (one-sided: `cost <= C*` propagates far better than a long
equality) and hinted with the previous solution; money criteria search the whole optimal
face, tie-break-only groups search with the purchase fixed (see `purchase`). Later solves
get a capped share of the time; one that runs out still returns a plan at the proven cost.

Without a caller's hint, stage 1 starts from the best plan over a few promising choices per
workload (`warmstart.py`): CP-SAT's own first plan costs about twice the optimum on
20x60x20 instances, the warm start is usually the optimum. From `core.MIN_CHOICES` choice
variables up, CP-SAT's own root LP cannot finish within the limit, so stage 1 searches
growing cores of the choices instead (`core.py`), with the LP relaxation's bound (from GLOP,
`relaxation.py`) for every plan outside them, and the weaker of two LP bounds, one per side
of the workload the LP splits most (`dichotomy.py`), for every plan; the proof stays
exact, a core is only declared optimal when every plan outside it is proven dearer. Before
each core, its choices at the best plan's sites and the one site the LP charges least for
opening are searched alone (`neighbourhood.py`), for a plan CP-SAT finds late in the core.

The reported objective, bound and status are the first solve's; a stage-1 incumbent that is
only feasible (time limit) is returned as is. Float objectives are never built (CP-SAT
would switch to a floating-point objective that can misreport OPTIMAL, or-tools#3639).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ortools.sat.python import cp_model
from ortools.sat.python import cp_model_helper as cmh

from gpusolve.optimize import core, dichotomy, interrupt, lazy, neighbourhood, warmstart
from gpusolve.optimize.builder import BuildOptions, Expr
from gpusolve.optimize.ir import Instance, Solution, SolveConfig, Status
from gpusolve.optimize.model import Built, build
from gpusolve.optimize.packing import RackBin, RelaxedSite, rack_bins
from gpusolve.optimize.patterns import fill_power
from gpusolve.optimize.readout import read_solution

if TYPE_CHECKING:
    from gpusolve.optimize.opening import Opening
    from gpusolve.optimize.relaxation import LpSolution

Prepare = Callable[[cp_model.CpModel], None]
# The tie-break folds several integer criteria into one objective; keep the folded
# coefficients well inside int64 so CP-SAT never reports a possible overflow.
_FOLD_LIMIT = 2**52
# Share of the time limit any single stage after the first may take.
_LATER_STAGE_SHARE = 0.25
# Simplex iterations per root LP call; see `_Stages._solve`.
_ROOT_LP_ITERATIONS = 100_000
# Models with this many choice variables or more are solved without LNS workers.
_LNS_MAX_CHOICES = 50_000
# The two full subsolvers when the caller asks for two workers (see `_Stages._solve`).
_TWO_WORKERS = ("default_lp", "objective_lb_search")
# A stage whose first relaxed solve took less than this share of its time is not given up
# at its first cuts (`_Stages.run`).
_GIVE_UP_SHARE = 0.25
# Models with fewer choice variables are solved by one worker whatever the caller asks.
_PARALLEL_MIN_CHOICES = 500
# Time for evaluating a fully fixed plan (propagation only; milliseconds in practice).
_EVALUATE_S = 10.0
# Time reserved after the last solve, per choice variable (see `_Stages`).
_FINISH_S_PER_CHOICE = 1.6e-5

_STATUS: dict[cp_model.CpSolverStatus, Status] = {
    cp_model.OPTIMAL: "optimal",
    cp_model.FEASIBLE: "feasible",
    cp_model.INFEASIBLE: "infeasible",
    cp_model.UNKNOWN: "unknown",
    cp_model.MODEL_INVALID: "model_invalid",
}


@dataclass(frozen=True)
class Outcome:
    """A solution plus the raw variable values behind it (for hints and cuts)."""

    solution: Solution
    values: dict[int, int]  # proto index -> value; empty when no solution


def solve(
    instance: Instance, config: SolveConfig | None = None, options: BuildOptions | None = None
) -> Solution:
    """The best plan for `instance` under `config` (normal mode: requirements are hard)."""
    config = config or SolveConfig()
    start = time.perf_counter()
    built = build(instance, options)
    outcome = solve_built(built, config, started=start)
    return outcome.solution


def primary(built: Built) -> tuple[Expr, bool]:
    """The stage-1 objective and whether it is maximised.

    Penalties are money-equivalent soft-rule costs, so every money objective includes them.
    min-capex counts cloud rental as spend (otherwise renting would look free);
    min-monthly is the whole-horizon spend other than purchases (horizon x monthly).
    """
    kind = built.instance.objective
    if kind == "max-throughput":
        return built.throughput, True
    if kind == "min-capex":
        return built.capex + built.cloud_cost + built.penalties, False
    if kind == "min-monthly":
        return built.opex + built.penalties, False
    return built.tco + built.penalties, False


@dataclass(frozen=True)
class Criterion:
    """One lexicographic criterion with the range its expression can take."""

    name: str
    expr: Expr
    maximise: bool
    lo: int
    hi: int

    @property
    def span(self) -> int:
        return self.hi - self.lo

    def normalised(self) -> Expr:
        """Non-negative, to be minimised, at most `span`."""
        return self.hi - self.expr if self.maximise else self.expr - self.lo


def expr_range(expr: Expr, domains: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """Bounds of a linear expression from its variables' domains (`var_bounds`)."""
    flat = cmh.FlatIntExpr(expr)
    lo = hi = flat.offset
    for var, coef in zip(flat.vars, flat.coeffs, strict=True):
        first, last = domains[var.index]
        a, b = coef * first, coef * last
        lo += min(a, b)
        hi += max(a, b)
    return lo, hi


def var_bounds(model: cp_model.CpModel) -> list[tuple[int, int]]:
    """(lowest, highest) value of every variable, by proto index. Read once per model:
    each access to a proto field crosses into C++, and reading them per term of every
    criterion took 0.22 s on 20x60x20 instances (0.04 s this way)."""
    bounds: list[tuple[int, int]] = []
    for var in model.proto.variables:
        # len() rather than [-1]: the pybind repeated field silently answers 0 to [-1].
        domain = var.domain
        bounds.append((domain[0], domain[len(domain) - 1]))
    return bounds


def criteria(built: Built) -> list[Criterion]:
    """The full lexicographic order: the objective, then (unless it is already TCO) TCO
    plus penalties, then the tie-breaks: fewer racks, more memory headroom, fewer
    servers, earlier-listed options and fills."""
    objective, maximise = primary(built)
    items: list[tuple[str, Expr, bool]] = [(built.instance.objective, objective, maximise)]
    if built.instance.objective != "min-tco":
        items.append(("tco", built.tco + built.penalties, False))
    items += [
        ("racks", built.racks_total, False),
        ("headroom", built.headroom, True),
        ("servers", built.servers_total, False),
        ("rank", built.rank, False),
    ]
    domains = var_bounds(built.model)
    return [Criterion(n, e, m, *expr_range(e, domains)) for n, e, m in items]


def group(items: Sequence[Criterion], limit: int = _FOLD_LIMIT) -> list[list[Criterion]]:
    """Split the order into solves: consecutive criteria share one folded objective while
    the product of their (span + 1) stays below `limit`, so weights stay exact in int64."""
    groups: list[list[Criterion]] = []
    scale = limit + 1
    for item in items:
        if groups and scale * (item.span + 1) <= limit:
            groups[-1].append(item)
            scale *= item.span + 1
        else:
            groups.append([item])
            scale = item.span + 1
    return groups


def fold(items: Sequence[Criterion]) -> tuple[Expr, list[int]]:
    """One objective to minimise whose optimum is the lexicographic optimum of `items`:
    each criterion's weight exceeds the whole range of those after it. Returns it with
    the weights."""
    weights: list[int] = []
    weight = 1
    for item in reversed(items):
        weights.append(weight)
        weight *= item.span + 1
    weights.reverse()
    total: Expr = cp_model.LinearExpr.weighted_sum([], [])
    for item, w in zip(items, weights, strict=True):
        total = total + w * item.normalised()
    return total, weights


class _Stages:
    """Runs the stages against a shared deadline."""

    def __init__(self, built: Built, config: SolveConfig, prepare: Prepare | None, start: float):
        self.built = built
        self.config = config
        self.prepare = prepare
        self.start = start
        # What comes after the last solve (evaluating the chosen plan, reading it out) is
        # kept inside the caller's limit: at 40x120x40 it took 0.8-1.3 s, and 30 s runs
        # answered after 30.3-31.3 s; 1.2e-5 s per choice still let a run that had to
        # settle a timed-out plan (`_settle`, 0.4 s) answer after 30.5 s.
        finish = min(_FINISH_S_PER_CHOICE * built.stats["choice_vars"], 0.1 * config.time_limit_s)
        self.deadline = start + config.time_limit_s - finish
        # Earlier stages' optima, kept as one-sided bounds: `cost <= C*` says the same as
        # `cost == C*` at an optimum but propagates far better than a long equality.
        self.fixed: list[tuple[Criterion, int]] = []
        self.cuts: list[lazy.Cut] = []
        self._relaxed = {rel.site: rel for rel in built.relaxed}
        # Relaxed sites packed exactly (per-rack variables) in every later solve.
        self.exact: set[str] = set()
        # Choice variables fixed to 0 in every solve: those outside the current core
        # (`core.py`); none unless the model is searched in cores.
        self.closed: frozenset[int] = frozenset()

    def remaining(self) -> float:
        if interrupt.requested():  # Ctrl-C: no more time for any stage
            return 0.0
        return self.deadline - time.perf_counter()

    def run(
        self,
        objective: Expr,
        hint: dict[int, int],
        gap: float,
        time_s: float,
        purchase: Sequence[tuple[Expr, int]] = (),
        give_up: int | None = None,
    ) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus, float]:
        """One stage: the solver holding its plan, the status, and the objective bound.

        `purchase` (expression, value) fixes the bought servers, the
        sites used and the racks per site: the tie-break then only chooses among plans
        with exactly that purchase (parallelism variants, day/night assignments, rack
        fills), which is a small search.

        Relaxed sites (`lazy.py`) are checked after each solve; violated packings become
        cuts (kept for every later stage, they are valid for all plans) and the stage is
        solved again, hinted with the plan whose racks were raised to the exact count. If
        time runs out first, the better of that repaired plan and the best plan found on
        the way whose racks really hold its servers (`_PackedPlans`) is returned as merely
        feasible, with the last relaxed solve's bound (the relaxation and its cuts hold
        for every plan).

        `give_up` (on the objective): a relaxed optimum at least this ends the stage at its
        first cuts in the same way, as merely feasible. The core search passes the bound
        that already holds for the plans outside the core (`core.Core`): a core whose
        relaxed optimum reaches it cannot prove anything by being solved again, so the
        time goes to the next core. 40x120x40 seed 3: the first core's relaxed optimum
        came at 11-12 s, its re-solve with the cut took the other 11-12 s of the limit
        and the bound stayed the LP's (gap 1.37-1.45 %); stopping there leaves 12 s for
        the second core, which lifts the bound 0.15 % above the LP's (gap 1.04-1.30 %).
        Seed 4: gap 0.82-0.84 -> 0.64 %; seeds 0-2 unchanged within the noise. A core
        whose relaxed optimum came in under `_GIVE_UP_SHARE` of the stage's time is solved
        again all the same: its repaired plan can be far dearer than a real one near its
        optimum. Seed 6: relaxed optimum 354.76 M after 4 s of 22 s, repaired 357.76 M,
        and the second core found nothing better in the 17 s left (gap 0.99 %); solved
        again with its cuts, the first core ended on 356.37 M (gap 0.54-0.67 %). Seeds
        0-9 otherwise unchanged within the noise."""
        stop = time.perf_counter() + time_s
        bound: float | None = None
        watch = _PackedPlans(self.built, list(self._relaxed.values())) if self._relaxed else None
        first_s: float | None = None  # the first relaxed solve's time
        while True:
            model = self._stage_model(objective, hint, purchase)
            began = time.perf_counter()
            solver, status = self._solve(model, gap, stop - began, watch=watch)
            if first_s is None:
                first_s = time.perf_counter() - began
            if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                if bound is not None and status == cp_model.UNKNOWN:
                    plans = _cheapest_first(objective, hint, watch)
                    return (*self._settle(objective, plans, purchase), bound)
                return solver, status, solver.best_objective_bound
            bound = solver.best_objective_bound
            new = lazy.violated(list(self._relaxed.values()), solver)
            if not new:
                if status == cp_model.FEASIBLE and watch is not None and watch.beats(solver):
                    # An earlier round, before its cuts, found a better real plan.
                    settled = self._settle(objective, [watch.values], purchase)
                    if settled[1] == cp_model.FEASIBLE:
                        return (*settled, bound)
                return solver, status, bound
            self._upgrade(new)
            self.cuts += new
            hint = _values(self.built, solver)
            for cut in new:
                hint[self._relaxed[cut.site].racks.index] = cut.repair
            beaten = (
                status == cp_model.OPTIMAL
                and give_up is not None
                and bound >= give_up
                and first_s >= _GIVE_UP_SHARE * time_s
            )
            if beaten or stop - time.perf_counter() <= 0 or interrupt.requested():
                plans = _cheapest_first(objective, hint, watch)
                return (*self._settle(objective, plans, purchase), bound)

    def _upgrade(self, new: Sequence[lazy.Cut]) -> None:
        """A site cut a second time, or whose plan had too many fills to pack exactly
        (`lazy.Cut.exact`), gets exact per-rack variables from now on.

        A monotone cut only forbids servers at least as many as the counts it saw, so the
        search can dodge it by swapping one small server shape for a similar one: on one
        20x60x20 instance fourteen rounds of ~2 s each cut the same site before the time ran
        out. One relaxed site in per-rack form keeps the model small (usually one or two
        sites ever need it) and ends the loop there.
        """
        seen = {cut.site for cut in self.cuts}
        self.exact |= {cut.site for cut in new if cut.site in seen or cut.exact}

    def _stage_model(
        self, objective: Expr, hint: dict[int, int], purchase: Sequence[tuple[Expr, int]]
    ) -> cp_model.CpModel:
        model = self.built.model.clone()
        self.built.close(model, self.closed)
        if self.prepare is not None:
            self.prepare(model)
        for item, value in self.fixed:
            model.add(item.expr >= value if item.maximise else item.expr <= value)
        for expr, value in purchase:
            model.add(expr == value)
        for cut in self.cuts:
            lazy.add_cut(model, self._relaxed[cut.site], cut)
        bins: dict[int, int] = {}  # the hint's per-rack variables at exact sites
        for site in sorted(self.exact):
            rel = self._relaxed[site]
            racks = _exact_packing(model, rel)
            if hint:
                bins |= _bin_hint(rel, racks, hint)
        model.minimize(objective)
        assert not model.proto.has_floating_point_objective()
        if hint:
            # One bulk write instead of an `add_hint` call per variable (16k at 20x60x20,
            # 60 ms per stage).
            indices = [var.index for var in self.built.all_vars() if var.index in hint]
            values = [hint[index] for index in indices] + list(bins.values())
            model.proto.solution_hint.vars.extend(indices + list(bins))
            model.proto.solution_hint.values.extend(values)
        return model

    def _solve(
        self,
        model: cp_model.CpModel,
        gap: float,
        time_s: float,
        fix_hint: bool = False,
        watch: _PackedPlans | None = None,
    ) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus]:
        solver = cp_model.CpSolver()
        params = solver.parameters
        # A model of a few hundred choices is proven in milliseconds, and a second worker
        # only adds its start-up and a second copy of the root LP. 3x10x5 instances (28-127
        # choices), 10 seeds: proof 0.02 s with 1 worker, 0.02-0.06 s with 2; against the
        # best of HiGHS and CBC, median 0.67x with 1 worker and 0.98x with 2. From 10x30x10
        # (900-1,600 choices) the two are level, and at 20x60x20 2 workers win.
        workers = self.config.workers
        if self.built.stats["choice_vars"] < _PARALLEL_MIN_CHOICES:
            workers = 1
        params.num_workers = workers
        params.random_seed = self.config.seed
        # CP-SAT's presolve costs 0.5-1 s on mid-size plans and leaves an LP bound that
        # stalls far below the LP optimum (benchmarks: M stage 1, 1 worker, median
        # 2.3 s -> 1.2 s and worst seed 27 s -> 5.6 s without it). The model is already
        # presolved by construction (dominance pruning, maximal fills, tight bounds).
        params.cp_model_presolve = False
        # Every linear row in the LP from the start, and no root probing: by default CP-SAT
        # adds rows lazily and probes first, and on 20x60x20 instances its bound then
        # took 30-40 s to reach what the full LP gives at once (seeds 0-3, 2 workers:
        # proofs 37/>60/21/39 s -> 7.8/48/7.8/31 s with these two settings).
        params.add_lp_constraints_lazily = False
        params.cp_model_probing_level = 0
        # Let the root LP run to its optimum in one call. At the default 2,000 simplex
        # iterations per call CP-SAT interleaves partial LPs with search, and on
        # 40x120x40 instances the root LP (tens of thousands of rows) never finished:
        # the 30 s bound was 46.5 M against 122.7 M with this (optimum <= 129.5 M);
        # on a 20x60x20 instance the root bound arrived at 1.0 s instead of 3.8 s.
        params.root_lp_iterations = _ROOT_LP_ITERATIONS
        # LNS copies the whole model for every neighbourhood. On 40x120x40 instances
        # (85-100k choices) that doubled the peak memory (555-608 MB without it, 965-1,403
        # MB with it, 30 s, 2 workers) and improved nothing within 30 s (gaps 5.9 / 15.4 %
        # without, 6.7 / 15.5 % with; the warm start supplies the plan). Below the
        # threshold (20x60x20 has 7-13k) LNS finds most optima, so it stays.
        params.use_lns = self.built.stats["choice_vars"] < _LNS_MAX_CHOICES
        if workers == 2:
            # Two full workers: the LP-guided search and objective_lb_search, which asks
            # whether a plan exists at the current lower bound and raises the bound when
            # none does. The warm start usually hands over the optimum or a plan within
            # 0.2 % of it, so the second thread proves rather than searches. 20x60x20, 10
            # seeds: median 5.95 -> 4.39 s, total 130 -> 105 s; as the second worker
            # pseudo_costs gave 5.81 s / 107 s, lb_tree_search 5.41 s / 126 s. At
            # 40x120x40 (30 s) the gaps went 5.4 / 14.6 % -> 5.1 / 13.5 % and the peak
            # memory 764 -> 881 MB.
            params.num_full_subsolvers = 2
            params.subsolvers.extend(_TWO_WORKERS)
        params.max_time_in_seconds = max(time_s, 0.001)
        params.relative_gap_limit = gap
        params.fix_variables_to_their_hinted_value = fix_hint
        interrupt.watch(solver)  # Ctrl-C / SIGTERM stops this search
        status = solver.solve(model, watch)
        return solver, status

    def _settle(
        self,
        objective: Expr,
        plans: Sequence[dict[int, int]],
        purchase: Sequence[tuple[Expr, int]],
    ) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus]:
        """The first of `plans` that holds, evaluated: every variable fixed to it (a
        propagation, not a search), FEASIBLE. A repaired plan can break a site's rack
        count or a budget; when none holds the answer is UNKNOWN, never INFEASIBLE (one
        40x120x40 run reported its first core infeasible this way and lost the plan)."""
        solver = cp_model.CpSolver()
        for plan in plans:
            model = self._stage_model(objective, plan, purchase)
            solver, status = self._solve(model, 0.0, _EVALUATE_S, fix_hint=True)
            if status == cp_model.OPTIMAL:
                return solver, cp_model.FEASIBLE
        return solver, cp_model.UNKNOWN


class _PackedPlans(cp_model.CpSolverSolutionCallback):
    """The best plan a solve finds whose relaxed sites really hold its servers.

    A solve that runs out of time can end on a plan that undercounts racks at a relaxed
    site: its repair (racks raised to the exact count) is often dearer than plans found
    on the way. On a 40x120x40 instance the core search's second solve found real plans
    at 125.34, 125.33, 125.25 and 125.00 M, then ended on one worth 124.84 M relaxed and
    126.76 M repaired; the 30 s answer stayed at the first core's 125.38 M (gap 1.13 %)."""

    def __init__(self, built: Built, sites: Sequence[RelaxedSite]) -> None:
        super().__init__()
        self.built = built
        self.sites = sites
        self.objective = math.inf
        self.values: dict[int, int] = {}

    def on_solution_callback(self) -> None:
        objective = self.objective_value
        if objective >= self.objective:
            return
        for rel in self.sites:
            counts = [int(self.value(d)) for d in rel.demand]
            if not lazy.packs(rel, counts, int(self.value(rel.racks))):
                return
        self.objective = objective
        self.values = {var.index: int(self.value(var)) for var in self.built.all_vars()}

    def beats(self, solver: cp_model.CpSolver) -> bool:
        return self.objective < solver.objective_value


def _cheapest_first(
    objective: Expr, repaired: dict[int, int], watch: _PackedPlans | None
) -> list[dict[int, int]]:
    """A repaired plan and the best really packed plan a solve found, cheaper first."""
    if watch is None or not watch.values:
        return [repaired]
    value = lazy.evaluate(objective, repaired)
    return [watch.values, repaired] if watch.objective < value else [repaired, watch.values]


def _exact_packing(model: cp_model.CpModel, rel: RelaxedSite) -> tuple[RackBin, ...]:
    """Make a relaxed site exact in one model: its servers fit in per-rack bins, at most
    R of them open. The relaxation's rows stay (they keep the LP bound)."""
    bins = rack_bins(
        model, rel.site, rel.shapes, rel.rack_w, rel.rack_units, rel.per_rack, rel.racks_ub
    )
    model.add(sum(rack.open for rack in bins) <= rel.racks)
    for h, demand in enumerate(rel.demand):
        model.add(sum(rack.counts[h] for rack in bins) >= demand)
    return bins


def _bin_hint(rel: RelaxedSite, bins: Sequence[RackBin], hint: dict[int, int]) -> dict[int, int]:
    """The per-rack variables of a site packed exactly, for a hint that places servers
    there: a packing of its counts, heaviest rack first as `rack_bins` orders them. Empty
    when the packing needs more racks than the hint rents.

    Without it the hint leaves the bins to the search, and a hinted plan can go unfound:
    on a 40x120x40 instance a core solve given the best plan so far, with one site packed
    per rack, found no plan at all in 12.5 s. 20x60x20, 10 seeds in one session: median
    4.79 -> 3.65 s, total 63 -> 52 s (2 workers); 1 worker, deterministic, seeds 1/2/8
    21.4 / 6.5 / 7.6 -> 19.5 / 5.4 / 7.0 s."""
    counts = [lazy.evaluate(d, hint) for d in rel.demand]
    racks = sorted(
        lazy.packing(rel, counts), key=lambda rack: fill_power(rel.shapes, rack), reverse=True
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
    stages = _Stages(built, config, prepare, start)
    groups = group(criteria(built))
    first = groups[0]
    head = first[0]
    objective, weights = fold(first)
    lp, floor, opened = _relaxation(stages, head, hinted=hint is not None)
    if hint is None and config.warm_start:
        values = None if lp is None else lp.values
        hint = warmstart.warm_hint(built, objective, warmstart.SHARE * stages.remaining(), values)
    if hint:
        stages.cuts += lazy.hinted_cuts(built.relaxed, hint)
    raw_bound = math.nan  # the folded objective's bound outside core mode
    if lp is not None and opened is not None:  # core mode (`core.MIN_CHOICES`)
        solver, status, lead = _core_search(
            stages, objective, weights[0], head, hint or {}, lp, floor, opened
        )
    else:
        solver, status, raw_bound = stages.run(
            objective, hint or {}, config.relative_gap, stages.remaining()
        )
        # The folded objective's bound bounds the leading criterion: the rest of the fold
        # is worth less than one unit of it.
        lead = int(_bound(raw_bound, False)) // weights[0] if _solved(status) else 0
    if not _solved(status):
        wall = time.perf_counter() - start
        # No plan in time: the bound proven so far still tells the user how good a plan
        # can be (core mode: `lead` is already the bound; else read the raw one).
        known: int | None = None
        if status == cp_model.UNKNOWN:
            if lp is not None and opened is not None:
                known = lead
            elif math.isfinite(raw_bound):
                known = max(0, _bound(raw_bound, False) // weights[0])
        unsolved = (
            None if known is None else (head.hi - known if head.maximise else head.lo + known)
        )
        return Outcome(Solution(status=_STATUS[status], best_bound=unsolved, wall_s=wall), {})
    value = int(solver.value(head.expr))
    bound = head.hi - lead if head.maximise else head.lo + lead
    best = solver
    if status == cp_model.OPTIMAL:
        # Later stages only choose among the optima of the earlier ones, each with a
        # capped share of the time: the cost is already proven, and a tie-break that runs
        # out of time still returns a plan at that cost. A merely feasible stage-1
        # incumbent is returned as is (the time went into stage 1).
        stages.fixed += [(item, int(solver.value(item.expr))) for item in first]
        for later in groups[1:]:
            budget = min(stages.remaining(), _LATER_STAGE_SHARE * config.time_limit_s)
            if budget <= 0:
                break
            objective, _ = fold(later)
            local = purchase(built, best) if _tiebreak_only(later) else []
            solver2, status2, _ = stages.run(objective, _values(built, best), 0.0, budget, local)
            if status2 not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                break
            best = solver2
            stages.fixed += [(item, int(solver2.value(item.expr))) for item in later]
    wall = time.perf_counter() - start
    solution = read_solution(built, best, _STATUS[status], value, bound, wall)
    return Outcome(solution, _values(built, best))


def _solved(status: cp_model.CpSolverStatus) -> bool:
    return status in (cp_model.OPTIMAL, cp_model.FEASIBLE)


def _relaxation(
    stages: _Stages, head: Criterion, *, hinted: bool
) -> tuple[LpSolution | None, float | None, Opening | None]:
    """The LP relaxation's optimum for the leading criterion (normalised), when something
    reads it (the core search on models of `core.MIN_CHOICES` choices or more, else the
    warm start), and for the core search also the dichotomy's bound (`dichotomy.py`) and
    the sites' and choices' bounds from their sites' own LPs (`opening.py`). None where
    there is none, or GLOP found none in time."""
    built, config = stages.built, stages.config
    in_cores = built.stats["choice_vars"] >= core.MIN_CHOICES
    if in_cores:
        share = core.LP_SHARE
    elif not hinted and config.warm_start and warmstart.wanted(built):
        share = warmstart.SHARE
    else:
        return None, None, None
    # Imported here: OR-Tools' linear solver adds 35 ms to every start-up, and plans below
    # the warm start's size (every shipped example) never need it.
    from gpusolve.optimize import opening, relaxation

    # The translation is dropped on return: at 40x120x40 it would otherwise stay in memory
    # through the whole search.
    translated = relaxation.translate(built.model, head.normalised())
    lp = translated.solve(share * stages.remaining())
    if lp is None or not in_cores:
        return lp, None, None
    opened = opening.bounds(translated, built, lp, opening.SHARE * stages.remaining())
    floor = dichotomy.bound(translated, built, lp, dichotomy.SHARE * stages.remaining())
    return lp, floor, opened


def _core_search(
    stages: _Stages,
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

    Every core keeps the warm start's candidates (`warmstart.candidates`: on 40x120x40 seed
    0 the first core's optimum was 125.64 M without them, 125.38 M with them) and the
    choices of the best plan so far, which is its hint. Before a core is solved, its
    choices at the best plan's sites and one more (`neighbourhood.py`) are searched alone.
    `floor` is a bound on every plan known beforehand (`dichotomy.py`); the bound returned
    is never below it. The status is OPTIMAL when a core's optimum is proven to beat every
    plan outside it (or is within the caller's gap of the bound), FEASIBLE when the time
    ran out with a plan."""
    built = stages.built
    order = core.ranked(built, lp, opened.choices)
    choices = [var.index for var in built.choice_vars()]
    keep = {var.index for var in warmstart.candidates(built, lp.values)}
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
            hint = _values(built, solver)
            keep.update(index for index in choices if hint[index] == 1)

    current = core.core(order, 0.0, keep)
    while True:
        if best is not None:
            kept = neighbourhood.sites(built, hint, opened.sites, best[2] - lp.bound)
            if kept is not None and kept not in searched:
                searched.add(kept)
                stages.closed = current.closed | neighbourhood.elsewhere(built, kept)
                time_s = neighbourhood.SHARE * stages.remaining()
                solver, status, _ = stages.run(objective, hint, gap, time_s)
                if _solved(status):
                    improve(solver)
        stages.closed = current.closed
        # The folded objective is weight x the leading criterion + less than weight.
        outside = current.outside(lp.bound)
        give_up = weight * math.ceil(outside) if math.isfinite(outside) else None
        solver, status, raw = stages.run(objective, hint, gap, stages.remaining(), give_up=give_up)
        inside: float | None = None  # bound on the leading criterion within the core
        if _solved(status):
            improve(solver)
        if status == cp_model.OPTIMAL:
            inside = int(solver.value(head.normalised()))
        elif status != cp_model.INFEASIBLE and math.isfinite(raw):
            inside = _bound(raw, False) // weight
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
        threshold = core.next_threshold(order, current, exact)
        if threshold is None or stages.remaining() <= 0:
            break
        current = core.core(order, threshold, keep)
    if best is None:
        return solver, cp_model.UNKNOWN, bound
    return best[0], cp_model.FEASIBLE, bound


_TIEBREAKS = frozenset({"racks", "headroom", "servers", "rank"})


def _tiebreak_only(items: Sequence[Criterion]) -> bool:
    return all(item.name in _TIEBREAKS for item in items)


def purchase(built: Built, solver: cp_model.CpSolver) -> list[tuple[Expr, int]]:
    """What a plan buys and rents: servers per (SKU, site), sites used, racks per site.

    Tie-breaks that did not fit into the first solve's folded objective are settled with
    the purchase fixed. Searching every plan of equal cost for them instead needs a
    proof over the whole optimal face, which measured 6-26 s per stage on 10x30x10
    instances whose cost was proven in 0.5-4 s; with the purchase fixed it is a small
    search. Money ties between different purchases are rare with real prices; ties
    between parallelism variants, slot assignments and rack fills of one purchase are
    the common ones, and those are settled exactly.
    """
    fixed: list[tuple[Expr, int]] = []
    fixed += [(v, int(solver.value(v))) for v in built.servers.values()]
    fixed += [(v, int(solver.value(v))) for v in built.used.values()]
    fixed += [(p.total, int(solver.value(p.total))) for p in built.packing.values()]
    return fixed


def _bound(raw: float, maximise: bool) -> int:
    """CP-SAT reports the bound as a float; all coefficients are integral, so the true
    bound on an integer objective rounds inwards."""
    return math.floor(raw + 1e-6) if maximise else math.ceil(raw - 1e-6)


def _values(built: Built, solver: cp_model.CpSolver) -> dict[int, int]:
    return {var.index: int(solver.value(var)) for var in built.all_vars()}


def relative_gap(solution: Solution) -> float | None:
    """|objective - bound| / max(1, |objective|), CP-SAT's own definition of the gap."""
    if solution.objective_value is None or solution.best_bound is None:
        return None
    diff = abs(solution.objective_value - solution.best_bound)
    return diff / max(1, abs(solution.objective_value))
