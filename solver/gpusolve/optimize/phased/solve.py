"""Solve the schedule's model (`model.py`) and read the answer into a `PhasedSolution`.

One solve of the whole schedule, minimising TCO + penalties less the resale credit (the
single plan's min-TCO objective). The model is a MILP; neither CP-SAT nor HiGHS is the
faster on every schedule (CP-SAT on the shipped example, HiGHS on the market-sized ones, the
gap growing with the periods: benchmarks/README.md, "Procurement over time"), so by default
the two race (`milp/race.py`: side by side for HiGHS's quick budget, then HiGHS only where
CP-SAT did not prove), the winner decided by the work each has done rather than by which
finished first; HiGHS (`milp/`: the CP-SAT model translated from its
proto, the answer checked by CP-SAT) or CP-SAT alone on request, and CP-SAT wherever HiGHS
leaves the answer to it. The limits do not depend on the machine's load: CP-SAT's
deterministic time or HiGHS's limit checks (`SolveConfig.work_limit`), a fixed thread count
and seed, so that the same inputs give the same schedule and status on an idle or a loaded
machine; the wall clock (`time_limit_s`) only as an outer bound. Explaining an infeasible
schedule stays with CP-SAT (`explain.py`: assumptions).

`no_dearer` returns the cheaper baseline's schedule when the free search stops at its
limit with nothing cheaper, so the schedule is never dearer than a baseline (the
baselines are schedules of the free model too: buying only in the first period, or
nothing).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ortools.sat.python import cp_model

from gpusolve.models.periods import fiscal_year
from gpusolve.optimize import interrupt
from gpusolve.optimize.cpsat import STATUS, integral_bound
from gpusolve.optimize.ir import Instance, SolveConfig, Status
from gpusolve.optimize.patterns import fits_site
from gpusolve.optimize.phased.ir import (
    Mode,
    PeriodChoice,
    PeriodCosts,
    PeriodPlan,
    PhasedInstance,
    PhasedSolution,
)
from gpusolve.optimize.phased.model import PARTS, PhasedVars, build_model, objective
from gpusolve.optimize.readout import fabric_counts

# Constraints an analysis adds to the model before the solve (top-k's cuts, why-not's force).
Restrict = Callable[[cp_model.CpModel, PhasedVars], None]
# Called with each better schedule's (objective, bound) as the search finds it.
Found = Callable[[int, int], None]


def solver_for(config: SolveConfig) -> cp_model.CpSolver:
    """CP-SAT set up for the schedule: the limits above, Ctrl-C / SIGTERM stops it."""
    solver = cp_model.CpSolver()
    params = solver.parameters
    params.max_time_in_seconds = config.time_limit_s
    if config.work_limit is not None:
        params.max_deterministic_time = config.work_limit
    params.num_workers = max(1, config.workers)
    params.random_seed = config.seed
    params.relative_gap_limit = config.relative_gap
    # The schedule is a MILP (linear rows, exactly-one choices): with the LP relaxation of
    # every constraint, branching on the LP's fractional values, one worker proves what the
    # default search leaves at a gap; probing at the root costs more than it prunes here
    # (benchmarks/README.md, "Procurement over time").
    params.linearization_level = 2
    params.search_branching = cp_model.LP_SEARCH
    params.cp_model_probing_level = 0
    interrupt.watch(solver)
    return solver


class _Progress(cp_model.CpSolverSolutionCallback):
    def __init__(self, found: Found) -> None:
        super().__init__()
        self.found = found

    def on_solution_callback(self) -> None:
        self.found(int(self.objective_value), int(self.best_objective_bound))


def solve_phased(
    pi: PhasedInstance,
    config: SolveConfig,
    mode: Mode = "free",
    restrict: Restrict | None = None,
    fixed: dict[tuple[str, str], int] | None = None,
    found: Found | None = None,
    hint: PhasedSolution | None = None,
) -> PhasedSolution:
    """The cheapest schedule (TCO + penalties - resale) over the periods, or an honest
    status; with `fixed`, the cheapest one that buys exactly that fleet (sku, site) in the
    first period; `hint`, a schedule to start the search from (its choices and purchases)."""
    start = time.perf_counter()
    unbuyable = _unbuyable(pi, fixed or {})
    if unbuyable:
        reason = f"{unbuyable} cannot be bought in the first period here"
        return PhasedSolution("infeasible", mode, wall_s=time.perf_counter() - start, reason=reason)
    missing = [
        (inst, w) for inst in pi.instances for w in inst.workloads if not _has_option(inst, w)
    ]
    if missing:
        p = pi.instances.index(missing[0][0])
        reason = f"workload {missing[0][1]!r} has no option in period {p}"
        return PhasedSolution("infeasible", mode, wall_s=time.perf_counter() - start, reason=reason)
    m, v, exprs = build_model(pi, mode, fixed=fixed)
    if restrict is not None:
        restrict(m, v)
    if hint is not None:
        _hint(m, v, hint)
    n_periods = len(pi.periods)
    tco, penalties, resale = objective(exprs, n_periods)
    goal = tco + penalties - resale
    m.minimize(goal)
    built = time.perf_counter()
    search = _search(m, config, found)
    wall = time.perf_counter() - start
    searched = PhasedSolution(
        search.status,
        mode,
        wall_s=wall,
        work=search.work,
        solver=search.solver,
        search_s=wall - (built - start),
    )
    values = search.values
    if search.status not in ("optimal", "feasible") or values is None:
        tight = search.status == "infeasible" and restrict is None
        why = _budget_reason(pi, config, mode, fixed) if tight else None
        bound = search.bound if search.status == "unknown" else None
        return replace(searched, best_bound=bound, reason=why)
    plans = tuple(_read_period(pi, v, exprs, values, p) for p in range(n_periods))
    by_year: dict[int, int] = defaultdict(int)
    for plan in plans:
        by_year[fiscal_year(plan.period.start_month)] += plan.costs.capex
    return replace(
        searched,
        periods=plans,
        objective_value=int(values.value(goal)),
        best_bound=search.bound,
        tco=int(values.value(tco)),
        penalties=int(values.value(penalties)),
        resale=int(values.value(resale)),
        capex_by_year=dict(sorted(by_year.items())),
    )


@dataclass(frozen=True)
class _Searched:
    status: Status
    values: cp_model.CpSolver | None  # reads the solution's values (None: none found)
    bound: int | None
    work: float
    solver: str


def _search(m: cp_model.CpModel, config: SolveConfig, found: Found | None) -> _Searched:
    """CP-SAT and HiGHS raced (`milp/race.py`), HiGHS or CP-SAT alone, as the config asks;
    CP-SAT alone where the model is not a MILP."""
    from gpusolve.optimize.milp.translate import NotMilp, translate

    if config.schedule_solver != "cp-sat":
        try:
            milp = translate(m.proto)
        except NotMilp:
            milp = None
        if milp is not None and config.schedule_solver == "race":
            from gpusolve.optimize.milp.race import race

            r = race(m, milp, solver_for(config), config, found)
            return _Searched(r.status, r.values, r.bound, r.work, r.solver)
        if milp is not None:
            from gpusolve.optimize.milp.solve import solve_with_highs

            outcome = solve_with_highs(m, config, found, milp)
            if outcome is not None:
                o = outcome
                return _Searched(o.status, o.values, o.bound, o.work, "HiGHS")
    solver = solver_for(config)
    status = STATUS[solver.solve(m, _Progress(found) if found is not None else None)]
    work = solver.response_proto.deterministic_time
    bound = _bound(solver) if status in ("optimal", "feasible", "unknown") else None
    values = solver if status in ("optimal", "feasible") else None
    return _Searched(status, values, bound, work, "CP-SAT")


def held_to(s: PhasedSolution) -> Restrict:
    """A restriction to schedule `s`'s choices in every period and its purchases: the same
    schedule priced again (a sensitivity probe's reference)."""

    def restrict(m: cp_model.CpModel, v: PhasedVars) -> None:
        chosen = {(pp.period.index, c.option, c.site) for pp in s.periods for c in pp.choices}
        for (p, key, site), x in v.owned.items():
            m.add(x == int((p, key, site) in chosen))
        for (p, key), y in v.cloud.items():
            m.add(y == int((p, key, None) in chosen))
        for at, x in v.buy.items():
            m.add(x == _bought(s).get(at, 0))

    return restrict


def _bought(s: PhasedSolution) -> dict[tuple[str, str, int], int]:
    return {(k, site, pp.period.index): n for pp in s.periods for (k, site), n in pp.bought.items()}


def _hint(m: cp_model.CpModel, v: PhasedVars, s: PhasedSolution) -> None:
    """Start from schedule `s`: its choices in every period and its purchases."""
    chosen = {(pp.period.index, c.option, c.site) for pp in s.periods for c in pp.choices}
    for (p, key, site), x in v.owned.items():
        m.add_hint(x, (p, key, site) in chosen)
    for (p, key), y in v.cloud.items():
        m.add_hint(y, (p, key, None) in chosen)
    bought = {
        (k, site, pp.period.index): n for pp in s.periods for (k, site), n in pp.bought.items()
    }
    for at, x in v.buy.items():
        m.add_hint(x, bought.get(at, 0))


def _bound(solver: cp_model.CpSolver) -> int | None:
    raw = solver.best_objective_bound
    return integral_bound(raw, maximise=False) if abs(raw) < 2**62 else None


def no_dearer(free: PhasedSolution, baselines: list[PhasedSolution]) -> PhasedSolution:
    """The free schedule, or the cheapest baseline's as a free schedule ("feasible", with the
    free search's bound) when that search stopped at its limit with nothing cheaper."""
    found = [b for b in baselines if b.objective_value is not None]
    if free.status in ("optimal", "infeasible", "model_invalid") or not found:
        return free
    best = min(found, key=lambda b: b.objective_value or 0)
    if free.objective_value is not None and free.objective_value <= (best.objective_value or 0):
        return free
    return replace(
        best,
        mode="free",
        status="feasible",
        best_bound=free.best_bound,
        wall_s=free.wall_s,
        search_s=free.search_s,
    )


def _unbuyable(pi: PhasedInstance, fixed: dict[tuple[str, str], int]) -> str | None:
    """The first server of a fixed fleet the model cannot buy at month 0 (not sold yet,
    not at that site), named; None when all can be."""
    skus = {k: v for inst in pi.instances for k, v in inst.skus.items()}
    sites = {k: v for inst in pi.instances for k, v in inst.sites.items()}
    for (k, s), n in sorted(fixed.items()):
        ok = k in skus and s in sites and skus[k].buyable and fits_site(skus[k], sites[s])
        prices = pi.price.get(k)
        if n > 0 and not (ok and prices is not None and prices[0] is not None):
            return f"{n} x {k} @ {s}"
    return None


def _budget_reason(
    pi: PhasedInstance,
    config: SolveConfig,
    mode: Mode,
    fixed: dict[tuple[str, str], int] | None = None,
) -> str | None:
    """Why no schedule exists, when the capex budgets are the cause: the same schedule
    without them exists (else the periods' demand cannot be met in time at all: no rental
    and no server working yet, or not enough racks)."""
    if pi.capex_max is None and not pi.capex_by_year:
        return None
    free = replace(pi, capex_max=None, capex_by_year=())
    unbounded = solve_phased(free, config, mode, fixed=fixed)
    if unbounded.status not in ("optimal", "feasible"):
        return None
    spent = ", ".join(f"year {y}: {c:,}" for y, c in unbounded.capex_by_year.items())
    return f"the capex budgets are too tight: without them the cheapest schedule spends {spent}"


def _has_option(inst: Instance, workload: str) -> bool:
    return any(o.workload == workload and not o.violates for o in inst.owned) or any(
        c.workload == workload and not c.violates for c in inst.cloud
    )


def _read_period(
    pi: PhasedInstance,
    v: PhasedVars,
    exprs: dict[str, Any],
    solver: cp_model.CpSolver,
    p: int,
) -> PeriodPlan:
    inst = pi.instances[p]
    bought = {
        (k, s): n for (k, s, q), x in v.buy.items() if q == p and (n := int(solver.value(x))) > 0
    }
    working = {
        (k, s): n
        for (k, s, q), w in v.working.items()
        if q == p and (n := int(solver.value(w))) > 0
    }
    racks = {s: n for (s, q), r in v.racks.items() if q == p and (n := int(solver.value(r))) > 0}
    owned_by_key = {o.key: o for o in inst.owned}
    cloud_by_key = {c.key: c for c in inst.cloud}
    choices: list[PeriodChoice] = []
    for (q, key, site), x in v.owned.items():
        if q == p and solver.value(x):
            o = owned_by_key[key]
            pl = next(pl for pl in o.placements if pl.site == site)
            choices.append(
                PeriodChoice(
                    o.workload,
                    key,
                    o.sku,
                    site,
                    o.servers,
                    pl.busy_energy,
                    share_permille=o.share_permille,
                )
            )
    for (q, key), y in v.cloud.items():
        if q == p and solver.value(y):
            c = cloud_by_key[key]
            choices.append(
                PeriodChoice(c.workload, key, None, None, c.instances, c.cost_total, c.offer)
            )
    choices.sort(key=lambda c: c.workload)
    bursts = tuple(
        PeriodChoice(
            c.workload, b.key, None, None, b.instances, b.cost_total, b.offer, b.share_permille
        )
        for c in choices
        if c.sku is not None and (b := owned_by_key[c.option].burst) is not None
    )
    parts = {part: int(solver.value(exprs[f"{part}:{p}"])) for part in PARTS}
    network = int(solver.value(exprs[f"network:{p}"]))
    resale = int(solver.value(exprs["resale"])) if p == 0 else 0
    costs = PeriodCosts(**parts, network=network, resale=resale)
    pm = v.periods[p]
    server_racks = {
        s: n for s, pack in pm.packing.items() if (n := int(solver.value(pack.total))) > 0
    }
    storage = {
        key: n for key, var in pm.net.storage_nodes.items() if (n := int(solver.value(var))) > 0
    }
    return PeriodPlan(
        pi.periods[p],
        bought,
        working,
        racks,
        tuple(choices),
        costs,
        server_racks,
        fabric_counts(pm.net.fabric, solver),
        storage,
        bursts,
    )


def schedule_model(pi: PhasedInstance, mode: Mode = "free") -> cp_model.CpModel:
    """The schedule's CP-SAT model with its objective, as `solve_phased` solves it: for
    the benchmarks, which hand the same model to HiGHS and CBC."""
    m, _v, exprs = build_model(pi, mode)
    tco, penalties, resale = objective(exprs, len(pi.periods))
    m.minimize(tco + penalties - resale)
    return m
