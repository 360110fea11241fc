"""Solve a built model lexicographically and read the answer into an `ir.Solution`.

Stages, each on a fresh `clone()` of the objective-free base model:

1. the primary objective, exact (integer coefficients only; a float objective would make
   CP-SAT optimise a floating-point objective that can misreport OPTIMAL, or-tools#3639);
2. for objectives other than min-tco, the total cost of ownership (plus penalties) at the
   stage-1 optimum: a budget-constrained throughput plan should not waste money, and a
   min-capex plan should not pick the dearer of two equal-capex plans;
3. a tie-break at the optimum of the earlier stages: fewer racks, then more memory
   headroom, then fewer servers, then a deterministic rank (input order of options and
   fills), folded into one integer objective with ranges that keep the order exact.
   Ties left after that are rare and only affect which of two equal plans is shown.

Each later stage is hinted with the previous stage's complete solution, so it starts from
an incumbent that is already optimal for the earlier criteria. The reported objective and
bound are stage 1's; the status is stage 1's (later stages only choose among its optima).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model
from ortools.sat.python import cp_model_helper as cmh

from gpusolve.optimize.ir import (
    Choice,
    Costs,
    Instance,
    Solution,
    SolveConfig,
    Status,
)
from gpusolve.optimize.model import BuildOptions, Built, Expr, build
from gpusolve.optimize.patterns import Shape

Prepare = Callable[[cp_model.CpModel], None]
# The tie-break folds several integer criteria into one objective; keep the folded
# coefficients well inside int64 so CP-SAT never reports a possible overflow.
_FOLD_LIMIT = 2**52
# Share of the time limit any single stage after the first may take.
_LATER_STAGE_SHARE = 0.25
RackFill = tuple[tuple[str, int], ...]

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


def expr_range(expr: Expr) -> tuple[int, int]:
    """Bounds of a linear expression from its variables' domains."""
    flat = cmh.FlatIntExpr(expr)
    lo = hi = flat.offset
    for var, coef in zip(flat.vars, flat.coeffs, strict=True):
        # list() first: the pybind repeated field silently answers 0 to domain[-1].
        domain = list(var.proto.domain)
        a, b = coef * domain[0], coef * domain[-1]
        lo += min(a, b)
        hi += max(a, b)
    return lo, hi


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
    return [Criterion(n, e, m, *expr_range(e)) for n, e, m in items]


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
        self.deadline = start + config.time_limit_s
        # Earlier stages' optima, kept as one-sided bounds: `cost <= C*` says the same as
        # `cost == C*` at an optimum but propagates far better than a long equality.
        self.fixed: list[tuple[Criterion, int]] = []

    def remaining(self) -> float:
        return self.deadline - time.perf_counter()

    def run(
        self, objective: Expr, hint: dict[int, int], gap: float, time_s: float
    ) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus]:
        model = self.built.model.clone()
        if self.prepare is not None:
            self.prepare(model)
        for item, value in self.fixed:
            model.add(item.expr >= value if item.maximise else item.expr <= value)
        model.minimize(objective)
        assert not model.proto.has_floating_point_objective()
        if hint:
            for var in self.built.all_vars():
                if var.index in hint:
                    model.add_hint(var, hint[var.index])
        solver = cp_model.CpSolver()
        params = solver.parameters
        params.num_workers = self.config.workers
        params.random_seed = self.config.seed
        params.max_time_in_seconds = max(time_s, 0.001)
        params.relative_gap_limit = gap
        status = solver.solve(model)
        return solver, status


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
    objective, weights = fold(first)
    solver, status = stages.run(objective, hint or {}, config.relative_gap, stages.remaining())
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        wall = time.perf_counter() - start
        return Outcome(Solution(status=_STATUS[status], wall_s=wall), {})
    head = first[0]
    value = int(solver.value(head.expr))
    # The folded objective's bound bounds the leading criterion: the rest of the fold is
    # worth less than one unit of it.
    lead = int(_bound(solver.best_objective_bound, False)) // weights[0]
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
            solver2, status2 = stages.run(objective, _values(built, best), 0.0, budget)
            if status2 not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                break
            best = solver2
            stages.fixed += [(item, int(solver2.value(item.expr))) for item in later]
    wall = time.perf_counter() - start
    solution = read_solution(built, best, _STATUS[status], value, bound, wall)
    return Outcome(solution, _values(built, best))


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


