"""The schedule's CP-SAT model: each period built as a single plan, linked over time.

Each period p is its own `ir.Instance` (the candidates stage run on the period's demand,
catalogue and length). Its choices, servers in service n[k@s,p] (day and night sharing,
N+1 spares), site use, exact rack packing, compute fabric and shared storage, energy,
bandwidth and rentals come from the single plan's own builders (`model.py`, `packing.py`,
`fabric.py`, `costs.py`), so a period is priced as a single plan of the same inputs is.
The periods are linked by what is bought, contracted and owned:

* buy[k@s,q]: servers of SKU k bought for site s at the start of period q at that period's
  price (`PhasedInstance.price`); one works from `works_from[k][q]` on (its lead time):
  delivered within q, it works in q and its workloads rent until delivery (`switching.py`).
  In service: n[k@s,p] <= kept[k@s] + the purchases working by p. An owned server out of
  service is powered off (no energy) and needs no rack of its own: contracts only grow, so
  one that served earlier keeps its rack, one bought ahead of need waits in storage.
* The inventory (`stock.py`): kept[k@s] <= the servers owned at the start, moved[k,s->t]
  to another site at their move cost, the rest sold at their
  resale price (a credit apart from the TCO) or left idle; owned servers are used before
  any of the same model is bought (a Bool full[k@s], as `inventory.py`). Racks already
  contracted (c racks paid for m months) hold servers while the paid term runs; past it,
  renewed[s] <= c of them are renewed at the offer's rent for the months after m.
* Racks: beyond the contract, more[s,p] racks for servers and switch_racks[s,p] for
  switches alone, each non-decreasing (a contract runs to the horizon's end, or its
  minimum term when longer), each rack paid for those months from the period it starts
  in; every period's packing and fabric fit what is held then, within the offer's racks.
* The network and storage: what a period's fabric and storage cost is what has been spent
  on them by then (non-decreasing spend; a period pays the difference).
* A site is live from its first use to the horizon: it pays its set-up fee once and its
  included bandwidth every month from then on.
* A workload moved to another platform or site between periods pays its switching cost
  (`switching.py`).
* Budgets: capex in total and per fiscal year, spend other than purchases (monthly), and
  capex + that spend (total), each a named requirement.

The objective is the TCO over the horizon (capex less each purchase cohort's residual
value at the horizon, rack rent, set-up fees and bandwidth, energy, rentals, moves) less the
resale credit, plus soft-rule penalties (each period carries its share by months of a
penalty stated for the whole plan): the single plan's min-TCO objective. A schedule of one
period is the single plan of the same inputs, to the yuan.

`Mode` restricts the purchases for the baselines a buyer would otherwise take: "buy-now"
buys only in the first period, "rent" buys nothing; `fixed` buys exactly that fleet in
the first period. In explain mode (`lits`: requirement name -> literal) every requirement
holds only while its literal is true (`relax.py`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from gpusolve.models.periods import Period, fiscal_year
from gpusolve.optimize import finance
from gpusolve.optimize.builder import Builder, BuildOptions, CloudVar, Expr, OwnedVar, Var, wsum
from gpusolve.optimize.builder import Mode as BuildMode
from gpusolve.optimize.costs import bandwidth_by_duty, cloud_spend, owned_rent, server_energy
from gpusolve.optimize.fabric import FabricModel, add_fabric
from gpusolve.optimize.ir import CloudOption, Instance, OwnedOption, Site, Sku
from gpusolve.optimize.model import choice_vars, server_vars, site_used
from gpusolve.optimize.packing import SitePacking, add_packing
from gpusolve.optimize.phased import relax
from gpusolve.optimize.phased.ir import Mode, PhasedInstance
from gpusolve.optimize.phased.stock import add_stock
from gpusolve.optimize.phased.switching import add_bridges, add_switching
from gpusolve.optimize.prune import usable_cloud, usable_owned
from gpusolve.optimize.stages import expr_range, var_bounds

# The rack-fill patterns the whole schedule may enumerate, as a single plan may for one
# period (`BuildOptions.pattern_limit`): each period gets its share, at least
# `MIN_PATTERNS`; a site with more fills than that is packed rack by rack.
PATTERN_BUDGET = 2000
MIN_PATTERNS = 50
Bounds = list[tuple[int, int]]  # (lowest, highest) of each variable, by proto index
PARTS = ("capex", "residual", "rack_rent", "site_fixed", "energy", "cloud", "switching")


@dataclass
class PeriodModel:
    """One period's single-plan families in the shared model."""

    owned: list[OwnedVar]
    cloud: list[CloudVar]
    servers: dict[tuple[str, str], Var]  # in service per (sku, site)
    servers_ub: dict[tuple[str, str], int]
    used: dict[str, Var]  # something placed at the site in this period
    packing: dict[str, SitePacking]
    net: FabricModel


