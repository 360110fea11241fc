"""Procurement over time: one exact CP-SAT model of purchases, racks and rentals per period.

Each period is its own `ir.Instance` (the candidates stage run on the period's demand,
catalogue and length: its options, their servers per workload, its rentals and busy energy
priced over the period). One model holds them all:

* purchases `buy[k, s, q]`: servers of SKU k bought for site s at the start of period q, at
  that period's price (`PhasedInstance.price`, the catalogue's price trend applied); a
  purchase works from `works_from[k][q]` on (its lead time), and with the stock (the
  inventory) is the servers working at s in every later period;
* per period, one choice per running workload among that period's options (an owned
  option at one of its placements, or a rental); the owned choices of a (SKU, site) use,
  slot by slot (day and night share servers as in the single plan), no more servers than
  work there in that period;
* racks per site `racks[s, p]`, non-decreasing (a contract runs to the horizon's end, or its
  minimum term when longer), at least the racks already contracted, at most the offer's;
  the racks are a simpler model than the single plan's exact packing: the servers working
  at a site fit the racks by total power, total rack units and whole servers per rack
  (each SKU's share of a rack is 1 / the servers of it one rack holds alone): exact for
  one SKU per site, a lower bound on the exact packing's racks for a mix;
* capex per fiscal year within `capex_by_year`, total capex within `capex_max`.

The objective is the TCO over the horizon (capex less each purchase cohort's residual value
at the horizon, rack rent, site setup and bandwidth, idle energy of the servers working,
busy energy and rentals of the choices) plus soft-rule penalties (each period carries its
share by months of a penalty stated for the whole plan). Not modelled here (the
single plan has them): compute-fabric switches, shared storage, bandwidth beyond a site's
included Mbps, N+1 spares, selling owned servers; objectives other than min-tco.

`Mode` restricts the purchases for the baselines a buyer would otherwise take, solved by
this same model: "buy-now" buys only in the first period, "rent" buys nothing. A `fixed`
fleet (with "buy-now") is a purchase decided elsewhere (the single-period plan's), priced
here like for like: exactly those servers bought in the first period, nothing later. The
baselines' schedules are schedules of the free model too (buying only in the first period, or
nothing): `no_dearer` returns the cheaper baseline's when the free search stops at its time
limit with nothing cheaper, so the schedule is never dearer than a baseline. (A CP-SAT hint
from a baseline did the same but slowed the proofs, 5 s to 30 s on the shipped example.)
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ortools.sat.python import cp_model

from gpusolve.models.periods import Period, fiscal_year
from gpusolve.optimize import interrupt
from gpusolve.optimize import phased_relax as relax
from gpusolve.optimize.cpsat import STATUS, integral_bound
from gpusolve.optimize.ir import SLOTS_COVERED, Instance, Site, Sku, SolveConfig, Stock
from gpusolve.optimize.patterns import fits_site
from gpusolve.optimize.phased_ir import (
    Mode,
    PeriodChoice,
    PeriodCosts,
    PeriodPlan,
    PhasedInstance,
    PhasedSolution,
)

SLOTS = ("day", "night")


@dataclass
class PhasedVars:
    buy: dict[tuple[str, str, int], cp_model.IntVar]
    working: dict[tuple[str, str, int], Any]
    racks: dict[tuple[str, int], cp_model.IntVar]
    floor: dict[str, int]  # site -> racks already contracted (paid apart, never priced here)
    used: dict[tuple[str, int], cp_model.IntVar]
    owned: dict[tuple[int, str, str], cp_model.IntVar]  # (period, option key, site)
    cloud: dict[tuple[int, str], cp_model.IntVar]


# --------------------------------------------------------------------------- build


def _skus_sites(pi: PhasedInstance) -> tuple[dict, dict]:  # type: ignore[type-arg]
    skus = {k: v for inst in reversed(pi.instances) for k, v in inst.skus.items()}
    sites = {k: v for inst in reversed(pi.instances) for k, v in inst.sites.items()}
    return skus, sites


def _stock(pi: PhasedInstance) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = defaultdict(int)
    stock: tuple[Stock, ...] = pi.instances[0].stock if pi.instances else ()
    for s in stock:
        out[s.sku, s.site] += s.count
    return out


def _buyable(pi: PhasedInstance, sku: str, q: int, mode: Mode) -> bool:
    if mode == "rent" or (mode == "buy-now" and q > 0):
        return False
    prices = pi.price.get(sku)
    works = pi.works_from.get(sku)
    return (
        prices is not None and prices[q] is not None and works is not None and works[q] is not None
    )


def _share(penalty: int, period: Period, horizon_months: int) -> int:
    """A soft-rule penalty is stated for a whole plan (the horizon): a period carries its
    share by months, so a choice held all along costs what it costs in the single plan."""
    return round(penalty * period.months / horizon_months)


def _per_rack(sku: Sku, site: Site) -> int:
    """Servers of one SKU a rack of the site holds alone, by power and by rack units."""
    return max(1, min(site.rack_w // sku.power_w, site.rack_units // sku.rack_units))


def _rack_pay_months(pi: PhasedInstance, site: str, period: Period) -> int:
    """Months a rack contracted from `period` on is paid: to the horizon, or the offer's
    minimum term when that is longer."""
    return max(pi.horizon_months - period.start_month, pi.min_term_months.get(site, 0))


def build_model(
    pi: PhasedInstance,
    mode: Mode,
    lits: relax.Lits | None = None,
    model: cp_model.CpModel | None = None,
    fixed: dict[tuple[str, str], int] | None = None,
) -> tuple[cp_model.CpModel, PhasedVars, dict[str, Any]]:
    """The phased model; in explain mode (`lits`: requirement name -> literal of `model`)
    every requirement holds only while its literal is true; with `fixed`, exactly that
    fleet (sku, site) is bought, in the first period."""
    m = cp_model.CpModel() if model is None else model
    skus, sites = _skus_sites(pi)
    stock = _stock(pi)
    n_periods = len(pi.periods)
    pairs = [(k, s) for k in skus for s in sites if fits_site(skus[k], sites[s])]
    pairs += [pair for pair in stock if pair not in pairs]
    rack_max = {s: relax.rack_bound(pi.instances, site, lits) for s, site in sites.items()}
    cap = {s: rack_max[s] * max(1, sites[s].rack_units) for s in sites}
    buy: dict[tuple[str, str, int], cp_model.IntVar] = {}
    for k, s in pairs:
        for q in range(n_periods):
            if _buyable(pi, k, q, mode) and skus[k].buyable and fits_site(skus[k], sites[s]):
                buy[k, s, q] = m.new_int_var(0, cap[s], f"buy[{k},{s},{q}]")
                if q < pi.available_period.get(k, 0):
                    relax.guard(m.add(buy[k, s, q] == 0), lits, f"available:{k}")
    if fixed is not None:
        for (k, s, q), x in buy.items():
            m.add(x == (fixed.get((k, s), 0) if q == 0 else 0))
    working: dict[tuple[str, str, int], Any] = {}
    for k, s in pairs:
        for p in range(n_periods):
            arrived = [
                v
                for (k2, s2, q), v in buy.items()
                if (k2, s2) == (k, s) and (w := pi.works_from[k][q]) is not None and w <= p
            ]
            working[k, s, p] = (
                stock.get((k, s), 0)
                + sum(arrived)
                + relax.early(m, pi.works_from.get(k, ()), buy, (k, s), p, lits, cap[s])
            )
    racks: dict[tuple[str, int], cp_model.IntVar] = {}
    used: dict[tuple[str, int], cp_model.IntVar] = {}
    contracts = pi.instances[0].contracts if pi.instances else {}
    floors: dict[str, int] = {}
    for s, site in sites.items():
        floor = min(contracts[s].racks, site.racks_available) if s in contracts else 0
        floors[s] = floor
        for p in range(n_periods):
            r = m.new_int_var(floor, max(floor, rack_max[s]), f"racks[{s},{p}]")
            u = m.new_bool_var(f"used[{s},{p}]")
            m.add(r <= max(floor, rack_max[s]) * u)
            if rack_max[s] > site.racks_available:
                relax.guard(m.add(r <= max(floor, site.racks_available)), lits, f"racks:{s}")
            if p > 0:
                m.add(r >= racks[s, p - 1])
                m.add(u >= used[s, p - 1])
            racks[s, p], used[s, p] = r, u
            here = [(k, working[k, s, p]) for k in skus if (k, s, p) in working]
            m.add(sum(skus[k].power_w * w for k, w in here) <= site.rack_w * r)
            m.add(sum(skus[k].rack_units * w for k, w in here) <= site.rack_units * r)
            # Whole servers per rack: exact for one SKU at a site, a bound for a mix.
            per_rack = {k: _per_rack(skus[k], site) for k, _ in here}
            scale = math.lcm(*per_rack.values()) if per_rack else 1
            m.add(sum(scale // per_rack[k] * w for k, w in here) <= scale * r)
    owned: dict[tuple[int, str, str], cp_model.IntVar] = {}
    cloud: dict[tuple[int, str], cp_model.IntVar] = {}
    for p, inst in enumerate(pi.instances):
        per_workload: dict[str, list[cp_model.IntVar]] = defaultdict(list)
        use: dict[tuple[str, str, str], list[tuple[int, cp_model.IntVar]]] = defaultdict(list)
        for o in inst.owned:
            if not relax.allowed(o.violates, lits):
                continue
            for pl in o.placements:
                if not relax.allowed(pl.violates, lits) or (o.sku, pl.site, p) not in working:
                    continue
                x = m.new_bool_var(f"x[{p},{o.key},{pl.site}]")
                relax.violating(m, x, o.violates | pl.violates, lits)
                owned[p, o.key, pl.site] = x
                per_workload[o.workload].append(x)
                for slot in SLOTS_COVERED[o.slot]:
                    use[o.sku, pl.site, slot].append((o.servers, x))
        for c in inst.cloud:
            if not relax.allowed(c.violates, lits):
                continue
            y = m.new_bool_var(f"y[{p},{c.key}]")
            relax.violating(m, y, c.violates, lits)
            cloud[p, c.key] = y
            per_workload[c.workload].append(y)
        for name in inst.workloads:
            demand = lits.get(f"demand:{name}:{p}") if lits is not None else None
            if demand is None:
                m.add_exactly_one(per_workload[name])  # no option: infeasible, honestly
            else:
                m.add(cp_model.LinearExpr.sum(per_workload[name]) == demand)
        for (k, s, _slot), terms in use.items():
            m.add(sum(n * x for n, x in terms) <= working[k, s, p])
    v = PhasedVars(buy, working, racks, floors, used, owned, cloud)
    _budgets(m, pi, v, lits)
    return m, v, _cost_exprs(pi, v, skus, sites)


def _capex_terms(pi: PhasedInstance, v: PhasedVars) -> list[tuple[int, cp_model.IntVar, int]]:
    out = []
    for (k, _s, q), x in v.buy.items():
        price = pi.price[k][q]
        assert price is not None  # only buyable periods have variables
        out.append((q, x, price))
    return out


def _budgets(
    m: cp_model.CpModel, pi: PhasedInstance, v: PhasedVars, lits: relax.Lits | None
) -> None:
    terms = _capex_terms(pi, v)
    if pi.capex_max is not None:
        relax.guard(m.add(sum(price * x for _, x, price in terms) <= pi.capex_max), lits, "capex")
    for year, limit in enumerate(pi.capex_by_year):
        in_year = [
            price * x for q, x, price in terms if fiscal_year(pi.periods[q].start_month) == year
        ]
        if in_year:
            relax.guard(m.add(sum(in_year) <= limit), lits, f"capex_year:{year}")


def _cost_exprs(
    pi: PhasedInstance,
    v: PhasedVars,
    skus: dict[str, Sku],
    sites: dict[str, Site],
) -> dict[str, Any]:
    """The objective's parts as expressions, per period: `capex:p`, `residual:p`, ...,
    and `penalties`."""
    exprs: dict[str, Any] = {}
    n_periods = len(pi.periods)
    for p, period in enumerate(pi.periods):
        inst = pi.instances[p]
        exprs[f"capex:{p}"] = sum(price * x for q, x, price in _capex_terms(pi, v) if q == p)
        exprs[f"residual:{p}"] = sum(
            pi.residual.get(k, (0,) * n_periods)[q] * x for (k, _s, q), x in v.buy.items() if q == p
        )
        rent: Any = 0
        fixed: Any = 0
        for s, site in sites.items():
            before = v.racks[s, p - 1] if p > 0 else v.floor[s]
            rent += (
                site.rack_rent_month * _rack_pay_months(pi, s, period) * (v.racks[s, p] - before)
            )
            fixed += site.bandwidth_month * period.months * v.used[s, p]
            if p == 0:
                fixed += site.setup_fee * v.used[s, n_periods - 1]
        exprs[f"rack_rent:{p}"] = rent
        exprs[f"site_fixed:{p}"] = fixed
        idle = sum(
            sites[s].energy_month.get(k, 0) * period.months * w
            for (k, s, q), w in v.working.items()
            if q == p
        )
        owned_by_key = {o.key: o for o in inst.owned}
        busy: Any = 0
        penalties: Any = 0
        for (q, key, site_id), x in v.owned.items():
            if q != p:
                continue
            o = owned_by_key[key]
            pl = next(pl for pl in o.placements if pl.site == site_id)
            busy += pl.busy_energy * x
            penalties += _share(o.penalty + pl.penalty, period, pi.horizon_months) * x
        exprs[f"energy:{p}"] = idle + busy
        cloud_by_key = {c.key: c for c in inst.cloud}
        exprs[f"cloud:{p}"] = sum(
            cloud_by_key[key].cost_total * y for (q, key), y in v.cloud.items() if q == p
        )
        penalties += sum(
            _share(cloud_by_key[key].penalty, period, pi.horizon_months) * y
            for (q, key), y in v.cloud.items()
            if q == p
        )
        exprs[f"penalties:{p}"] = penalties
    return exprs


PARTS = ("capex", "residual", "rack_rent", "site_fixed", "energy", "cloud")


def _tco(exprs: dict[str, Any], n_periods: int) -> Any:
    # A new sum, never `+=`: in-place addition would change the parts' own expressions.
    return sum(
        (-1 if part == "residual" else 1) * exprs[f"{part}:{p}"]
        for p in range(n_periods)
        for part in PARTS
    )


def _objective(exprs: dict[str, Any], n_periods: int) -> tuple[Any, Any]:
    """(TCO, penalties) over the periods: the objective is their sum."""
    return _tco(exprs, n_periods), sum(exprs[f"penalties:{p}"] for p in range(n_periods))


# --------------------------------------------------------------------------- solve


# Constraints an analysis adds to the model before the solve (top-k's cuts, why-not's force).
Restrict = Callable[[cp_model.CpModel, "PhasedVars"], None]


def solve_phased(
    pi: PhasedInstance,
    config: SolveConfig,
    mode: Mode = "free",
    restrict: Restrict | None = None,
    fixed: dict[tuple[str, str], int] | None = None,
) -> PhasedSolution:
    """The cheapest schedule (TCO + penalties) over the periods, or an honest status; with
    `fixed`, the cheapest one that buys exactly that fleet (sku, site) in the first period."""
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
    n_periods = len(pi.periods)
    tco, penalties = _objective(exprs, n_periods)
    objective = tco + penalties
    m.minimize(objective)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = config.time_limit_s
    solver.parameters.num_workers = max(1, config.workers)
    solver.parameters.random_seed = config.seed
    solver.parameters.relative_gap_limit = config.relative_gap
    # The schedule is a MILP (linear rows, exactly-one choices): with the LP relaxation of
    # every constraint, one worker proves what the default level leaves at a gap
    # (benchmarks/README.md, "Procurement over time").
    solver.parameters.linearization_level = 2
    interrupt.watch(solver)  # Ctrl-C / SIGTERM stops this search at once
    status = STATUS[solver.solve(m)]
    wall = time.perf_counter() - start
    if status not in ("optimal", "feasible"):
        tight = status == "infeasible" and restrict is None
        why = _budget_reason(pi, config, mode, fixed) if tight else None
        return PhasedSolution(status, mode, wall_s=time.perf_counter() - start, reason=why)
    value = int(solver.value(objective))
    bound = integral_bound(solver.best_objective_bound, maximise=False)
    plans = tuple(_read_period(pi, v, exprs, solver, p) for p in range(n_periods))
    by_year: dict[int, int] = defaultdict(int)
    for plan in plans:
        by_year[fiscal_year(plan.period.start_month)] += plan.costs.capex
    return PhasedSolution(
        status,
        mode,
        plans,
        objective_value=value,
        best_bound=bound,
        tco=int(solver.value(tco)),
        penalties=int(solver.value(penalties)),
        capex_by_year=dict(sorted(by_year.items())),
        wall_s=wall,
    )


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
        best, mode="free", status="feasible", best_bound=free.best_bound, wall_s=free.wall_s
    )


def _unbuyable(pi: PhasedInstance, fixed: dict[tuple[str, str], int]) -> str | None:
    """The first server of a fixed fleet the model cannot buy at month 0 (not sold yet,
    not at that site), named; None when all can be."""
    skus, sites = _skus_sites(pi)
    for (k, s), n in sorted(fixed.items()):
        ok = k in skus and s in sites and skus[k].buyable and fits_site(skus[k], sites[s])
        if n > 0 and not (ok and _buyable(pi, k, 0, "buy-now")):
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
            choices.append(PeriodChoice(o.workload, key, o.sku, site, o.servers, pl.busy_energy))
    for (q, key), y in v.cloud.items():
        if q == p and solver.value(y):
            c = cloud_by_key[key]
            choices.append(
                PeriodChoice(c.workload, key, None, None, c.instances, c.cost_total, c.offer)
            )
    choices.sort(key=lambda c: c.workload)
    costs = PeriodCosts(*(int(solver.value(exprs[f"{part}:{p}"])) for part in PARTS))
    return PeriodPlan(pi.periods[p], bought, working, racks, tuple(choices), costs)


def schedule_model(pi: PhasedInstance, mode: Mode = "free") -> cp_model.CpModel:
    """The schedule's CP-SAT model with its objective (TCO + penalties), as `solve_phased`
    solves it: for the benchmarks, which hand the same model to HiGHS and CBC."""
    m, _v, exprs = build_model(pi, mode)
    tco, penalties = _objective(exprs, len(pi.periods))
    m.minimize(tco + penalties)
    return m