# --------------------------------------------------------------------------- reading


def read_solution(
    built: Built,
    solver: cp_model.CpSolver,
    status: Status,
    objective: int,
    bound: int,
    wall: float,
) -> Solution:
    choices = _choices(built, solver)
    servers = {key: int(solver.value(v)) for key, v in built.servers.items()}
    servers = {k: v for k, v in servers.items() if v > 0}
    racks = _racks(built, solver, servers)
    costs = Costs(
        capex=solver.value(built.capex),
        rack_rent=solver.value(built.rent),
        energy=solver.value(built.energy),
        bandwidth=solver.value(built.bandwidth),
        cloud=solver.value(built.cloud_cost),
        penalties=solver.value(built.penalties),
    )
    solution = Solution(
        status=status,
        choices=choices,
        servers=servers,
        racks=racks,
        costs=costs,
        objective_value=objective,
        best_bound=bound,
        wall_s=wall,
    )
    return _with_binding(solution, binding(built.instance, solution, _skus_in_model(built)))


def _with_binding(solution: Solution, names: tuple[str, ...]) -> Solution:
    return Solution(
        status=solution.status,
        choices=solution.choices,
        servers=solution.servers,
        racks=solution.racks,
        costs=solution.costs,
        objective_value=solution.objective_value,
        best_bound=solution.best_bound,
        wall_s=solution.wall_s,
        binding=names,
    )


def _choices(built: Built, solver: cp_model.CpSolver) -> tuple[Choice, ...]:
    picked: dict[str, Choice] = {}
    for o in built.owned:
        if solver.boolean_value(o.var):
            picked[o.option.workload] = Choice(o.option.workload, o.option.key, o.placement.site)
    for c in built.cloud:
        if solver.boolean_value(c.var):
            picked[c.option.workload] = Choice(c.option.workload, c.option.key, None)
    return tuple(picked[w] for w in built.instance.workloads if w in picked)


def _racks(
    built: Built, solver: cp_model.CpSolver, servers: dict[tuple[str, str], int]
) -> dict[tuple[str, RackFill], int]:
    """Racks per site as actual fills (SKU counts per rack), grouped.

    The model counts racks per slot pattern over shapes; here each shape's servers are
    dealt into that shape's slots rack by rack, in a fixed order, so the report says which
    SKUs share a rack. A slot pattern can leave slots empty, so a fill may hold less than
    its pattern; an unneeded rack shows as an empty fill (never in an optimal plan with a
    positive rent, since rent is charged per rack).
    """
    out: dict[tuple[str, RackFill], int] = {}
    for site_id, pack in built.packing.items():
        slot_vectors: list[tuple[int, ...]] = []
        for fill, var in zip(pack.patterns.fills, pack.pattern_racks, strict=True):
            slot_vectors += [fill] * int(solver.value(var))
        for rack in pack.bins:
            if solver.boolean_value(rack.open):
                slot_vectors.append(tuple(int(solver.value(c)) for c in rack.counts))
        for rack_fill in deal(slot_vectors, pack.patterns.members, site_id, servers):
            key = (site_id, rack_fill)
            out[key] = out.get(key, 0) + 1
    return out