@dataclass
class PhasedVars:
    buy: dict[tuple[str, str, int], Var]  # (sku, site, period bought)
    working: dict[tuple[str, str, int], Var]  # (sku, site, period) -> servers in service
    racks: dict[tuple[str, int], Any]  # (site, period) -> racks held (servers and switches)
    floor: dict[str, int]  # site -> racks already contracted (their paid term is sunk)
    used: dict[tuple[str, int], Var]  # (site, period) -> the site is live
    owned: dict[tuple[int, str, str], Var]  # (period, option key, site)
    cloud: dict[tuple[int, str], Var]
    periods: list[PeriodModel] = field(default_factory=list)
    kept: dict[tuple[str, str], Var] = field(default_factory=dict)  # owned servers kept
    moved: dict[tuple[str, str, str], Var] = field(default_factory=dict)  # (sku, from, to)


class _PeriodBuilder(Builder):
    """The single plan's builder over the shared model; in explain mode it knows only the
    schedule's requirement literals, so a constraint of a requirement the schedule does not
    name stays hard."""

    def __init__(
        self,
        instance: Instance,
        model: cp_model.CpModel,
        lits: relax.Lits | None,
        pattern_limit: int,
    ):
        mode: BuildMode = "normal" if lits is None else "explain"
        # Per-rack bins where patterns explode: exact in one solve (no lazy cuts here).
        options = BuildOptions(mode=mode, fallback="bins", pattern_limit=pattern_limit)
        super().__init__(instance, options, model)
        self.literals = lits if lits is not None else {}

    def literal(self, name: str) -> Var | None:
        return None if self.mode == "normal" else self.literals.get(name)


def _union(pi: PhasedInstance) -> tuple[dict[str, Sku], dict[str, Site]]:
    skus = {k: v for inst in reversed(pi.instances) for k, v in inst.skus.items()}
    sites = {k: v for inst in reversed(pi.instances) for k, v in inst.sites.items()}
    return skus, sites


def _buyable(pi: PhasedInstance, sku: Sku, q: int, mode: Mode) -> bool:
    if mode == "rent" or (mode == "buy-now" and q > 0) or not sku.buyable:
        return False
    prices = pi.price.get(sku.id)
    works = pi.works_from.get(sku.id)
    return prices is not None and prices[q] is not None and works is not None


def _share(penalty: int, period: Period, horizon_months: int) -> int:
    """A soft-rule penalty is stated for a whole plan (the horizon): a period carries its
    share by months, so a choice held all along costs what it costs in the single plan."""
    return round(penalty * period.months / horizon_months)


def pay_months(pi: PhasedInstance, site: Site, period: Period) -> int:
    """Months a rack contracted from `period` on is paid: to the horizon, or the offer's
    minimum term when that is longer."""
    term = max(site.rent_months, pi.min_term_months.get(site.id, 0))
    return finance.rent_months(pi.horizon_months - period.start_month, term)


def _usable(
    inst: Instance, b: _PeriodBuilder, lits: relax.Lits | None
) -> tuple[list[OwnedOption], list[CloudOption]]:
    """The period's options as the single model takes them; in explain mode only those
    whose violations the schedule names."""
    owned = usable_owned(inst, b.mode, b.relax, True)
    cloud = usable_cloud(inst, b.mode, b.relax, True)
    if lits is None:
        return list(owned), list(cloud)
    kept = []
    for o in owned:
        placements = tuple(p for p in o.placements if relax.allowed(p.violates, lits))
        if placements and relax.allowed(o.violates, lits):
            kept.append(o if len(placements) == len(o.placements) else _with(o, placements))
    return kept, [c for c in cloud if relax.allowed(c.violates, lits)]


def _with(o: OwnedOption, placements: tuple[Any, ...]) -> OwnedOption:
    from dataclasses import replace

    return replace(o, placements=placements)


