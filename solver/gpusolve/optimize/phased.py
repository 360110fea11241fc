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
this same model: "buy-now" buys only in the first period, "rent" buys nothing. The free
model's search may start from the buy-now schedule (`warm`, a CP-SAT hint): it is one of the
free model's schedules, so the free schedule is never dearer than it.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ortools.sat.python import cp_model

from gpusolve.models.periods import Period, fiscal_year
from gpusolve.optimize import interrupt
from gpusolve.optimize.cpsat import STATUS, integral_bound
from gpusolve.optimize.ir import SLOTS_COVERED, Instance, Site, Sku, SolveConfig, Status, Stock
from gpusolve.optimize.patterns import fits_site

Mode = Literal["free", "buy-now", "rent"]
SLOTS = ("day", "night")


@dataclass(frozen=True)
class PhasedInstance:
    periods: tuple[Period, ...]
    instances: tuple[Instance, ...]  # one per period: the workloads running in it
    # sku -> price per server bought at the start of each period; None: cannot be bought then
    price: dict[str, tuple[int | None, ...]]
    # sku -> first period a server bought in each period works in (None: after the horizon)
    works_from: dict[str, tuple[int | None, ...]]
    horizon_months: int
    # sku -> value at the horizon per server bought in each period (0 when not credited)
    residual: dict[str, tuple[int, ...]] = field(default_factory=dict)
    min_term_months: dict[str, int] = field(default_factory=dict)  # site -> shortest contract
    capex_max: int | None = None
    capex_by_year: tuple[int, ...] = ()


@dataclass(frozen=True)
class PeriodChoice:
    workload: str
    option: str
    sku: str | None  # None for a rental
    site: str | None
    servers: int  # servers it occupies (owned) or instances rented
    cost: int  # rental or busy energy over the period
    offer: str | None = None


@dataclass(frozen=True)
class PeriodCosts:
    capex: int
    residual: int
    rack_rent: int
    site_fixed: int  # setup fees and included bandwidth
    energy: int
    cloud: int

    @property
    def spend(self) -> int:
        """Cash out in the period (residual is a credit at the horizon, not here)."""
        return self.capex + self.rack_rent + self.site_fixed + self.energy + self.cloud


@dataclass(frozen=True)
class PeriodPlan:
    period: Period
    bought: dict[tuple[str, str], int]  # (sku, site) -> servers bought at its start
    working: dict[tuple[str, str], int]  # (sku, site) -> servers working in it
    racks: dict[str, int]  # site -> racks contracted in it
    choices: tuple[PeriodChoice, ...]
    costs: PeriodCosts


@dataclass(frozen=True)
class PhasedSolution:
    status: Status
    mode: Mode = "free"
    periods: tuple[PeriodPlan, ...] = ()
    objective_value: int | None = None  # TCO + penalties
    best_bound: int | None = None
    tco: int | None = None
    penalties: int = 0
    capex_by_year: dict[int, int] = field(default_factory=dict)
    wall_s: float = 0.0
    reason: str | None = None  # why no model was built (a workload with no option)


@dataclass
class _Vars:
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


def _build(pi: PhasedInstance, mode: Mode) -> tuple[cp_model.CpModel, _Vars, dict[str, Any]]:
    m = cp_model.CpModel()
    skus, sites = _skus_sites(pi)
    stock = _stock(pi)
    n_periods = len(pi.periods)
    pairs = [(k, s) for k in skus for s in sites if fits_site(skus[k], sites[s])]
    pairs += [pair for pair in stock if pair not in pairs]
    cap = {s: sites[s].racks_available * max(1, sites[s].rack_units) for s in sites}
    buy: dict[tuple[str, str, int], cp_model.IntVar] = {}
    for k, s in pairs:
        for q in range(n_periods):
            if _buyable(pi, k, q, mode) and skus[k].buyable and fits_site(skus[k], sites[s]):
                buy[k, s, q] = m.new_int_var(0, cap[s], f"buy[{k},{s},{q}]")
    working: dict[tuple[str, str, int], Any] = {}
    for k, s in pairs:
        for p in range(n_periods):
            arrived = [
                v
                for (k2, s2, q), v in buy.items()
                if (k2, s2) == (k, s) and (w := pi.works_from[k][q]) is not None and w <= p
            ]
            working[k, s, p] = stock.get((k, s), 0) + sum(arrived)
    racks: dict[tuple[str, int], cp_model.IntVar] = {}
    used: dict[tuple[str, int], cp_model.IntVar] = {}
    contracts = pi.instances[0].contracts if pi.instances else {}
    floors: dict[str, int] = {}
    for s, site in sites.items():
        floor = min(contracts[s].racks, site.racks_available) if s in contracts else 0
        floors[s] = floor
        for p in range(n_periods):
            r = m.new_int_var(floor, max(floor, site.racks_available), f"racks[{s},{p}]")
            u = m.new_bool_var(f"used[{s},{p}]")
            m.add(r <= max(floor, site.racks_available) * u)
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
            if o.violates:
                continue
            for pl in o.placements:
                if pl.violates or (o.sku, pl.site, p) not in working:
                    continue
                x = m.new_bool_var(f"x[{p},{o.key},{pl.site}]")
                owned[p, o.key, pl.site] = x
                per_workload[o.workload].append(x)
                for slot in SLOTS_COVERED[o.slot]:
                    use[o.sku, pl.site, slot].append((o.servers, x))
        for c in inst.cloud:
            if c.violates:
                continue
            y = m.new_bool_var(f"y[{p},{c.key}]")
            cloud[p, c.key] = y
            per_workload[c.workload].append(y)
        for name in inst.workloads:
            m.add_exactly_one(per_workload[name])  # no option: infeasible, honestly
        for (k, s, _slot), terms in use.items():
            m.add(sum(n * x for n, x in terms) <= working[k, s, p])
    v = _Vars(buy, working, racks, floors, used, owned, cloud)
    _budgets(m, pi, v)
    return m, v, _cost_exprs(pi, v, skus, sites)