def deal(
    slot_vectors: Sequence[tuple[int, ...]],
    members: Sequence[tuple[str, ...]],
    site: str,
    servers: dict[tuple[str, str], int],
) -> list[RackFill]:
    """Deal each shape's servers (SKUs in id order) into the racks' slots of that shape."""
    left = {(k, site): servers.get((k, site), 0) for group in members for k in group}
    fills: list[RackFill] = []
    for slots in slot_vectors:
        rack: dict[str, int] = defaultdict(int)
        for h, free in enumerate(slots):
            for sku in members[h]:
                take = min(free, left[(sku, site)])
                if take:
                    rack[sku] += take
                    left[(sku, site)] -= take
                    free -= take
        fills.append(tuple(sorted(rack.items())))
    return fills


# --------------------------------------------------------------------------- binding


def _skus_in_model(built: Built) -> dict[str, set[str]]:
    at: dict[str, set[str]] = defaultdict(set)
    for o in built.owned:
        at[o.placement.site].add(o.option.sku)
    return at


def binding(
    instance: Instance, solution: Solution, skus_at: dict[str, set[str]] | None = None
) -> tuple[str, ...]:
    """Requirements and capacities that are tight in a plan.

    Money is integral, so "at the cap" means the slack cannot buy the smallest further
    step (one more server of the cheapest SKU for capex; one more rack-month, server's
    energy, site's bandwidth or cloud rental for the monthly cap, over the horizon).
    Racks bind when every available rack at a site is taken; rack power (space) binds
    when some rack has room for another server of a SKU used at that site by space
    (power) and cooling, but not by power (space). Deadlines are the caller's to judge.
    """
    if solution.costs is None:
        return ()
    names: list[str] = []
    costs = solution.costs
    h = instance.horizon_months
    if instance.capex_max is not None:
        step = min((s.capex for s in instance.skus.values() if s.capex > 0), default=1)
        if instance.capex_max - costs.capex < step:
            names.append("capex")
    if instance.monthly_max is not None:
        opex = costs.rack_rent + costs.energy + costs.bandwidth + costs.cloud
        if h * instance.monthly_max - opex < _monthly_step(instance):
            names.append("monthly")
    racks_at: dict[str, int] = defaultdict(int)
    for (site, _), count in solution.racks.items():
        racks_at[site] += count
    for site_id in sorted(racks_at):
        if racks_at[site_id] >= instance.sites[site_id].racks_available:
            names.append(f"racks:{site_id}")
    used_skus = skus_at if skus_at is not None else _skus_in_solution(solution)
    for site_id in sorted(racks_at):
        names += _rack_limits(instance, solution, site_id, used_skus.get(site_id, set()))
    return tuple(names)


def _monthly_step(instance: Instance) -> int:
    h = instance.horizon_months
    steps = [c.cost_total for c in instance.cloud]
    for site in instance.sites.values():
        steps += [h * site.rack_rent_month, h * site.bandwidth_month]
        steps += [h * e for e in site.energy_month.values()]
    return min((s for s in steps if s > 0), default=1)


def _skus_in_solution(solution: Solution) -> dict[str, set[str]]:
    at: dict[str, set[str]] = defaultdict(set)
    for sku, site in solution.servers:
        at[site].add(sku)
    return at


def _rack_limits(instance: Instance, solution: Solution, site_id: str, skus: set[str]) -> list[str]:
    site = instance.sites[site_id]
    candidates = [
        Shape(s.power_w, s.rack_units)
        for k in sorted(skus)
        if site.cooling in (s := instance.skus[k]).cooling
    ]
    power_bound = space_bound = False
    for (sid, fill), _count in solution.racks.items():
        if sid != site_id or not fill:
            continue
        power = sum(instance.skus[k].power_w * c for k, c in fill)
        units = sum(instance.skus[k].rack_units * c for k, c in fill)
        for shape in candidates:
            fits_u = units + shape.rack_units <= site.rack_units
            fits_w = power + shape.power_w <= site.rack_w
            power_bound |= fits_u and not fits_w
            space_bound |= fits_w and not fits_u
    out = []
    if power_bound:
        out.append(f"rack_power:{site_id}")
    if space_bound:
        out.append(f"rack_space:{site_id}")
    return out