def _period(
    m: cp_model.CpModel, inst: Instance, p: int, lits: relax.Lits | None, pattern_limit: int
) -> PeriodModel:
    """Period p as a single plan: choices, servers in service, site use, exact packing,
    fabric and storage. The choices' exactly-one is the schedule's (demand relaxable)."""
    b = _PeriodBuilder(inst, m, lits, pattern_limit)
    owned_opts, cloud_opts = _usable(inst, b, lits)
    owned, cloud = choice_vars(b, owned_opts, cloud_opts)
    per: dict[str, list[Var]] = {w: [] for w in inst.workloads}
    for o in owned:
        per[o.option.workload].append(o.var)
    for c in cloud:
        per[c.option.workload].append(c.var)
    for name, choices in per.items():
        demand = lits.get(f"demand:{name}:{p}") if lits is not None else None
        if demand is None:
            m.add_exactly_one(choices)  # no option: infeasible, honestly
        else:
            m.add(cp_model.LinearExpr.sum(choices) == demand)
    servers, servers_ub = server_vars(b, owned)
    used = site_used(b, owned)
    packing = add_packing(b, owned, servers, servers_ub, used, len(owned) + len(cloud))
    racks_at = {site: pack.total for site, pack in packing.items()}
    net = add_fabric(m, inst, owned, servers, racks_at)
    return PeriodModel(owned, cloud, servers, servers_ub, used, packing, net)