def _capex_terms(pi: PhasedInstance, v: _Vars) -> list[tuple[int, cp_model.IntVar, int]]:
    out = []
    for (k, _s, q), x in v.buy.items():
        price = pi.price[k][q]
        assert price is not None  # only buyable periods have variables
        out.append((q, x, price))
    return out


def _budgets(m: cp_model.CpModel, pi: PhasedInstance, v: _Vars) -> None:
    terms = _capex_terms(pi, v)
    if pi.capex_max is not None:
        m.add(sum(price * x for _, x, price in terms) <= pi.capex_max)
    for year, limit in enumerate(pi.capex_by_year):
        in_year = [
            price * x for q, x, price in terms if fiscal_year(pi.periods[q].start_month) == year
        ]
        if in_year:
            m.add(sum(in_year) <= limit)


def _cost_exprs(
    pi: PhasedInstance,
    v: _Vars,
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


# --------------------------------------------------------------------------- solve


def _hint(m: cp_model.CpModel, v: _Vars, warm: PhasedSolution) -> None:
    """Start the search from a schedule already found on the same instance (the buy-now
    baseline's: buying only in the first period is a schedule of the free model too), so a
    search stopped at its time limit never returns a schedule dearer than that one. With
    more servers in the catalogue the free model's own first solutions can be far worse."""
    for (k, s, q), x in v.buy.items():
        m.add_hint(x, warm.periods[q].bought.get((k, s), 0))
    for (s, p), r in v.racks.items():
        m.add_hint(r, warm.periods[p].racks.get(s, 0))
    for (s, p), u in v.used.items():
        m.add_hint(u, int(warm.periods[p].racks.get(s, 0) > 0))
    chosen = {(p, c.option, c.site) for p, plan in enumerate(warm.periods) for c in plan.choices}
    for (p, key, site), x in v.owned.items():
        m.add_hint(x, int((p, key, site) in chosen))
    for (p, key), y in v.cloud.items():
        m.add_hint(y, int((p, key, None) in chosen))


def solve_phased(
    pi: PhasedInstance, config: SolveConfig, mode: Mode = "free", warm: PhasedSolution | None = None
) -> PhasedSolution:
    """The cheapest schedule (TCO + penalties) over the periods, or an honest status."""
    start = time.perf_counter()
    missing = [
        (inst, w) for inst in pi.instances for w in inst.workloads if not _has_option(inst, w)
    ]
    if missing:
        p = pi.instances.index(missing[0][0])
        reason = f"workload {missing[0][1]!r} has no option in period {p}"
        return PhasedSolution("infeasible", mode, wall_s=time.perf_counter() - start, reason=reason)
    m, v, exprs = _build(pi, mode)
    n_periods = len(pi.periods)
    tco = _tco(exprs, n_periods)
    penalties = sum(exprs[f"penalties:{p}"] for p in range(n_periods))
    objective = tco + penalties
    m.minimize(objective)
    if warm is not None and len(warm.periods) == n_periods:
        _hint(m, v, warm)
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
        why = _budget_reason(pi, config, mode) if status == "infeasible" else None
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


def _budget_reason(pi: PhasedInstance, config: SolveConfig, mode: Mode) -> str | None:
    """Why no schedule exists, when the capex budgets are the cause: the same schedule
    without them exists (else the periods' demand cannot be met in time at all: no rental
    and no server working yet, or not enough racks)."""
    if pi.capex_max is None and not pi.capex_by_year:
        return None
    free = replace(pi, capex_max=None, capex_by_year=())
    unbounded = solve_phased(free, config, mode)
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
    v: _Vars,
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