def build_model(
    pi: PhasedInstance,
    mode: Mode,
    lits: relax.Lits | None = None,
    model: cp_model.CpModel | None = None,
    fixed: dict[tuple[str, str], int] | None = None,
) -> tuple[cp_model.CpModel, PhasedVars, dict[str, Any]]:
    """The schedule's model and its cost parts per period (`capex:<p>`, ...,
    `penalties:<p>`, `resale`); no objective is set. Raises ValueError when a period's
    instance is not as long as its period (a bug upstream: its money would be wrong)."""
    for period, inst in zip(pi.periods, pi.instances, strict=True):
        if inst.horizon_months != period.months:
            raise ValueError(
                f"period {period.index} lasts {period.months} months, its instance "
                f"{inst.horizon_months}"
            )
    m = cp_model.CpModel() if model is None else model
    limit = max(MIN_PATTERNS, PATTERN_BUDGET // max(1, len(pi.instances)))
    periods = [_period(m, inst, p, lits, limit) for p, inst in enumerate(pi.instances)]
    v = PhasedVars({}, {}, {}, {}, {}, {}, {}, periods)
    for p, pm in enumerate(periods):
        v.owned.update({(p, o.option.key, o.placement.site): o.var for o in pm.owned})
        v.cloud.update({(p, c.option.key): c.var for c in pm.cloud})
        v.working.update({(k, s, p): n for (k, s), n in pm.servers.items()})
    exprs: dict[str, Any] = {}
    # The periods' variables' domains, read once (each read crosses into C++).
    bounds = var_bounds(m)
    _servers_over_time(m, pi, v, mode, lits, fixed, exprs)
    _sites_over_time(m, pi, v, lits, exprs, bounds)
    if pi.periods:
        exprs["rack_rent:0"] = exprs["rack_rent:0"] + exprs.pop("moves")
    _network_over_time(m, v, exprs, bounds)
    _running_costs(m, pi, v, exprs)
    add_switching(m, pi, v.periods, exprs)
    add_bridges(m, pi, v.periods, exprs)
    _budgets(m, pi, exprs, lits)
    return m, v, exprs


def _servers_over_time(
    m: cp_model.CpModel,
    pi: PhasedInstance,
    v: PhasedVars,
    mode: Mode,
    lits: relax.Lits | None,
    fixed: dict[tuple[str, str], int] | None,
    exprs: dict[str, Any],
) -> None:
    """Purchases, the inventory kept or sold, and servers in service within what is
    owned in each period; capex, residual and resale per period."""
    skus, _ = _union(pi)
    stock = {(s.sku, s.site): s for s in (pi.instances[0].stock if pi.instances else ())}
    need: dict[tuple[str, str], int] = defaultdict(int)  # most in service in any period
    for pm in v.periods:
        for key, ub in pm.servers_ub.items():
            need[key] = max(need[key], ub)
    for key, count in (fixed or {}).items():  # a fleet decided elsewhere may hold more
        need[key] = max(need[key], count)
    n_periods = len(pi.periods)
    for (k, s), top in sorted(need.items()):
        sku = skus.get(k)
        for q in range(n_periods):
            if sku is not None and _buyable(pi, sku, q, mode):
                x = m.new_int_var(0, top, f"buy[{k}@{s},{q}]")
                v.buy[k, s, q] = x
                if q < pi.available_period.get(k, 0):
                    relax.guard(m.add(x == 0), lits, f"available:{k}")
        bought = [x for (k2, s2, _), x in v.buy.items() if (k2, s2) == (k, s)]
        if bought:
            m.add(sum(bought) <= top)
    if fixed is not None:
        for (k, s, q), x in v.buy.items():
            m.add(x == (fixed.get((k, s), 0) if q == 0 else 0))
    owned_at, v.moved = add_stock(m, stock, need, v.buy, v.kept, exprs)
    for (k, s, p), n in v.working.items():
        arrived = [
            x
            for (k2, s2, q), x in v.buy.items()
            if (k2, s2) == (k, s) and (w := pi.works_from[k][q]) is not None and w <= p
        ]
        early = relax.early(m, pi.works_from.get(k, ()), v.buy, (k, s), p, lits, need[k, s])
        owned_here = owned_at.get((k, s), 0)
        m.add(n <= owned_here + sum(arrived) + early)
    for p in range(n_periods):
        here = [(k, q, x) for (k, _s, q), x in v.buy.items() if q == p]
        exprs[f"capex:{p}"] = wsum([(_price(pi, k, q), x) for k, q, x in here])
        exprs[f"residual:{p}"] = wsum([(_residual(pi, k, q), x) for k, q, x in here])


def _price(pi: PhasedInstance, sku: str, q: int) -> int:
    price = pi.price[sku][q]
    assert price is not None  # only buyable periods have variables
    return price


def _residual(pi: PhasedInstance, sku: str, q: int) -> int:
    return pi.residual.get(sku, (0,) * len(pi.periods))[q]


def _sites_over_time(
    m: cp_model.CpModel,
    pi: PhasedInstance,
    v: PhasedVars,
    lits: relax.Lits | None,
    exprs: dict[str, Any],
    bounds: Bounds,
) -> None:
    """Racks held per site and period (contract, more for servers, switch-only), the site
    live from its first use; rent, set-up fees and included bandwidth per period."""
    _, sites = _union(pi)
    contracts = pi.instances[0].contracts if pi.instances else {}
    n_periods = len(pi.periods)
    rent: list[list[Any]] = [[] for _ in range(n_periods)]
    fixed: list[list[Any]] = [[] for _ in range(n_periods)]
    here = sorted({s for pm in v.periods for s in pm.packing})
    for s in here:
        site = sites[s]
        contract = contracts.get(s)
        held = min(contract.racks, site.racks_available) if contract is not None else 0
        paid = contract.months_paid if contract is not None else 0
        v.floor[s] = held
        top = max(
            pm.packing[s].total_ub + (_upper(bounds, pm.net.racks[s]) if s in pm.net.racks else 0)
            for pm in v.periods
            if s in pm.packing
        )
        renewed = m.new_int_var(0, held, f"renewed[{s}]")
        if held and paid < pi.horizon_months:
            renewal_period = next(
                p for p, period in enumerate(pi.periods) if period.end_month > paid
            )
            rent[renewal_period].append((pi.horizon_months - paid) * site.rack_rent_month * renewed)
        before: tuple[Any, Any, Any] = (0, 0, 0)  # more racks, switch racks, live
        for p, (period, pm) in enumerate(zip(pi.periods, v.periods, strict=True)):
            more = m.new_int_var(0, top, f"racks[{s},{p}]")
            switch = m.new_int_var(0, top, f"switch_racks[{s},{p}]")
            live = m.new_bool_var(f"live[{s},{p}]")
            for now, then in zip((more, switch, live), before, strict=True):
                m.add(now >= then)
            contracted = held if period.end_month <= paid else renewed
            pack = pm.packing.get(s)
            if pack is not None:
                m.add(pack.total <= contracted + more)
                m.add(live >= pm.used[s])
            if s in pm.net.racks:
                m.add(pm.net.racks[s] <= switch)
            m.add(more + switch <= top * live)
            racks = contracted + more + switch
            relax.guard(m.add(racks <= site.racks_available), lits, f"racks:{s}")
            months = pay_months(pi, site, period)
            rent[p].append(site.rack_rent_month * months * (more + switch - before[0] - before[1]))
            fixed[p].append(site.setup_fee * (live - before[2]))
            fixed[p].append(site.bandwidth_month * period.months * live)
            v.racks[s, p] = racks
            v.used[s, p] = live
            before = (more, switch, live)
    for p in range(n_periods):
        exprs[f"rack_rent:{p}"] = sum(rent[p])
        exprs[f"site_fixed:{p}"] = sum(fixed[p])


def _network_over_time(
    m: cp_model.CpModel, v: PhasedVars, exprs: dict[str, Any], bounds: Bounds
) -> None:
    """What has been spent on the network and storage by each period covers that period's
    fabric and storage; a period pays what it adds (part of its capex)."""
    spent_before: Any = 0
    bound = 0
    for p, pm in enumerate(v.periods):
        cost = pm.net.network + pm.net.storage
        bound += _upper(bounds, cost)
        spent = m.new_int_var(0, max(bound, 0), f"network_spent[{p}]")
        m.add(spent >= cost)
        m.add(spent >= spent_before)
        exprs[f"network:{p}"] = spent - spent_before
        exprs[f"capex:{p}"] = exprs[f"capex:{p}"] + exprs[f"network:{p}"]
        spent_before = spent


def _upper(bounds: Bounds, expr: Expr) -> int:
    """The largest value a linear expression of the periods' variables can take."""
    return expr_range(expr, bounds)[1]


def _running_costs(
    m: cp_model.CpModel, pi: PhasedInstance, v: PhasedVars, exprs: dict[str, Any]
) -> None:
    """Per period as the single plan prices it over the period's months: energy, bandwidth
    beyond what is included, rentals; soft-rule penalties by the period's share."""
    for p, (period, pm, inst) in enumerate(zip(pi.periods, v.periods, pi.instances, strict=True)):
        b = Builder(inst, BuildOptions(), m)
        exprs[f"energy:{p}"] = server_energy(inst, pm.servers, pm.owned)
        exprs[f"site_fixed:{p}"] = exprs[f"site_fixed:{p}"] + bandwidth_by_duty(
            b, pm.owned, pm.used
        )
        exprs[f"cloud:{p}"] = cloud_spend(pm.cloud) + owned_rent(pm.owned, bridged=False)
        h = pi.horizon_months
        exprs[f"penalties:{p}"] = wsum(
            [
                (
                    _share(
                        o.option.penalty + o.option.burst_penalty + o.placement.penalty, period, h
                    ),
                    o.var,
                )
                for o in pm.owned
            ]
            + [(_share(c.option.penalty, period, h), c.var) for c in pm.cloud]
        )


def _budgets(
    m: cp_model.CpModel, pi: PhasedInstance, exprs: dict[str, Any], lits: relax.Lits | None
) -> None:
    n_periods = len(pi.periods)
    capex = [exprs[f"capex:{p}"] for p in range(n_periods)]
    if pi.capex_max is not None:
        relax.guard(m.add(sum(capex) <= pi.capex_max), lits, "capex")
    for year, limit in enumerate(pi.capex_by_year):
        in_year = [
            c
            for c, period in zip(capex, pi.periods, strict=True)
            if fiscal_year(period.start_month) == year
        ]
        if in_year:
            relax.guard(m.add(sum(in_year) <= limit), lits, f"capex_year:{year}")
    opex = sum(exprs[f"{part}:{p}"] for p in range(n_periods) for part in PARTS[2:])
    if pi.monthly_max is not None:
        relax.guard(m.add(opex <= pi.horizon_months * pi.monthly_max), lits, "monthly")
    if pi.total_max is not None:
        relax.guard(m.add(sum(capex) + opex <= pi.total_max), lits, "total")


def tco_expr(exprs: dict[str, Any], n_periods: int) -> Any:
    # A new sum, never `+=`: in-place addition would change the parts' own expressions.
    return sum(
        (-1 if part == "residual" else 1) * exprs[f"{part}:{p}"]
        for p in range(n_periods)
        for part in PARTS
    )


def objective(exprs: dict[str, Any], n_periods: int) -> tuple[Any, Any, Any]:
    """(TCO, penalties, resale): the single plan's min-TCO objective is TCO + penalties
    less the resale credit."""
    penalties = sum(exprs[f"penalties:{p}"] for p in range(n_periods))
    return tco_expr(exprs, n_periods), penalties, exprs["resale"]
